import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { AppError } from '@aex/contracts';
import { CacheMembership, LocalCache, type Bus, type ExchangeConfig, type HealthCheck, type Logger } from '@aex/platform';
import { ApiKeyAuthenticator } from './guards/auth.js';
import { AuthFailures } from './guards/auth-failures.js';
import { IdempotencyKeyBinding } from './guards/idempotency-keys.js';
import { RateLimiter } from './guards/rate-limit.js';
import { UsedSignatures } from './guards/used-signatures.js';
import { answerMalformedHttp, errorSender } from './http/error-answers.js';
import { serveHealth } from './http/health-routes.js';
import { acceptJsonBodies } from './http/json-body.js';
import { countAnswers, serveMetrics } from './http/metrics-routes.js';
import { openApiDocument } from './http/openapi.js';
import { serveDocs } from './http/docs.js';
import { serveAgentCards } from './http/agent-cards.js';
import { serveA2a } from './a2a/endpoint.js';
import { tlsOptions } from './http/tls.js';
import { UUID } from './http/input-hygiene.js';
import { routeHandler, type Guards } from './http/pipeline.js';
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

/**
 * The gateway as a fastify app (server.ts only listens): envelope and errors (D1), API keys (D2),
 * signatures (D3), rate limits (D4), idempotency keys forwarded to their owners (D5), and routing
 * to services over NATS. Every answer, down to malformed HTTP, is in the envelope.
 */
export async function buildGateway(opts: GatewayOptions): Promise<FastifyInstance> {
  const { bus, config } = opts;
  const membership = await CacheMembership.start(bus, opts.logger.child({ service: 'gateway' }));
  const guards = await createGuards(bus, config, membership, opts.logger.child({ service: 'gateway' }));
  const sendError = errorSender(config.BODY_LIMIT_BYTES);

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
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    done();
  });
  countAnswers(app);
  app.addHook('onClose', async () => {
    await guards.failures.stop();
    await guards.limiter.stop();
    await membership.stop();
  });
  acceptJsonBodies(app);

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
  serveA2a(app, guards, bus, config);
  serveHealth(app, bus, opts.checks, sendError);
  serveMetrics(app, config, guards.failures, sendError);
  return app;
}

/** Agent views kept per replica (docs/gateway-caches.md); short-lived, as a bound on what a lost invalidation costs. */
const LOCAL_VIEWS = { maxEntries: 50_000, ttlMs: 30_000 };

async function createGuards(bus: Bus, config: ExchangeConfig, membership: CacheMembership, logger: Logger): Promise<Guards> {
  const limiter = await RateLimiter.create(bus, {
    read: config.RATE_LIMIT_READ_PER_MIN,
    write: config.RATE_LIMIT_WRITE_PER_MIN,
    discovery: config.RATE_LIMIT_DISCOVERY_PER_MIN,
    key_rotation: config.RATE_LIMIT_KEY_ROTATION_PER_MIN,
    accounts_ip: config.RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP,
    public_ip: config.RATE_LIMIT_PUBLIC_PER_MIN_PER_IP,
    auth_failures_ip: config.RATE_LIMIT_AUTH_FAILURES_PER_MIN_PER_IP,
  }, Date.now, logger);
  const failures = await AuthFailures.create(bus, limiter, config.RATE_LIMIT_AUTH_FAILURES_PER_MIN_PER_IP);
  const auth = await ApiKeyAuthenticator.create(bus, failures, config.RPC_TIMEOUT_MS, membership);
  const keys = await IdempotencyKeyBinding.create(bus, config.IDEMPOTENCY_TTL_HOURS);
  const signatures = await UsedSignatures.create(bus, `${config.PUBLIC_BASE_URL}/docs/signing.md#a-signature-is-used-once`);
  return { auth, failures, limiter, keys, signatures, views: new LocalCache<string>(membership, LOCAL_VIEWS), console: await ConsoleSessions.create(bus) };
}
