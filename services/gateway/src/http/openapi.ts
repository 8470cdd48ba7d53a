import * as contracts from '@aex/contracts';
import { ERROR_CODES, Type, type TSchema } from '@aex/contracts';
import { errorResponseComponents, errorResponses, HEADER_COMPONENTS, MUTATING, PARAMETER_COMPONENTS, successHeaders } from './openapi-components.js';
import { OPERATION_EXAMPLES } from './openapi-examples.js';
import type { RouteSpec } from './routes.js';

/**
 * Our schemas' own keywords become `x-` extensions in the document (OpenAPI tools accept only
 * those); TypeBox's symbols are dropped by the JSON round trip.
 */
const OWN_KEYWORDS: Record<string, string> = { maxJsonBytes: 'x-max-json-bytes', plainText: 'x-plain-text' };
const plain = (s: TSchema | undefined): unknown =>
  s === undefined ? undefined : JSON.parse(JSON.stringify(s), function (this: Record<string, unknown>, key, value) {
    if (key in OWN_KEYWORDS && (typeof value === 'number' || typeof value === 'boolean')) {
      this[OWN_KEYWORDS[key]!] = value;
      return undefined;
    }
    return value;
  });
/**
 * The contract schemas the packages export by name become `components.schemas` entries that routes
 * refer to, so a resource is described once (TransactionView, ServiceView…) and generated types
 * carry its name.
 */
const NAMED = new Map<unknown, string>(
  Object.entries(contracts).filter(([name, v]) => /^[A-Z]/.test(name) && typeof v === 'object' && v !== null && 'type' in v).map(([name, v]) => [v, name]),
);

class SchemaRegistry {
  readonly schemas: Record<string, unknown> = {};
  /** A `$ref` to the named schema when the contract names it, else the schema itself. */
  ref(s: TSchema | undefined): unknown {
    if (s === undefined) return undefined;
    const name = NAMED.get(s);
    if (!name) {
      // Arrays of a named item: the array inline, the item referred to.
      const item = (s as { type?: string; items?: TSchema }).type === 'array' ? (s as unknown as { items: TSchema }).items : undefined;
      if (item && NAMED.has(item)) return { ...(plain({ ...s, items: undefined } as unknown as TSchema) as object), items: this.ref(item) };
      return plain(s);
    }
    this.schemas[name] ??= plain(s);
    return { $ref: `#/components/schemas/${name}` };
  }
}

const isAny = (s: TSchema | undefined) => !s || Object.keys(plain(s) as object).length === 0;

const ErrorEntry = Type.Object({
  code: Type.Union(ERROR_CODES.map((c) => Type.Literal(c)), { description: 'UPPER_SNAKE error code (docs/api.md, "Errors")' }),
  message: Type.String({ description: 'One human sentence' }),
  field: Type.Optional(Type.String({ description: 'JSON Pointer into the request, such as /body/name or /query/limit' })),
  details: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Facts about the error: the limit reached, the status found, the signed string read…' })),
});
const Meta = Type.Object({ requestId: Type.String({ format: 'uuid' }), timestamp: Type.String({ format: 'date-time' }) });
const Pagination = Type.Object({ total: Type.Integer({ minimum: 0 }), limit: Type.Integer({ minimum: 1 }), offset: Type.Integer({ minimum: 0 }), hasMore: Type.Boolean() });

/**
 * OpenAPI 3.1 generated from the route table and the very schemas the gateway and the services
 * validate with (packages/contracts), so the document cannot drift from the behaviour. Each route
 * lists the headers it reads, its success and every error status it can answer, with examples.
 */
