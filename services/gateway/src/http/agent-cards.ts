import type { FastifyInstance } from 'fastify';
import { AppError, catalogOps, type ProviderServicesView, type ServiceView } from '@aex/contracts';
import { callOperation, type Bus, type ExchangeConfig, type Logger } from '@aex/platform';
import { takePublic, type RateLimiter } from '../guards/rate-limit.js';
import { SignedCards } from './card-signatures.js';
import { UUID } from './input-hygiene.js';

/** The A2A protocol version the cards are written for. */
const A2A_VERSION = '1.0';

/**
 * The extension every card declares: where the contract of each skill (its JSON Schemas, price and
 * SLA) is carried, and how to buy it. Its URI is the section of the exchange's own docs that
 * defines it.
 */
const extensionUri = (base: string) => `${base}/docs/agent-tools.md#a2a-contract-extension`;

/** D21.2: where a provider agent's services are bought over A2A JSON-RPC. */
export const a2aEndpoint = (base: string, agentId: string) => `${base}/a2a/agents/${agentId}`;

const BEARER = {
  apiKey: {
    httpAuthSecurityScheme: {
      scheme: 'Bearer',
      bearerFormat: 'ae_live_ API key',
      description: 'An agent\'s API key (POST /v1/accounts gives the first one). Creating and delivering transactions are also signed with the agent\'s Ed25519 key: /docs/signing.md.',
    },
  },
};
/** No scopes: an empty list, which A2A's JSON form writes as `{}`. */
const REQUIRES_KEY = [{ schemes: { apiKey: {} } }];

// Cards are written in A2A's JSON form as its codecs write it: fields at their default (false, empty
// strings and lists) are left out.

/** `/.well-known/agent-card.json`: the exchange itself, as an A2A agent card. */
export function exchangeCard(config: ExchangeConfig): Record<string, unknown> {
  const base = config.PUBLIC_BASE_URL;
  return {
    name: 'Agent Exchange',
    description:
      'A marketplace where software agents buy and sell machine-callable services: discovery by need, negotiation, funds held in escrow, schema-checked delivery, ' +
      'settlement minus a platform fee, disputes, trust scores, spending rules and signed webhooks. Agents use its REST API (OpenAPI document linked) or its MCP server.',
    supportedInterfaces: [{ url: `${base}/v1`, protocolBinding: 'AGENT-EXCHANGE-REST', protocolVersion: A2A_VERSION }],
    provider: { organization: 'Agent Exchange', url: base },
    version: config.EXCHANGE_VERSION,
    documentationUrl: `${base}/docs/api.md`,
    capabilities: {
      streaming: false,
      pushNotifications: true,
      extensions: [{
        uri: extensionUri(base),
        description: 'How to reach the exchange: its OpenAPI document, the MCP server agents run, and where providers\' cards are.',
        params: {
          openApiUrl: `${base}/v1/openapi.json`,
          protocolUrl: `${base}/v1/protocol`,
          signingUrl: `${base}/docs/signing.md`,
          providerCardUrlTemplate: `${base}/agents/{agentId}/agent-card.json`,
          a2aUrlTemplate: a2aEndpoint(base, '{agentId}'),
          mcp: { package: '@agent-exchange/mcp', command: 'agent-exchange-mcp', transports: ['stdio', 'streamable-http'], documentationUrl: `${base}/docs/agent-tools.md` },
        },
      }],
    },
    securitySchemes: BEARER,
    securityRequirements: REQUIRES_KEY,
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: [
      skill('discover-services', 'Discover services', 'Finds services by need, in plain words, with price, SLA, trust and compatibility (POST /v1/services/discover).', ['discovery', 'search'], ['count the words in a text under 5 cents']),
      skill('buy-service', 'Buy a service', 'Buys a service with funds held in escrow until the delivery passes the contract and is accepted (POST /v1/transactions, signed; or over A2A JSON-RPC at the provider card\'s interface).', ['purchase', 'escrow'], []),
      skill('sell-service', 'Sell a service', 'Publishes a service contract (JSON Schemas, pricing, SLA) for other agents to buy (POST /v1/services).', ['provider', 'contract'], []),
      skill('negotiate', 'Negotiate a price', 'Offers and counter-offers on a negotiable service (POST /v1/transactions/{id}/negotiate).', ['negotiation'], []),
      skill('dispute', 'Dispute a delivery', 'Disputes a delivery: refund, partial refund, redo or an operator\'s decision (POST /v1/transactions/{id}/dispute).', ['disputes'], []),
    ],
  };
}

function skill(id: string, name: string, description: string, tags: string[], examples: string[]) {
  return { id, name, description, tags, ...(examples.length > 0 ? { examples } : {}), inputModes: ['application/json'], outputModes: ['application/json'] };
}

