import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { AppError } from '@aex/contracts';
import { busCheck, CacheMembership, exchangeMetrics, LocalCache, metrics, METRICS_CONTENT_TYPE, metricsAuthorized, type Bus, type ExchangeConfig, type HealthCheck, type Logger } from '@aex/platform';
import { ApiKeyAuthenticator } from './guards/auth.js';
import { IdempotencyKeyBinding } from './guards/idempotency-keys.js';
import { RateLimitedError, RateLimiter } from './guards/rate-limit.js';
import { errorResponse, successBody, toAppError } from './http/envelope.js';
import { acceptJsonBodies } from './http/json-body.js';
import { openApiDocument } from './http/openapi.js';
import { serveDocs } from './http/docs.js';
import { serveAgentCards } from './http/agent-cards.js';
import { tlsOptions } from './http/tls.js';
import { routeHandler, send, type Guards } from './http/pipeline.js';
import { parseQueryString } from './http/query-string.js';
import { requestLogger } from './http/request-logger.js';
import { knownPaths, routes } from './http/routes.js';
import { ConsoleSessions } from './console/sessions.js';
import { serveConsole } from './console/routes.js';

export interface GatewayOptions {
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
  /** More of `/readyz` than the bus: the services of the same process (the one-process stack). */
  checks?: () => Promise<HealthCheck[]>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The gateway as a fastify app (server.ts only listens): envelope and errors (D1), API keys (D2),
 * signatures (D3), rate limits (D4), idempotency keys forwarded to their owners (D5), and routing
 * to services over NATS. Every answer, down to malformed HTTP, is in the envelope.
 */
export async function buildGateway(opts: GatewayOptions): Promise<FastifyInstance> {
  const { bus, config } = opts;
  const membership = await CacheMembership.start(bus, opts.logger.child({ service: 'gateway' }));
  const guards = await createGuards(bus, config, membership);

  const app = Fastify({
    ...tlsOptions(config),
    loggerInstance: opts.logger.child({ service: 'gateway' }) as FastifyBaseLogger,
    childLoggerFactory: requestLogger,
    bodyLimit: config.BODY_LIMIT_BYTES,
    trustProxy: config.TRUST_PROXY === 'true',
    routerOptions: {
      // Path parameters as long as the URL may be: a long id is a 400 from validation, not a 405.
      maxParamLength: 16_384,
      querystringParser: parseQueryString,
    },
    // D1.2: the client's X-Request-Id when it is a UUID, else a new UUIDv4.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && UUID.test(given) ? given : randomUUID();
    },
    requestIdLogLabel: 'requestId',
    // A URL that cannot be decoded: 400 in the envelope, without echoing it.
    frameworkErrors: (err, req, reply) => sendError(req, reply, new AppError('VALIDATION_ERROR', 'The request URL is malformed.', { field: '/path' })),
    clientErrorHandler: answerMalformedHttp,
  });
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });
  // Every answer counted and timed by its route's template (a bounded set of labels; no route: `unmatched`).
  const [requests, durations] = [exchangeMetrics.httpRequests(), exchangeMetrics.httpDuration()];
  const counted = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const key = `${req.method} ${route} ${reply.statusCode}`;
    let series = counted.get(key);
    if (!series) {
      series = { count: requests.bind({ route, method: req.method, status: String(reply.statusCode) }), time: durations.bind({ route, method: req.method }) };
      counted.set(key, series);
    }
    series.count.inc();
    series.time.observe(reply.elapsedTime / 1000);
    done();
  });
  app.addHook('onClose', async () => {
    await guards.limiter.stop();
    await membership.stop();
  });
  acceptJsonBodies(app);

  async function sendError(req: FastifyRequest, reply: FastifyReply, err: unknown) {
    const appErr = toAppError(err, req.log as unknown as Logger);
    // A body refused before it was read (413) is read to its end and dropped first, within bounds:
    // a socket closed with unread data is reset, and the client would lose the answer mid-upload.
    if (appErr.status === 413 && !req.raw.complete) await discardBody(req.raw, Math.max(DISCARD_MIN_BYTES, 8 * config.BODY_LIMIT_BYTES), DISCARD_MS);
    const res = errorResponse(appErr.status, appErr.entries, req.id);
    if (err instanceof RateLimitedError) reply.headers(err.decision.headers);
    reply.headers(res.headers);
    return send(reply, res.status, res.body);
  }
  app.setErrorHandler((err, req, reply) => sendError(req, reply, err));
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '';
    const known = knownPaths.some((k) => k.re.test(path));
    const err = known ? new AppError('METHOD_NOT_ALLOWED', `${req.method} is not supported on this path.`) : new AppError('NOT_FOUND', 'No such route.');
    return sendError(req, reply, err);
  });

  for (const spec of routes) app.route({ method: spec.method, url: spec.url, handler: routeHandler(spec, guards, bus, config) });

  // Built once: it depends on the route table and the configuration alone.
  const openApi = JSON.stringify(openApiDocument(routes, config.EXCHANGE_VERSION, config.PUBLIC_BASE_URL));
  app.get('/v1/openapi.json', async (_req, reply) => reply.type('application/json').send(openApi));
  serveDocs(app, guards.limiter);
  serveConsole(app, guards, config);
  serveAgentCards(app, guards.limiter, bus, config);
  app.get('/healthz', async (req, reply) => send(reply, 200, successBody({ status: 'ok' }, req.id)));
  // Prometheus text (docs/metrics.md): this process's metrics; with METRICS_TOKEN set, for its bearer only.
  app.get('/metrics', async (req, reply) => {
    if (!metricsAuthorized(config.METRICS_TOKEN, req.headers.authorization)) {
      reply.header('www-authenticate', 'Bearer');
      return sendError(req, reply, new AppError('UNAUTHENTICATED', 'The metrics token is missing or wrong (METRICS_TOKEN).'));
    }
    return reply.header('content-type', METRICS_CONTENT_TYPE).header('cache-control', 'no-store').send(await metrics.render());
  });
  // Every check is bounded (health.ts), so /readyz answers within a second whatever stalls.
  app.get('/readyz', async (req, reply) => {
    const [busReady, others] = await Promise.all([busCheck(bus), opts.checks?.() ?? []]);
    const checks = [busReady, ...others];
    const failing = checks.filter((c) => !c.ok);
    if (failing.length === 0) return send(reply, 200, successBody({ status: 'ready', bus: bus.kind, checks }, req.id));
    const why = failing.map((c) => (c.name === 'bus' ? 'the message bus is not reachable' : `${c.name}: ${c.detail ?? 'failing'}`)).join('; ');
    return sendError(req, reply, new AppError('SERVICE_UNAVAILABLE', `Not ready: ${why}.`, { details: { checks } }));
  });
  return app;
}