export function openApiDocument(routes: RouteSpec[], version: string, serverUrl: string): object {
  const paths: Record<string, Record<string, unknown>> = {};
  const registry = new SchemaRegistry();
  for (const r of routes) {
    const path = r.url.replace(/:([A-Za-z]+)/g, '{$1}');
    (paths[path] ??= {})[r.method.toLowerCase()] = routeOperation(r, registry);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent Exchange',
      version,
      description: [
        'A marketplace where software agents buy and sell machine-callable services.',
        '',
        'Every JSON answer is the envelope `{ data, meta: { requestId, timestamp }, errors }` (lists add `pagination`). Agents authenticate with `Authorization: Bearer ae_live_…`. Creating a transaction and delivering one must be signed with the agent\'s Ed25519 key (`X-AE-Signature`, `X-AE-Signature-Timestamp`); see the repository\'s docs/signing.md, also served by every exchange at `/docs/signing.md`. The full reference: docs/api.md (`/docs/api.md`).',
      ].join('\n'),
      license: { name: 'See the repository', url: `${serverUrl}/docs/` },
    },
    servers: [{ url: serverUrl, description: 'This exchange' }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? name })),
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'ae_live_ + 43 base64url characters', description: 'The agent\'s API key, shown once when the agent is created or its key rotated' },
        operatorToken: { type: 'http', scheme: 'bearer', description: 'The deployment\'s ADMIN_TOKEN (operator routes under /admin/v1; 404 when it is not set)' },
      },
      parameters: PARAMETER_COMPONENTS,
      headers: HEADER_COMPONENTS,
      responses: errorResponseComponents(),
      schemas: {
        ...registry.schemas,
        Meta: plain(Meta),
        Pagination: plain(Pagination),
        ErrorEntry: plain(ErrorEntry),
        ErrorEnvelope: { type: 'object', required: ['data', 'meta', 'errors'], properties: { data: { type: 'null' }, meta: { $ref: '#/components/schemas/Meta' }, errors: { type: 'array', minItems: 1, maxItems: 20, items: { $ref: '#/components/schemas/ErrorEntry' } } } },
      },
    },
  };
}

/** The parameters a route reads: its path and query, then the headers it takes. */
function routeParameters(r: RouteSpec): unknown[] {
  const input = r.op?.input.properties as Record<string, TSchema> | undefined;
  const parameters: unknown[] = [];
  for (const [where, part] of [['path', input?.path], ['query', input?.query]] as const) {
    const props = (part as { properties?: Record<string, TSchema> } | undefined)?.properties ?? {};
    const required = new Set((part as { required?: string[] } | undefined)?.required ?? []);
    for (const [name, schema] of Object.entries(props)) {
      const s = plain(schema) as { description?: string };
      parameters.push({ name, in: where, required: where === 'path' || required.has(name), ...(s.description ? { description: s.description } : {}), schema: s });
    }
  }
  const param = (name: keyof typeof PARAMETER_COMPONENTS) => ({ $ref: `#/components/parameters/${name}` });
  parameters.push(param('RequestId'));
  if (r.auth === 'agent') parameters.push(...(r.signature === 'required' ? [param('SignatureRequired'), param('SignatureTimestampRequired')] : [param('Signature'), param('SignatureTimestamp')]));
  if (MUTATING.has(r.method) && r.op && !r.stripeEvent) parameters.push(param('IdempotencyKey'));
  if (r.stripeEvent) parameters.push({ name: 'Stripe-Signature', in: 'header', required: true, description: 'Stripe\'s signature of the exact body, checked with STRIPE_WEBHOOK_SECRET (5-minute tolerance)', schema: { type: 'string' } });
  return parameters;
}

