import { randomUUID, timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
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
  /** A session without a request for this long is closed (default 30 minutes): clients vanish without a DELETE. */
  sessionIdleMs?: number;
}

const MAX_BODY = 4 * 1024 * 1024;

/**
 * Serves the MCP endpoint over Streamable HTTP: one MCP server and transport per session (the SDK's
 * `Mcp-Session-Id`), all sharing the process's agent, client and spending guard; a session idle for
 * `sessionIdleMs` is closed, since a client may vanish without ending it. Requests need the
 * bearer token given at launch, compared in constant time, and a Host naming this listener (DNS
 * rebinding protection).
 */
export async function serveHttp(mcp: ExchangeMcpOptions, opts: HttpHostOptions): Promise<{ url: string; close(): Promise<void> }> {
  const path = opts.path ?? '/mcp';
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const lastSeen = new Map<string, number>();
  const expected = createHash('sha256').update(opts.token).digest();
  const idleMs = opts.sessionIdleMs ?? 30 * 60_000;
  const sweeper = setInterval(() => {
    const now = Date.now();
    for (const [id, at] of lastSeen) {
      if (now - at < idleMs) continue;
      lastSeen.delete(id);
      void sessions.get(id)?.close();
      sessions.delete(id);
    }
  }, Math.min(60_000, Math.max(250, idleMs / 4)));
  sweeper.unref();

  const authorized = (req: IncomingMessage) => {
    const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    return timingSafeEqual(createHash('sha256').update(given).digest(), expected);
  };

  const server: HttpServer = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) reply(res, 500, -32603, `Internal error: ${(err as Error).message}`);
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== path) return reply(res, 404, -32601, `The MCP endpoint is ${path}.`);
    if (!authorized(req)) {
      res.setHeader('www-authenticate', 'Bearer');
      return reply(res, 401, -32001, 'Unauthorized: send Authorization: Bearer <the token this server was started with (AEX_MCP_HTTP_TOKEN)>.');
    }
    const sessionId = req.headers['mcp-session-id'];
    const existing = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    let body: unknown;
    if (req.method === 'POST') {
      const read = await readJson(req);
      if (!read.ok) return reply(res, read.status, -32700, read.message);
      body = read.value;
    }
    if (existing) {
      lastSeen.set(sessionId as string, Date.now());
      return existing.handleRequest(req, res, body);
    }
    if (typeof sessionId === 'string') return reply(res, 404, -32001, 'Unknown or ended session: initialize a new one.');
    if (req.method !== 'POST' || !isInitializeRequest(body)) return reply(res, 400, -32600, 'No session: the first request must be initialize, without Mcp-Session-Id.');
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, transport);
        lastSeen.set(id, Date.now());
      },
      enableDnsRebindingProtection: true,
      allowedHosts: [`${opts.host}:${port()}`, `localhost:${port()}`, `127.0.0.1:${port()}`, ...(opts.allowedHosts ?? [])],
    });
    transport.onclose = () => {
      if (!transport.sessionId) return;
      sessions.delete(transport.sessionId);
      lastSeen.delete(transport.sessionId);
    };
    await createExchangeMcpServer(mcp).connect(transport);
    await transport.handleRequest(req, res, body);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = () => (server.address() as { port: number }).port;
  return {
    url: `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port()}${path}`,
    async close() {
      clearInterval(sweeper);
      for (const t of sessions.values()) await t.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
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
