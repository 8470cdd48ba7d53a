import { randomUUID, timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { DEFAULT_SESSION_IDLE_MS, HttpSessions } from './http-sessions.js';
import { createExchangeMcpServer, type ExchangeMcpOptions } from './server.js';

export interface HttpHostOptions {
  host: string;
  port: number;
  /** Every request must carry `Authorization: Bearer <token>`: whoever reaches the port could spend otherwise. */
  token: string;
  /** The path of the MCP endpoint (default `/mcp`). */
  path?: string;
  /** Host headers accepted besides the listener's own address and localhost (`name:port`). */
  allowedHosts?: string[];
  /**
   * Origin headers accepted besides the listener's own (`http://127.0.0.1:<port>`,
   * `http://localhost:<port>`), each as a browser sends it (`https://app.example`). A request
   * without Origin is a client, not a page, and is not refused for it.
   */
  allowedOrigins?: string[];
  /** A session without a request for this long is closed (default 30 minutes): clients vanish without a DELETE. */
  sessionIdleMs?: number;
  /** Hears of each session closed for being idle (main.ts says so on stderr). */
  onIdleClose?: (sessionId: string) => void;
}

const MAX_BODY = 4 * 1024 * 1024;

/** What answering one request needs of the listener. */
interface Endpoint {
  path: string;
  sessions: HttpSessions;
  /** The Origin headers accepted (D24.4). */
  origins(): string[];
  authorized(req: IncomingMessage): boolean;
  /** A new session's transport, connected to an MCP server of its own. */
  open(): Promise<StreamableHTTPServerTransport>;
}

/**
 * Serves the MCP endpoint over Streamable HTTP: one MCP server and transport per session (the SDK's
 * `Mcp-Session-Id`), all sharing the process's agent, client and spending guard; a session idle for
 * `sessionIdleMs` is closed, since a client may vanish without ending it. Requests need the
 * bearer token given at launch, compared in constant time, and a Host naming this listener (DNS
 * rebinding protection). A request with an Origin that is not allowed — a web page's — is refused
 * with 403 before anything else, as the MCP specification asks (D24.4).
 */
export async function serveHttp(mcp: ExchangeMcpOptions, opts: HttpHostOptions): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new HttpSessions(opts.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS, opts.onIdleClose);
  const endpoint: Endpoint = {
    path: opts.path ?? '/mcp',
    sessions,
    authorized: bearerCheck(opts.token),
    origins: () => {
      const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
      return [...new Set([`http://${host}:${port()}`, `http://localhost:${port()}`, `http://127.0.0.1:${port()}`, ...(opts.allowedOrigins ?? [])])];
    },
    open: async () => {
      const allowedHosts = [`${opts.host}:${port()}`, `localhost:${port()}`, `127.0.0.1:${port()}`, ...(opts.allowedHosts ?? [])];
      const transport = openTransport(sessions, allowedHosts, endpoint.origins());
      await createExchangeMcpServer(mcp).connect(transport);
      return transport;
    },
  };
  const server: HttpServer = createServer((req, res) => {
    handle(endpoint, req, res).catch((err: unknown) => {
      if (!res.headersSent) reply(res, 500, -32603, `Internal error: ${(err as Error).message}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = () => (server.address() as { port: number }).port;
  return {
    url: `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port()}${endpoint.path}`,
    async close() {
      await sessions.closeAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Whether a request carries the bearer token: both sides hashed first, so the comparison takes the same time whatever was sent. */
function bearerCheck(token: string): (req: IncomingMessage) => boolean {
  const expected = createHash('sha256').update(token).digest();
  return (req) => {
    const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    return timingSafeEqual(createHash('sha256').update(given).digest(), expected);
  };
}

/** A transport for a new session: in the table once initialized, out of it once closed. */
function openTransport(sessions: HttpSessions, allowedHosts: string[], allowedOrigins: string[]): StreamableHTTPServerTransport {
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => {
      sessions.add(id, transport);
    },
    enableDnsRebindingProtection: true,
    allowedHosts,
    allowedOrigins,
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.remove(transport.sessionId);
  };
  return transport;
}

async function handle(endpoint: Endpoint, req: IncomingMessage, res: ServerResponse) {
  // A page's request (a browser always sends Origin) from an origin not allowed: refused first, so
  // it learns nothing — not even whether the token it sent is right. The SDK's transport checks the
  // same list again; this also covers requests that never reach one.
  const origin = req.headers.origin;
  if (origin !== undefined && !endpoint.origins().includes(origin)) return reply(res, 403, -32000, `Forbidden: Origin ${origin} is not allowed (--allowed-origin).`);
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== endpoint.path) return reply(res, 404, -32601, `The MCP endpoint is ${endpoint.path}.`);
  if (!endpoint.authorized(req)) {
    res.setHeader('www-authenticate', 'Bearer');
    return reply(res, 401, -32001, 'Unauthorized: send Authorization: Bearer <the token this server was started with (AEX_MCP_HTTP_TOKEN)>.');
  }
  const sessionId = req.headers['mcp-session-id'];
  const existing = typeof sessionId === 'string' ? endpoint.sessions.find(sessionId) : undefined;
  let body: unknown;
  if (req.method === 'POST') {
    const read = await readJson(req);
    if (!read.ok) return reply(res, read.status, -32700, read.message);
    body = read.value;
  }
  if (existing) {
    endpoint.sessions.touch(sessionId as string);
    return existing.handleRequest(req, res, body);
  }
  if (typeof sessionId === 'string') return reply(res, 404, -32001, 'Unknown or ended session: initialize a new one.');
  if (req.method !== 'POST' || !isInitializeRequest(body)) return reply(res, 400, -32600, 'No session: the first request must be initialize, without Mcp-Session-Id.');
  const transport = await endpoint.open();
  await transport.handleRequest(req, res, body);
}

function reply(res: ServerResponse, status: number, code: number, message: string) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

async function readJson(req: IncomingMessage): Promise<{ ok: true; value: unknown } | { ok: false; status: number; message: string }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) return { ok: false, status: 413, message: `The request body is over ${MAX_BODY} bytes.` };
    chunks.push(chunk as Buffer);
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch {
    return { ok: false, status: 400, message: 'Parse error: the body is not JSON.' };
  }
}
