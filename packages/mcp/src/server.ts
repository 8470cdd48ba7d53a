import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode,
  ReadResourceRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { ExchangeClient } from '@agent-exchange/client';
import { schemaChecker, type Profile } from '@aex/agent-kit';
import type { SpendingGuard } from './spending.js';
import { explain, ok, TOOLS, ToolFailure, type Tool, type ToolContext } from './tools.js';

export const SERVER_NAME = 'agent-exchange';
export const SERVER_VERSION = '0.1.0';

/** What one server process holds for every session it serves. */
export interface ExchangeMcpOptions {
  client: ExchangeClient;
  profile: Profile;
  guard: SpendingGuard;
  /** Provider tools are listed only when true. */
  provider: boolean;
  maxWaitMs: number;
  pollMs: number;
}

/**
 * The tools this server lists: spending ones only with a budget (a provider also gets negotiate, for
 * its counter-offers; what a consumer would commit through it still needs the budget), provider ones
 * only as a provider.
 */
export function toolsOf(opts: Pick<ExchangeMcpOptions, 'guard' | 'provider'>): Tool[] {
  return TOOLS.filter((t) => (!t.spending || opts.guard.enabled || (t.alsoForProviders && opts.provider)) && (!t.provider || opts.provider));
}

/**
 * A JSON Schema as plain data: TypeBox's own markers are symbols, and dropped; so is the exchange's
 * own keyword `maxJsonBytes` (a size bound the exchange enforces), which strict validators refuse.
 */
const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema), (k, v: unknown) => (k === 'maxJsonBytes' ? undefined : v)) as { type: 'object'; [k: string]: unknown };

const INSTRUCTIONS = [
  'Tools of an Agent Exchange, acting as one agent: find services (search_services), read their contracts (get_service), buy them with the price held in escrow (buy_service),',
  'wait for the provider\'s delivery (wait_for_delivery), then pay by accepting it (accept_delivery) or open_dispute. Prices are integer cents (USD).',
  'Spending is limited by a per-call cap and a session budget the human set when starting this server; no tool can raise them.',
].join(' ');

/**
 * One MCP server (one per session over HTTP, one per process over stdio) on the official SDK's
 * low-level `Server`: the tools' JSON Schemas are the exchange's own contract schemas, given as they
 * are rather than rewritten in Zod, and every call's arguments are checked against them first.
 */
export function createExchangeMcpServer(opts: ExchangeMcpOptions): Server {
  const tools = toolsOf(opts);
  const byName = new Map(tools.map((t) => [t.name, t]));
  // Arguments are checked as the schemas listed say, formats included, before any tool runs.
  const ajv = schemaChecker();
  const checks = new Map(tools.map((t) => [t.name, ajv.compile(plain(t.input))]));
  const server = new Server(
    { name: SERVER_NAME, title: 'Agent Exchange', version: SERVER_VERSION },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: plain(t.input), outputSchema: plain(t.output), annotations: { title: t.title, ...t.annotations } })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const t = byName.get(request.params.name);
    if (!t) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${request.params.name}; tools/list names the tools of this server.`);
    const args = request.params.arguments ?? {};
    const check = checks.get(t.name)!;
    if (!check(args)) {
      const problems = (check.errors ?? []).slice(0, 10).map((e) => `"${e.instancePath || '/'}" ${e.message ?? 'is not valid'}${e.keyword === 'additionalProperties' ? `: ${String((e.params as { additionalProperty: string }).additionalProperty)}` : ''}`);
      return failure(`The arguments do not match ${t.name}'s input schema:\n${problems.join('\n')}`);
    }
    const token = request.params._meta?.progressToken;
    let step = 0;
    const ctx: ToolContext = {
      client: opts.client,
      profile: opts.profile,
      guard: opts.guard,
      maxWaitMs: opts.maxWaitMs,
      pollMs: opts.pollMs,
      signal: extra.signal,
      progress: async (message) => {
        if (token === undefined) return;
        step += 1;
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: step, message } });
      },
      askHuman: async (message) => {
        if (!server.getClientCapabilities()?.elicitation) return 'unsupported';
        const answer = await server.elicitInput({
          message,
          requestedSchema: { type: 'object', properties: { allow: { type: 'boolean', title: 'Allow', description: 'Allow this one purchase above the cap' } }, required: ['allow'] },
        });
        return answer.action === 'accept' && answer.content?.allow === true ? 'accepted' : 'declined';
      },
    };
    try {
      const data = (await t.run(args as never, ctx)) as Record<string, unknown>;
      return { content: [{ type: 'text', text: JSON.stringify(data, null, 2) }], structuredContent: data };
    } catch (err) {
      if (err instanceof ToolFailure) return failure(err.message);
      // Anything else is this server's fault, said plainly; the session goes on.
      return failure(`The tool failed unexpectedly: ${(err as Error).message}`);
    }
  });

  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      { uriTemplate: 'aex://services/{serviceId}', name: 'service-contract', title: 'Service contract', description: 'A service\'s contract: schemas, pricing, SLA, examples', mimeType: 'application/json' },
      { uriTemplate: 'aex://transactions/{transactionId}', name: 'transaction', title: 'Transaction', description: 'One of this agent\'s transactions as it is now', mimeType: 'application/json' },
    ],
  }));

  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    const recent = await opts.client.listTransactions({ limit: 20 });
    if (!recent.ok) throw new McpError(ErrorCode.InternalError, explain(recent.error));
    return {
      resources: recent.data.map((tx) => ({ uri: `aex://transactions/${tx.id}`, name: `transaction-${tx.id}`, title: `Transaction ${tx.id.slice(0, 8)} (${tx.status})`, mimeType: 'application/json' })),
    };
  });

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    const m = /^aex:\/\/(services|transactions)\/([0-9a-f-]{36})$/i.exec(uri);
    if (!m) throw new McpError(ErrorCode.InvalidParams, `Unknown resource ${uri}: aex://services/{id} and aex://transactions/{id} are served.`);
    try {
      const data = m[1] === 'services' ? ok(await opts.client.getService(m[2]!)) : ok(await opts.client.getTransaction(m[2]!));
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(data, null, 2) }] };
    } catch (err) {
      throw new McpError(ErrorCode.InvalidParams, (err as Error).message);
    }
  });

  return server;
}

function failure(text: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text }] };
}
