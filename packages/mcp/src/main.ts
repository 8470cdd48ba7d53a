import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { clientOf, requireAgentProfile, resolveProfile, UsageError } from '@aex/agent-kit';
import { createExchangeMcpServer, SERVER_VERSION, toolsOf } from './server.js';
import { serveHttp } from './http.js';
import { SpendingGuard } from './spending.js';

const HELP = `agent-exchange-mcp ${SERVER_VERSION}: an MCP server acting as one agent of an Agent Exchange.

Usage: agent-exchange-mcp [options]

The agent: the profile of the aex CLI (--profile, or its current one), each field overridable by
AEX_URL, AEX_AGENT_ID, AEX_API_KEY and AEX_SIGNING_KEY (AEX_SIGNATURE_SCHEME=rfc9421 signs with RFC 9421
HTTP Message Signatures instead of the X-AE headers). Keys are never printed or returned.

Options (each also an environment variable):
  --budget-cents N          AEX_MCP_BUDGET_CENTS        what this run may spend in all; without it, no
                                                        tool can spend (buy and negotiate are not listed)
  --max-per-call-cents N    AEX_MCP_MAX_PER_CALL_CENTS  most one purchase may cost (default: the budget);
                                                        above it the human is asked (MCP elicitation)
  --provider                AEX_MCP_PROVIDER=true       also list the provider tools (services, deliveries)
  --http                    AEX_MCP_TRANSPORT=http      serve Streamable HTTP instead of stdio
  --host H / --port P       AEX_MCP_HOST / AEX_MCP_PORT where to listen (127.0.0.1:8765)
  --allowed-host NAME:PORT  AEX_MCP_ALLOWED_HOSTS       more Host headers to accept (comma-separated),
                                                        when clients reach the server by another name
  --allowed-origin ORIGIN   AEX_MCP_ALLOWED_ORIGINS     web pages allowed to call it (https://app.example,
                                                        comma-separated); others are refused (403)
                            AEX_MCP_HTTP_TOKEN          bearer token HTTP clients must send (required)
                            AEX_MCP_SESSION_IDLE_SECONDS an HTTP session idle this long is closed (1800)
  --max-wait-seconds N      AEX_MCP_MAX_WAIT_SECONDS    longest a tool waits for the exchange (50: MCP
                                                        clients commonly give up on a call after 60 s)
  --profile NAME            AEX_PROFILE
  --help, --version
`;

function integer(name: string, value: string | undefined, fallback: number, min = 0): number {
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || !Number.isSafeInteger(Number(value))) throw new UsageError(`${name} must be a whole number ≥ ${min} (got "${value}").`);
  return Number(value);
}

/** An allowed origin as a browser sends it (`https://app.example`, `http://host:8080`): scheme, host and port only. */
function originOf(given: string): string {
  let url: URL | undefined;
  try {
    url = new URL(given);
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol) || url.username || url.password || url.pathname !== '/' || url.search || url.hash) {
    throw new UsageError(`--allowed-origin / AEX_MCP_ALLOWED_ORIGINS takes origins such as https://app.example or http://localhost:3000, without a path (got "${given}").`);
  }
  return url.origin;
}

