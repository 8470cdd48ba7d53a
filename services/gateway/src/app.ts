import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { AppError } from '@aex/contracts';
import type { Bus, ExchangeConfig, Logger } from '@aex/platform';
import { ApiKeyAuthenticator } from './guards/auth.js';
import { IdempotencyStore } from './guards/idempotency.js';
import { RateLimiter } from './guards/rate-limit.js';
import { errorResponse, successBody, toAppError } from './http/envelope.js';
import { acceptJsonBodies } from './http/json-body.js';
import { openApiDocument } from './http/openapi.js';
import { routeHandler, send, type Guards } from './http/pipeline.js';
import { knownPaths, routes } from './http/routes.js';

export interface GatewayOptions {
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The gateway as a fastify app (server.ts only listens): envelope and errors (D1), API keys (D2),
 * signatures (D3), rate limits (D4), idempotency (D5), and routing to services over NATS.
 */
export async function buildGateway(opts: GatewayOptions): Promise<FastifyInstance> {
  const { bus, config } = opts;
  const guards = await createGuards(bus, config);

  const app = Fastify({
    loggerInstance: opts.logger.child({ service: 'gateway' }) as FastifyBaseLogger,
    bodyLimit: config.BODY_LIMIT_BYTES,
    trustProxy: config.TRUST_PROXY === 'true',
    // D1.2: the client's X-Request-Id when it is a UUID, else a new UUIDv4.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && UUID.test(given) ? given : randomUUID();
    },
    requestIdLogLabel: 'requestId',
  });
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });
  acceptJsonBodies(app);

  const sendError = (req: FastifyRequest, reply: FastifyReply, err: unknown) => {
    const appErr = toAppError(err, req.log as unknown as Logger);
    const res = errorResponse(appErr.status, appErr.entries, req.id);
    reply.headers(res.headers);
    return send(reply, res.status, res.body);
  };
  app.setErrorHandler((err, req, reply) => sendError(req, reply, err));
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '';
    const known = knownPaths.some((k) => k.re.test(path));
    const err = known ? new AppError('METHOD_NOT_ALLOWED', `${req.method} is not supported on this path.`) : new AppError('NOT_FOUND', 'No such route.');
    return sendError(req, reply, err);
  });

  for (const spec of routes) app.route({ method: spec.method, url: spec.url, handler: routeHandler(spec, guards, bus, config) });

  app.get('/v1/openapi.json', async (_req, reply) => reply.type('application/json').send(openApiDocument(routes, config.EXCHANGE_VERSION, config.PUBLIC_BASE_URL)));
  app.get('/healthz', async (req, reply) => send(reply, 200, successBody({ status: 'ok' }, req.id)));
  app.get('/readyz', async (req, reply) => {
    if (await bus.healthy()) return send(reply, 200, successBody({ status: 'ready', bus: bus.kind }, req.id));
    return sendError(req, reply, new AppError('SERVICE_UNAVAILABLE', 'The message bus is not reachable.'));
  });
  return app;
}

async function createGuards(bus: Bus, config: ExchangeConfig): Promise<Guards> {
  const auth = await ApiKeyAuthenticator.create(bus, config.RPC_TIMEOUT_MS);
  const limiter = await RateLimiter.create(bus, {
    read: config.RATE_LIMIT_READ_PER_MIN,
    write: config.RATE_LIMIT_WRITE_PER_MIN,
    discovery: config.RATE_LIMIT_DISCOVERY_PER_MIN,
    key_rotation: config.RATE_LIMIT_KEY_ROTATION_PER_MIN,
    accounts_ip: config.RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP,
    public_ip: config.RATE_LIMIT_PUBLIC_PER_MIN_PER_IP,
  });
  // A claim older than twice the RPC timeout belongs to a gateway that died mid-request (D5.3).
  const idempotency = await IdempotencyStore.create(bus, config.IDEMPOTENCY_TTL_HOURS, 2 * config.RPC_TIMEOUT_MS);
  return { auth, limiter, idempotency };
}
