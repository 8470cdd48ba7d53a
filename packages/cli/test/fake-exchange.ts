import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { publicKeyOf, signingString, verifySignature } from '@agent-exchange/client';

// A stand-in for the exchange's gateway, on a port of this machine: it answers each route with what a
// test says, in the exchange's envelope ({ data, meta: { requestId, timestamp }, errors }), and keeps
// every request the CLI sent so the test can assert its method, path, body and headers.

/** One request as the fake exchange received it. */
export interface SentRequest {
  method: string;
  /** The path without its query. */
  path: string;
  /** The path and query exactly as sent (what a D3 signature covers). */
  target: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The body as sent, and parsed when it is JSON. */
  raw: string;
  body: unknown;
}

export interface ErrorEntry {
  code: string;
  message: string;
  field?: string;
}

/** What a route answers: data in the envelope, the exchange's errors with their status, or a body as is. */
export type Answer = { data: unknown; status?: number } | { errors: ErrorEntry[]; status: number } | { raw: string; status?: number; contentType?: string };

export interface FakeExchange {
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: SentRequest[];
  /** Answers `method path` with these, one a call, the last one again for every later call. */
  on(method: string, path: string, ...answers: Answer[]): FakeExchange;
  /** The requests to `method path`, in order. */
  sent(method: string, path: string): SentRequest[];
  close(): Promise<void>;
}

export async function startFakeExchange(): Promise<FakeExchange> {
  const routes = new Map<string, Answer[]>();
  const requests: SentRequest[] = [];
  let served = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://fake');
      let body: unknown = raw;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        // Not JSON: the test sees the raw text.
      }
      requests.push({ method: req.method ?? '', path: url.pathname, target: req.url ?? '/', query: url.searchParams, headers: req.headers, raw, body });
      const queue = routes.get(`${req.method} ${url.pathname}`);
      const answer: Answer = queue ? (queue.length > 1 ? queue.shift()! : queue[0]!) : { status: 404, errors: [{ code: 'NOT_FOUND', message: `The fake exchange has no answer for ${req.method} ${url.pathname}.` }] };
      const requestId = `req-${++served}`;
      if ('raw' in answer) {
        res.writeHead(answer.status ?? 200, { 'content-type': answer.contentType ?? 'application/json' }).end(answer.raw);
        return;
      }
      const meta = { requestId, timestamp: new Date().toISOString() };
      const envelope = 'errors' in answer ? { data: null, meta, errors: answer.errors } : { data: answer.data, meta, errors: [] };
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', 'x-request-id': requestId }).end(JSON.stringify(envelope));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake: FakeExchange = {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    requests,
    on(method, path, ...answers) {
      routes.set(`${method} ${path}`, answers);
      return fake;
    },
    sent: (method, path) => requests.filter((r) => r.method === method && r.path === path),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return fake;
}

/** Whether a request carries a D3 signature (x-ae-signature over its timestamp, method, target and body) by this secret key. */
export function isSignedBy(req: SentRequest, secretKey: string): boolean {
  const signature = req.headers['x-ae-signature'];
  const timestamp = req.headers['x-ae-signature-timestamp'];
  if (typeof signature !== 'string' || typeof timestamp !== 'string') return false;
  return verifySignature(publicKeyOf(secretKey), signature, signingString(timestamp, req.method, req.target, req.raw));
}
