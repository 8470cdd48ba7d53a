import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type ServerNotification, type ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ValidateFunction } from 'ajv';
import { schemaChecker } from '@aex/agent-kit';
import type { ExchangeMcpOptions } from './server.js';
import { ToolFailure, type Tool, type ToolContext } from './tools/tool.js';

type CallExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * A JSON Schema as plain data: TypeBox's own markers are symbols, and dropped; so is the exchange's
 * own keyword `maxJsonBytes` (a size bound the exchange enforces), which strict validators refuse.
 */
const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema), (k, v: unknown) => (k === 'maxJsonBytes' ? undefined : v)) as { type: 'object'; [k: string]: unknown };

/** Lists `tools` and answers their calls, each call's arguments checked against the schema listed first. */
export function serveTools(server: Server, tools: Tool[], opts: ExchangeMcpOptions): void {
  const byName = new Map(tools.map((t) => [t.name, t]));
  // Arguments are checked as the schemas listed say, formats included, before any tool runs.
  const ajv = schemaChecker();
  const checks = new Map(tools.map((t) => [t.name, ajv.compile(plain(t.input))]));

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: plain(t.input), outputSchema: plain(t.output), annotations: { title: t.title, ...t.annotations } })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const t = byName.get(request.params.name);
    if (!t) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${request.params.name}; tools/list names the tools of this server.`);
    const args = request.params.arguments ?? {};
    const check = checks.get(t.name)!;
    if (!check(args)) return failure(`The arguments do not match ${t.name}'s input schema:\n${problemsOf(check).join('\n')}`);
    try {
      const data = (await t.run(args as never, toolContext(server, opts, request.params._meta?.progressToken, extra))) as Record<string, unknown>;
      // D23.6: compact JSON, the same data as structuredContent: a model's context is not spent on indentation.
      return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
    } catch (err) {
      if (err instanceof ToolFailure) return failure(err.message);
      // Anything else is this server's fault, said plainly; the session goes on.
      return failure(`The tool failed unexpectedly: ${(err as Error).message}`);
    }
  });
}

function problemsOf(check: ValidateFunction): string[] {
  return (check.errors ?? []).slice(0, 10).map((e) => `"${e.instancePath || '/'}" ${e.message ?? 'is not valid'}${e.keyword === 'additionalProperties' ? `: ${String((e.params as { additionalProperty: string }).additionalProperty)}` : ''}`);
}

/** What one call's tool works with: progress goes to the call's progress token, questions to the human through the client. */
function toolContext(server: Server, opts: ExchangeMcpOptions, token: string | number | undefined, extra: CallExtra): ToolContext {
  let step = 0;
  return {
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
}

function failure(text: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text }] };
}