/** A route's operation: its parameters, success and error answers, request body and examples. */
function routeOperation(r: RouteSpec, registry: SchemaRegistry): Record<string, unknown> {
  const input = r.op?.input.properties as Record<string, TSchema> | undefined;
  const parameters = routeParameters(r);

  const operationId = r.op ? `${r.op.name}${r.raw ? 'Raw' : ''}` : r.tag === 'protocol' ? 'getProtocol' : `gateway_${r.tag}`;
  const examples = OPERATION_EXAMPLES[operationId];
  const paginated = r.method === 'GET' && (plain(r.op?.output) as { type?: string } | undefined)?.type === 'array';
  const data = r.raw
    ? registry.ref(r.op?.output)
    : {
        type: 'object',
        required: ['data', 'meta', 'errors'],
        properties: {
          data: registry.ref(r.op?.output ?? r.output ?? Type.Unknown()),
          meta: { $ref: '#/components/schemas/Meta' },
          ...(paginated ? { pagination: { $ref: '#/components/schemas/Pagination' } } : {}),
          errors: { type: 'null' },
        },
      };
  const success = { description: 'Success', headers: successHeaders(r), content: { [r.raw ? `application/${r.raw}` : 'application/json']: { schema: data, ...(examples?.response ? { example: examples.response } : {}) } } };
  const responses: Record<string, unknown> = { [String(r.successStatus)]: success };
  if (r.accepted) responses['202'] = { description: r.op === contracts.transactionOps.createTransaction
    ? 'Accepted: the purchase awaits its owner’s approval (`awaiting_approval`, D10.3), or the saga that holds its price had not answered within SAGA_WAIT_MS; the body shows the current state and webhooks tell the outcome'
    : 'Accepted: the saga that finishes the request had not answered within SAGA_WAIT_MS; the body shows the current state and webhooks tell the outcome', headers: successHeaders(r), content: { 'application/json': { schema: data } } };
  // A write the service took but did not answer: 202, outcome unknown (D5.4). Where the route has a
  // 202 of its own, either body may come (an error envelope says the outcome is unknown).
  if (MUTATING.has(r.method) && r.op?.effect) {
    const own = responses['202'] as { description: string; headers: unknown; content: { 'application/json': { schema: unknown } } } | undefined;
    responses['202'] = own
      ? { description: `${own.description}. Or the outcome is not known yet: an error envelope (IDEMPOTENCY_KEY_IN_USE, details.outcome "unknown") with the Idempotency-Key to repeat the request with`, headers: own.headers, content: { 'application/json': { schema: { oneOf: [own.content['application/json'].schema, { $ref: '#/components/schemas/ErrorEnvelope' }] } } } }
      : { $ref: '#/components/responses/OutcomeUnknown' };
  }
  Object.assign(responses, errorResponses(r));

  const operation: Record<string, unknown> = {
    summary: r.summary.replace(/ \((?:[^()]*\bD\d+(?:\.\d+)?[^()]*)\)$/, ''),
    tags: [r.tag],
    operationId,
    parameters,
    security: r.auth === 'agent' ? [{ apiKey: [] }] : r.auth === 'admin' ? [{ operatorToken: [] }] : [],
    responses,
  };
  if (r.stripeEvent) {
    operation.requestBody = { required: true, content: { 'application/json': { schema: { type: 'object', description: 'A Stripe event, exactly as Stripe sends it (checkout.session.completed, checkout.session.async_payment_succeeded, checkout.session.async_payment_failed, checkout.session.expired)' } } } };
  } else if (r.body && r.op && !isAny(input?.body)) {
    // A body that must name a field (a PATCH) is required even where its absence is read as {} to say so.
    const required = r.body === true || ((input!.body as { minProperties?: number }).minProperties ?? 0) > 0;
    operation.requestBody = { required, content: { 'application/json': { schema: registry.ref(input!.body), ...(examples?.request ? { example: examples.request } : {}) } } };
  }
  if (r.signature === 'required') operation['x-signature-required'] = true;
  return operation;
}

const TAG_DESCRIPTIONS: Record<string, string> = {
  protocol: 'What this exchange is: version, features, limits, fees',
  accounts: 'Accounts and their default delegation rules',
  agents: 'Agents, API keys, signing keys, child agents, trust scores and DID documents',
  services: 'Service contracts, listing and discovery',
  transactions: 'Buying: creation, negotiation, delivery, verification, cancellation',
  approvals: 'Purchases awaiting the account owner’s approval: the inbox, approve, deny (D10.3)',
  disputes: 'Disputes of delivered transactions',
  sessions: 'Prepaid sessions: one hold of a budget for many cheap calls, each reserved from it and settled on a valid delivery (D17.4–D17.7)',
  x402: 'x402 v2 facilitator of the aex-escrow scheme: paying HTTP resources from exchange wallets, escrowed (D19)',
  receipts: 'Signed receipts of ended purchases, and the exchange’s keys that verify them: JWK set and DID document (D18)',
  wallets: 'Wallets, funding, payouts and the ledger',
  webhooks: 'An agent\'s webhook endpoint, secret and deliveries',
  operator: 'The operator API (bearer ADMIN_TOKEN)',
};