export async function main(argv = process.argv.slice(2), env = process.env): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'budget-cents': { type: 'string' }, 'max-per-call-cents': { type: 'string' }, provider: { type: 'boolean' }, http: { type: 'boolean' },
      host: { type: 'string' }, port: { type: 'string' }, 'allowed-host': { type: 'string', multiple: true }, 'allowed-origin': { type: 'string', multiple: true }, 'max-wait-seconds': { type: 'string' }, profile: { type: 'string' },
      help: { type: 'boolean' }, version: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) return void process.stdout.write(HELP);
  if (values.version) return void process.stdout.write(`${SERVER_VERSION}\n`);

  const profile = requireAgentProfile(resolveProfile({ env, ...(values.profile ? { profile: values.profile } : {}) }).profile);
  const budgetCents = integer('--budget-cents / AEX_MCP_BUDGET_CENTS', values['budget-cents'] ?? env.AEX_MCP_BUDGET_CENTS, 0);
  const maxPerCallCents = integer('--max-per-call-cents / AEX_MCP_MAX_PER_CALL_CENTS', values['max-per-call-cents'] ?? env.AEX_MCP_MAX_PER_CALL_CENTS, budgetCents, 1);
  const provider = values.provider ?? env.AEX_MCP_PROVIDER === 'true';
  const maxWaitMs = integer('--max-wait-seconds / AEX_MCP_MAX_WAIT_SECONDS', values['max-wait-seconds'] ?? env.AEX_MCP_MAX_WAIT_SECONDS, 50, 1) * 1000;
  if ((budgetCents > 0 || provider) && !profile.signingSecretKey) {
    throw new UsageError('Buying and delivering are signed requests: set AEX_SIGNING_KEY (or use a profile with a signing key: aex keys generate, then aex keys register).');
  }
  const guard = new SpendingGuard({ budgetCents, maxPerCallCents });
  const options = { client: clientOf(profile), profile, guard, provider, maxWaitMs, pollMs: integer('AEX_MCP_POLL_MS', env.AEX_MCP_POLL_MS, 500, 50) };
  const tools = toolsOf(options).length;
  const spending = guard.enabled ? `budget ${budgetCents} cents, at most ${maxPerCallCents} per purchase` : 'no budget: spending tools off';
  const say = (line: string) => process.stderr.write(`agent-exchange-mcp: ${line}\n`);

  if (values.http || env.AEX_MCP_TRANSPORT === 'http') {
    const token = env.AEX_MCP_HTTP_TOKEN ?? '';
    if (token.length < 24) throw new UsageError('Serving over HTTP needs AEX_MCP_HTTP_TOKEN, at least 24 characters, which every client must send as a bearer token (e.g. openssl rand -hex 32).');
    const host = values.host ?? env.AEX_MCP_HOST ?? '127.0.0.1';
    const port = integer('--port / AEX_MCP_PORT', values.port ?? env.AEX_MCP_PORT, 8765);
    const allowedHosts = [...(values['allowed-host'] ?? []), ...(env.AEX_MCP_ALLOWED_HOSTS ?? '').split(',')].map((h) => h.trim()).filter(Boolean);
    const allowedOrigins = [...(values['allowed-origin'] ?? []), ...(env.AEX_MCP_ALLOWED_ORIGINS ?? '').split(',')].map((o) => o.trim()).filter(Boolean).map(originOf);
    const sessionIdleMs = integer('AEX_MCP_SESSION_IDLE_SECONDS', env.AEX_MCP_SESSION_IDLE_SECONDS, 1800, 1) * 1000;
    const onIdleClose = (sessionId: string) => say(`session ${sessionId} closed: no request for ${sessionIdleMs / 1000} s`);
    const served = await serveHttp(options, { host, port, token, allowedHosts, allowedOrigins, sessionIdleMs, onIdleClose });
    say(`agent ${profile.agentId} on ${profile.url}; ${tools} tools; ${spending}; listening on ${served.url}`);
    const stop = () => void served.close().then(() => process.exit(0));
    process.once('SIGINT', stop).once('SIGTERM', stop);
    return;
  }
  const server = createExchangeMcpServer(options);
  await server.connect(new StdioServerTransport());
  say(`agent ${profile.agentId} on ${profile.url}; ${tools} tools; ${spending}; serving stdio`);
}

/** Runs `main` as the bin does: a person's mistake is one line on stderr and exit 2, not a stack trace. */
export function runMain(): void {
  main().catch((err: unknown) => {
    const message = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? (err as Error).message : `unexpected error: ${(err as Error).stack ?? String(err)}`;
    process.stderr.write(`agent-exchange-mcp: ${message}\n`);
    process.exit(err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? 2 : 1);
  });
}
