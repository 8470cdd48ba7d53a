import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { AppError, validator, type ErrorEntry, type Principal, type TSchema } from '@aex/contracts';
import { callOperation, type Bus, type ExchangeConfig, type Logger } from '@aex/platform';
import { ApiKeyAuthenticator, checkAdminToken } from './guards/auth.js';
import { IdempotencyStore } from './guards/idempotency.js';
import { RateLimiter } from './guards/rate-limit.js';
import { checkSignature } from './domain/signature.js';
import { errorResponse, successBody, toAppError } from './http/envelope.js';
import { openApiDocument } from './http/openapi.js';
import { protocolView } from './http/protocol.js';
import { knownPaths, routes, type RouteSpec } from './http/routes.js';

export interface GatewayOptions {
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
}

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: Buffer;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

/**
 * The gateway as a fastify app (server.ts only listens): envelope and errors (D1), API keys (D2),
 * signatures (D3), rate limits (D4), idempotency (D5), and routing to services over NATS.
 */
export async function buildGateway(opts: GatewayOptions): Promise<FastifyInstance> {
  const { bus, config } = opts;
  const auth = await ApiKeyAuthenticator.create(bus, config.RPC_TIMEOUT_MS);
  const limiter = await RateLimiter.create(bus, {
    read: config.RATE_LIMIT_READ_PER_MIN,
    write: config.RATE_LIMIT_WRITE_PER_MIN,
    discovery: config.RATE_LIMIT_DISCOVERY_PER_MIN,
    key_rotation: config.RATE_LIMIT_KEY_ROTATION_PER_MIN,
    accounts_ip: config.RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP,
    public_ip: config.RATE_LIMIT_PUBLIC_PER_MIN_PER_IP,
  });
  const idempotency = await IdempotencyStore.create(bus, config.IDEMPOTENCY_TTL_HOURS, 2 * config.RPC_TIMEOUT_MS);

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

  // JSON only (D1.4 415); the raw bytes are kept for signatures (D3.1) and idempotency fingerprints.
  app.removeAllContentTypeParsers();
  const parseJson = (req: FastifyRequest, body: Buffer, done: (err: Error | null, value?: unknown) => void) => {
    req.rawBody = body;
    if (body.length === 0) return done(null, undefined);
    try {
      done(null, sjson.parse(body.toString('utf8'), undefined, { protoAction: 'remove', constructorAction: 'remove' }));
    } catch {
      done(new AppError('INVALID_JSON', 'The request body is not valid JSON.'), undefined);
    }
  };
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => parseJson(req, body as Buffer, done));
  app.addContentTypeParser(/^application\/[a-z0-9.+-]+\+json$/i, { parseAs: 'buffer' }, (req, body, done) => parseJson(req, body as Buffer, done));

  const send = (reply: FastifyReply, status: number, body: string, type = 'application/json; charset=utf-8') => reply.code(status).type(type).send(body);
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

  for (const spec of routes) {
    const check = compileChecks(spec);
    app.route({
      method: spec.method,
      url: spec.url,
      handler: async (req, reply) => {
        // D1.4: authentication, then rate limits, then signatures — none of them is stored under an Idempotency-Key (D5.4).
        let principal: Principal | null = null;
        if (spec.auth === 'agent') principal = await auth.authenticate(req.headers.authorization, req.id);
        if (spec.auth === 'admin') checkAdminToken(config.ADMIN_TOKEN, req.headers.authorization);
        if (spec.rateGroup) {
          const r = await limiter.take(spec.rateGroup, principal ? principal.agentId : req.ip);
          reply.headers({ 'ratelimit-limit': String(r.limit), 'ratelimit-remaining': String(r.remaining), 'ratelimit-reset': String(r.resetSeconds) });
          if (!r.allowed) throw new AppError('RATE_LIMITED', 'Too many requests; retry later.', { details: { retryAfterSeconds: r.retryAfterSeconds } });
        }
        const sigHeaders = { signature: header(req, 'x-ae-signature'), timestamp: header(req, 'x-ae-signature-timestamp') };
        if (principal && (spec.signature === 'required' || sigHeaders.signature !== undefined || sigHeaders.timestamp !== undefined)) {
          const result = checkSignature({ ...sigHeaders, method: req.method, target: req.url, rawBody: req.rawBody, publicKey: principal.signingKeyPublic, nowMs: Date.now() });
          if (!result.ok) throw new AppError(result.code, result.message);
        }

        let finish: ((status: number, body: string) => Promise<void>) | undefined;
        const key = header(req, 'idempotency-key');
        if (key !== undefined && MUTATING.has(req.method)) {
          const scope = principal ? principal.agentId : `anon_${spec.method}_${spec.url.replace(/[^a-z]/gi, '_')}`;
          const outcome = await idempotency.begin(scope, key, IdempotencyStore.fingerprint(req.method, req.url, req.rawBody));
          if (outcome.kind === 'replay') {
            reply.header('idempotent-replayed', 'true');
            return send(reply, outcome.status, outcome.body, spec.raw ? `application/${spec.raw}` : undefined);
          }
          finish = outcome.finish;
        }

        let status: number;
        let body: string;
        let type: string | undefined;
        try {
          ({ status, body, type } = await execute(spec, check, req, principal));
        } catch (err) {
          const appErr = toAppError(err, req.log as unknown as Logger);
          const res = errorResponse(appErr.status, appErr.entries, req.id);
          reply.headers(res.headers);
          ({ status, body } = res);
        }
        await finish?.(status, body);
        return send(reply, status, body, type);
      },
    });
  }

  async function execute(spec: RouteSpec, check: Checks, req: FastifyRequest, principal: Principal | null): Promise<{ status: number; body: string; type?: string }> {
    if (!spec.op) return { status: 200, body: successBody(protocolView(config), req.id) };
    const errors: ErrorEntry[] = [];
    const part = (v: ReturnType<Checks['path']['check']>) => (v.ok ? v.value : (errors.push(...v.errors), {}));
    const input = {
      path: part(check.path.check(req.params ?? {}, '/path')),
      query: part(check.query.check({ ...(req.query as object) }, '/query')),
      body: spec.body ? part(check.body.check(req.body, '/body')) : {},
    };
    if (errors.length > 0) throw AppError.many(errors.slice(0, 20));
    const reply = await callOperation(bus, spec.op, { ctx: { requestId: req.id, principal, admin: spec.auth === 'admin' }, input }, { timeoutMs: config.RPC_TIMEOUT_MS });
    if (!reply.ok) {
      const res = errorResponse(reply.status, reply.errors, req.id);
      throw Object.assign(AppError.many(reply.errors), { status: res.status });
    }
    if (spec.raw) return { status: 200, body: JSON.stringify(reply.data), type: `application/${spec.raw}` };
    return { status: reply.status === 200 ? spec.successStatus : reply.status, body: successBody(reply.data, req.id, reply.pagination) };
  }

  app.get('/v1/openapi.json', async (_req, reply) => reply.type('application/json').send(openApiDocument(routes, config.EXCHANGE_VERSION, config.PUBLIC_BASE_URL)));
  app.get('/healthz', async (req, reply) => send(reply, 200, successBody({ status: 'ok' }, req.id)));
  app.get('/readyz', async (req, reply) => {
    if (await bus.healthy()) return send(reply, 200, successBody({ status: 'ready', bus: bus.kind }, req.id));
    return sendError(req, reply, new AppError('SERVICE_UNAVAILABLE', 'The message bus is not reachable.'));
  });

  return app;
}

interface Checks {
  path: ReturnType<typeof validator<TSchema>>;
  query: ReturnType<typeof validator<TSchema>>;
  body: ReturnType<typeof validator<TSchema>>;
}

function compileChecks(spec: RouteSpec): Checks {
  const props = (spec.op?.input.properties ?? {}) as Record<string, TSchema>;
  const empty = { type: 'object' } as unknown as TSchema;
  return {
    path: validator(props.path ?? empty),
    query: validator(props.query ?? empty, { coerce: true }),
    body: validator(props.body ?? empty),
  };
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