/** Agent views kept per replica (docs/gateway-caches.md); short-lived, as a bound on what a lost invalidation costs. */
const LOCAL_VIEWS = { maxEntries: 50_000, ttlMs: 30_000 };

async function createGuards(bus: Bus, config: ExchangeConfig, membership: CacheMembership): Promise<Guards> {
  const limiter = await RateLimiter.create(bus, {
    read: config.RATE_LIMIT_READ_PER_MIN,
    write: config.RATE_LIMIT_WRITE_PER_MIN,
    discovery: config.RATE_LIMIT_DISCOVERY_PER_MIN,
    key_rotation: config.RATE_LIMIT_KEY_ROTATION_PER_MIN,
    accounts_ip: config.RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP,
    public_ip: config.RATE_LIMIT_PUBLIC_PER_MIN_PER_IP,
    auth_failures_ip: config.RATE_LIMIT_AUTH_FAILURES_PER_MIN_PER_IP,
  });
  const auth = await ApiKeyAuthenticator.create(bus, limiter, config.RPC_TIMEOUT_MS, membership);
  const keys = await IdempotencyKeyBinding.create(bus, config.IDEMPOTENCY_TTL_HOURS);
  return { auth, limiter, keys, views: new LocalCache<string>(membership, LOCAL_VIEWS), console: await ConsoleSessions.create(bus) };
}

/**
 * HTTP that Node's parser refuses before fastify sees a request (bad Content-Length, control
 * characters in headers, a request line or headers over the size limit, a client too slow to send
 * its request): answered 400 in the envelope, then the connection closed.
 */
function answerMalformedHttp(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const message =
    err.code === 'HPE_HEADER_OVERFLOW' ? 'The request line or headers are larger than the exchange accepts.'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'The request was not received in time.'
        : 'The request is not valid HTTP/1.1.';
  const requestId = randomUUID();
  const body = errorResponse(400, [{ code: 'VALIDATION_ERROR', message }], requestId).body;
  socket.end(
    `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** At least this much of a refused body is read and dropped before the 413 (and for at most `DISCARD_MS`). */
const DISCARD_MIN_BYTES = 16 * 1024 * 1024;
const DISCARD_MS = 5000;

/** Reads the rest of a request body and drops it, stopping after `maxBytes` or `maxMs`. */
function discardBody(req: IncomingMessage, maxBytes: number, maxMs: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const done = () => {
      clearTimeout(timer);
      req.off('data', onData).off('end', done).off('error', done).off('close', done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > maxBytes) done();
    };
    const timer = setTimeout(done, maxMs);
    req.on('data', onData).once('end', done).once('error', done).once('close', done);
    req.resume();
  });
}
