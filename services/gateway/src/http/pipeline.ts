import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { AppError, validator, type ErrorEntry, type Principal, type TSchema } from '@aex/contracts';
import { callOperation, type Bus, type ExchangeConfig, type Logger } from '@aex/platform';
import { checkSignature } from '../domain/signature.js';
import type { ApiKeyAuthenticator } from '../guards/auth.js';
import { checkAdminToken } from '../guards/auth.js';
import { IdempotencyStore } from '../guards/idempotency.js';
import type { RateLimiter } from '../guards/rate-limit.js';
import { errorResponse, successBody, toAppError } from './envelope.js';
import { protocolView } from './protocol.js';
import type { RouteSpec } from './routes.js';

export interface Guards {
  auth: ApiKeyAuthenticator;
  limiter: RateLimiter;
  idempotency: IdempotencyStore;
}

interface Answer {
  status: number;
  body: string;
  type?: string;
}

const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

export const send = (reply: FastifyReply, status: number, body: string, type = 'application/json; charset=utf-8') => reply.code(status).type(type).send(body);

/**
 * The handler of one route, in the order of D1.4: authentication (D2), rate limit (D4), signature
 * (D3) — none of which is ever stored under an Idempotency-Key (D5.4) — then the idempotency claim,
 * validation of path, query and body against the contract, and the call to the owning service.
 */
export function routeHandler(spec: RouteSpec, guards: Guards, bus: Bus, config: ExchangeConfig): RouteHandlerMethod {
  const check = compileChecks(spec);
  return async (req, reply) => {
    let principal: Principal | null = null;
    if (spec.auth === 'agent') principal = await guards.auth.authenticate(req.headers.authorization, req.id);
    if (spec.auth === 'admin') checkAdminToken(config.ADMIN_TOKEN, req.headers.authorization);
    if (spec.rateGroup) {
      const r = await guards.limiter.take(spec.rateGroup, principal ? principal.agentId : req.ip);
      reply.headers({ 'ratelimit-limit': String(r.limit), 'ratelimit-remaining': String(r.remaining), 'ratelimit-reset': String(r.resetSeconds) });
      if (!r.allowed) throw new AppError('RATE_LIMITED', 'Too many requests; retry later.', { details: { retryAfterSeconds: r.retryAfterSeconds } });
    }
    const sig = { signature: header(req, 'x-ae-signature'), timestamp: header(req, 'x-ae-signature-timestamp') };
    if (principal && (spec.signature === 'required' || sig.signature !== undefined || sig.timestamp !== undefined)) {
      const result = checkSignature({ ...sig, method: req.method, target: req.url, rawBody: req.rawBody, publicKey: principal.signingKeyPublic, nowMs: Date.now() });
      if (!result.ok) throw new AppError(result.code, result.message);
    }

    let finish: ((status: number, body: string) => Promise<void>) | undefined;
    const key = header(req, 'idempotency-key');
    if (key !== undefined && MUTATING.has(req.method)) {
      const scope = principal ? principal.agentId : `anon_${spec.method}_${spec.url.replace(/[^a-z]/gi, '_')}`;
      const outcome = await guards.idempotency.begin(scope, key, IdempotencyStore.fingerprint(req.method, req.url, req.rawBody));
      if (outcome.kind === 'replay') {
        reply.header('idempotent-replayed', 'true');
        return send(reply, outcome.status, outcome.body, spec.raw ? `application/${spec.raw}` : undefined);
      }
      finish = outcome.finish;
    }

    let answer: Answer;
    try {
      answer = await execute(spec, check, req, principal, bus, config);
    } catch (err) {
      const appErr = toAppError(err, req.log as unknown as Logger);
      const res = errorResponse(appErr.status, appErr.entries, req.id);
      reply.headers(res.headers);
      answer = res;
    }
    await finish?.(answer.status, answer.body);
    return send(reply, answer.status, answer.body, answer.type);
  };
}

async function execute(spec: RouteSpec, check: Checks, req: FastifyRequest, principal: Principal | null, bus: Bus, config: ExchangeConfig): Promise<Answer> {
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
  if (!reply.ok) throw Object.assign(AppError.many(reply.errors), { status: reply.status });
  if (spec.raw) return { status: 200, body: JSON.stringify(reply.data), type: `application/${spec.raw}` };
  return { status: reply.status === 200 ? spec.successStatus : reply.status, body: successBody(reply.data, req.id, reply.pagination) };
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