/** `/agents/{id}/agent-card.json`: a provider agent, each active service a skill with its contract in the extension. */
export function providerCard(config: ExchangeConfig, agentId: string, view: ProviderServicesView & { provider: NonNullable<ProviderServicesView['provider']> }): Record<string, unknown> {
  const base = config.PUBLIC_BASE_URL;
  const { provider, services } = view;
  const names = services.map((s) => s.name);
  return {
    name: provider.name,
    description: services.length === 0
      ? `An agent of the Agent Exchange at ${base}; it offers no service at the moment.`
      : `An agent selling ${services.length === 1 ? 'one service' : `${services.length} services`} on the Agent Exchange at ${base}: ${names.join(', ')}. Bought through the exchange, with funds held in escrow until delivery.`,
    // D21.2: A2A clients buy over JSON-RPC (preferred, so first); the REST API stays beside it.
    supportedInterfaces: [
      { url: a2aEndpoint(base, agentId), protocolBinding: 'JSONRPC', protocolVersion: A2A_VERSION },
      { url: `${base}/v1/transactions`, protocolBinding: 'AGENT-EXCHANGE-REST', protocolVersion: A2A_VERSION },
    ],
    provider: { organization: provider.name, url: `${base}/v1/agents/${agentId}` },
    version: '1.0.0',
    documentationUrl: `${base}/docs/a2a.md`,
    capabilities: {
      streaming: false,
      // The exchange's webhooks (D14) tell the parties of a purchase; A2A push configurations are not taken.
      pushNotifications: false,
      extensions: [{
        uri: extensionUri(base),
        description: 'The contract of each skill (its id is the service id): JSON Schemas of input and output, price in cents, SLA; and how to buy it.',
        params: {
          agentId,
          trustScore: provider.trustScore,
          exchangeCardUrl: `${base}/.well-known/agent-card.json`,
          contracts: Object.fromEntries(services.map((s) => [s.id, contractOf(base, s)])),
        },
      }],
    },
    securitySchemes: BEARER,
    securityRequirements: REQUIRES_KEY,
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: services.map((s) => skill(
      s.id,
      s.name,
      s.description,
      [...new Set([s.category, ...(s.subcategory ? [s.subcategory] : []), ...s.tags])],
      // A2A's skill examples are prompts the skill handles: the provider's sample needs first (D22.5).
      [...s.sampleNeeds, ...(s.examples as Array<{ input: unknown; description?: string }>).map((e) => e.description ?? JSON.stringify(e.input))],
    )),
  };
}

function contractOf(base: string, s: ServiceView) {
  return {
    serviceId: s.id,
    version: s.version,
    inputSchema: s.inputSchema,
    outputSchema: s.outputSchema,
    pricing: s.pricing,
    sla: s.sla,
    examples: s.examples,
    buy: { method: 'POST', url: `${base}/v1/transactions`, body: { serviceId: s.id, input: '…' }, signed: true },
    a2a: { method: 'SendMessage', url: a2aEndpoint(base, s.agentId), data: { serviceId: s.id, input: '…' }, signed: true },
  };
}

const CARD_TYPE = 'application/json; charset=utf-8';

/**
 * Serves the cards, public and limited per client IP like the DID documents, each signed with the
 * receipt key (D21.1). A provider's card is read from the catalog on every request, so it follows
 * the agent's services as they change.
 */
export function serveAgentCards(app: FastifyInstance, limiter: RateLimiter, bus: Bus, config: ExchangeConfig): void {
  const cards = new SignedCards(bus, config);
  const exchange = exchangeCard(config);
  app.get('/.well-known/agent-card.json', async (req, reply) => {
    const headers = await takePublic(limiter, req.ip);
    return reply.headers(headers).type(CARD_TYPE).send(await cards.signed(exchange, req.id, req.log as unknown as Logger));
  });
  app.get('/agents/:agentId/agent-card.json', async (req, reply) => {
    const headers = await takePublic(limiter, req.ip);
    const { agentId } = req.params as { agentId: string };
    if (!UUID.test(agentId)) throw new AppError('VALIDATION_ERROR', '"/path/agentId" must be a UUID.', { field: '/path/agentId' });
    const answer = await callOperation(bus, catalogOps.providerServices, { ctx: { requestId: req.id, principal: null, admin: false }, input: { path: { agentId }, query: {}, body: {} } }, { timeoutMs: config.RPC_TIMEOUT_MS });
    if (!answer.ok) throw AppError.many(answer.errors);
    const view = answer.data;
    if (!view.provider) throw new AppError('NOT_FOUND', 'No such agent.');
    if (view.provider.status !== 'active') throw new AppError('NOT_FOUND', 'No agent card: this agent is not active.');
    const card = providerCard(config, agentId, { ...view, provider: view.provider });
    return reply.headers(headers).type(CARD_TYPE).send(await cards.signed(card, req.id, req.log as unknown as Logger));
  });
}
