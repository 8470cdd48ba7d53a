import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { AppError, validator, type ErrorEntry, type Principal, type RequestSignature, type TSchema } from '@aex/contracts';
import { bearerToken, callOperation, OUTCOME_UNKNOWN_STATUS, type Bus, type ExchangeConfig, type Logger } from '@aex/platform';
import type { LocalCache } from '@aex/platform';
import type { ApiKeyAuthenticator } from '../guards/auth.js';
import type { AuthFailures } from '../guards/auth-failures.js';
import type { IdempotencyKeyBinding } from '../guards/idempotency-keys.js';
import type { UsedSignatures } from '../guards/used-signatures.js';
import { refuseUnseenResource } from '../guards/resource-access.js';
import { checkAdminToken } from '../guards/auth.js';
import { RateLimitedError, type LimitDecision, type RateLimiter } from '../guards/rate-limit.js';
import { errorResponse, successBody, successBodyOfJson, toAppError, type Meta } from './envelope.js';
import { valuesProblem } from './input-hygiene.js';
import { operationKeyOf, outcomeUnknownHeaders, type OperationKey } from './operation-keys.js';
import { protocolView } from './protocol.js';
import { carriesSignature, verifiedSignature } from './request-signature.js';
import { coerceQuery, isMalformedQuery } from './query-string.js';
import type { RouteSpec } from './routes.js';
import { CONSOLE_COOKIE, cookieOf, requireCsrf, type ConsoleSessions } from '../console/sessions.js';
import { liveSession } from '../console/session-liveness.js';

export interface Guards {
  auth: ApiKeyAuthenticator;
  /** D24.1: the failed-authentication limit per client address, shared by every secret checked. */
  failures: AuthFailures;
  limiter: RateLimiter;
  /** D5.6: each Idempotency-Key bound to the first request that used it, across services. */
  keys: IdempotencyKeyBinding;
  /** D24.2: each signature accepted once, across replicas. */
  signatures: UsedSignatures;
  /** Answers of `localCache` routes, as the JSON of their `data` (docs/gateway-caches.md). */
  views: LocalCache<string>;
  /** The web console's sessions (docs/console.md). */
  console: ConsoleSessions;
}

interface Answer {
  status: number;
  body: string;
  type?: string;
  headers?: Record<string, string>;
}

const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

export const send = (reply: FastifyReply, status: number, body: string, type = 'application/json; charset=utf-8') => reply.code(status).type(type).send(body);

/**
 * The handler of one route, in the order of D1.4: authentication (D2), rate limit (D4), signature
 * (D3), then validation of path, query and body against the contract, and the call to the owning
 * service — which, for a request with an Idempotency-Key, records the key with its effect and
 * answers a repeat itself (D5.4, D5.5). What the gateway refuses never reaches a service and is
 * never stored under a key.
 */
export function routeHandler(spec: RouteSpec, guards: Guards, bus: Bus, config: ExchangeConfig): RouteHandlerMethod {
  const check = compileChecks(spec);
  /** Signature, validation and the owner's answer, once the caller is known and admitted. */
  const answer = async (req: FastifyRequest, reply: FastifyReply, principal: Principal | null) => {
    const signed = principal ? verifiedSignature(req, principal, spec.signature === 'required', config) : undefined;
    const idempotency = operationKeyOf(spec, req, principal);
    // D24.2: a used signature is refused — unless the request repeats its first one's Idempotency-Key,
    // which the key's owner answers with the stored answer (D5).
    if (signed) await guards.signatures.use(signed.use, req.id, idempotency && !idempotency.made ? idempotency.ctx : undefined);
    const signature = signed?.view;
    let answer: Answer;
    try {
      answer = await execute(spec, check, req, principal, signature, idempotency, guards, bus, config);
    } catch (err) {
      const appErr = toAppError(err, req.log as unknown as Logger);
      answer = errorResponse(appErr.status, appErr.entries, req.id);
    }
    if (answer.headers) reply.headers(answer.headers);
    return send(reply, answer.status, answer.body, answer.type);
  };
  /** The rate limit (D4), then the answer: sent at once when this replica remembers it. */
  const admitted = (req: FastifyRequest, reply: FastifyReply, principal: Principal | null): Promise<unknown> | undefined => {
    if (spec.rateGroup) {
      const decision = guards.limiter.decide(spec.rateGroup, principal ? principal.agentId : req.ip);
      if (decision instanceof Promise) return decision.then((r) => (admit(r, reply), answer(req, reply, principal)));
      admit(decision, reply);
    }
    return answerRemembered(spec, check, req, reply, principal, guards) ? undefined : answer(req, reply, principal);
  };
  // An API key this replica holds, a bucket it holds tokens of and an answer it remembers are served
  // in the turn of the event loop the request came in, without a promise: the authenticated read's
  // hot path. Anything else takes the same steps asynchronously.
  return (req, reply) => {
    const authorization = spec.auth === 'agent' ? req.headers.authorization : undefined;
    const principal = authorization !== undefined ? guards.auth.fromMemory(authorization, req.ip) : undefined;
    if (principal !== undefined) return admitted(req, reply, principal);
    return callerOf(spec, req, reply, guards, config).then((p) => admitted(req, reply, p));
  };
}

/** D4.3 headers of an admitted request, or its 429. */
function admit(r: LimitDecision, reply: FastifyReply): void {
  if (!r.allowed) throw new RateLimitedError('Too many requests; retry later.', r);
  reply.headers(r.headers);
}

/**
 * Sends the answer of a `localCache` route this replica remembers (docs/gateway-caches.md), when the
 * request is a plain valid one (unsigned, no Idempotency-Key): true when sent. Anything else — an
 * invalid request included — is left to `execute`, which answers it in full.
 */
function answerRemembered(spec: RouteSpec, check: Checks, req: FastifyRequest, reply: FastifyReply, principal: Principal | null, guards: Guards): boolean {
  if (!spec.localCache || !principal || spec.signature === 'required' || MUTATING.has(req.method)) return false;
  if (carriesSignature(req)) return false;
  let input;
  try {
    input = checkInput(spec, check, req);
  } catch {
    return false;
  }
  const hit = guards.views.get(spec.localCache(input as { path: Record<string, string> }, principal).key);
  if (hit === undefined) return false;
  send(reply, spec.successStatus, successBodyOfJson(hit, req.id));
  return true;
}

/**
 * Who calls (D2, D15.3): the API key or operator token of the Authorization header, or — without
 * one — the web console's session of the cookie, authorized exactly as its key or token would be,
 * with its CSRF token required on every request that changes something (docs/console.md). A
 * console's answer is never stored by a cache (`no-store`).
 */
async function callerOf(spec: RouteSpec, req: FastifyRequest, reply: FastifyReply, guards: Guards, config: ExchangeConfig): Promise<Principal | null> {
  const sessionId = spec.auth !== 'none' && req.headers.authorization === undefined ? cookieOf(req.headers.cookie, CONSOLE_COOKIE) : undefined;
  if (sessionId === undefined) {
    if (spec.auth === 'agent') return guards.auth.authenticate(req.headers.authorization, req.id, req.ip);
    if (spec.auth === 'admin') await checkAdminToken(config.ADMIN_TOKEN, bearerToken(req.headers.authorization), guards.failures, req.ip);
    return null;
  }
  reply.header('cache-control', 'no-store').header('vary', 'Cookie');
  // A session whose key or token no longer holds ends here (D24.3).
  const live = await liveSession(req, reply, guards, config);
  if (!live) throw new AppError('UNAUTHENTICATED', 'The console session has ended; sign in again.');
  const { session, principal } = live;
  if (MUTATING.has(req.method)) requireCsrf(header(req, 'x-csrf-token'), session);
  if (spec.auth === 'agent') {
    if (!principal) throw new AppError('FORBIDDEN', 'An operator\'s console session does not act as an agent.');
    return principal;
  }
  if (!config.ADMIN_TOKEN) throw new AppError('NOT_FOUND', 'No such route.');
  if (session.kind !== 'operator') throw new AppError('UNAUTHENTICATED', 'The operator token is missing or wrong.');
  return null;
}

async function execute(
  spec: RouteSpec, check: Checks, req: FastifyRequest, principal: Principal | null, signature: RequestSignature | undefined, idempotency: OperationKey | undefined, guards: Guards, bus: Bus, config: ExchangeConfig,
): Promise<Answer> {
  if (!spec.op) return { status: 200, body: successBody(protocolView(config), req.id) };
  let input: ReturnType<typeof checkInput>;
  try {
    input = checkInput(spec, check, req);
  } catch (err) {
    // D24.5: who may act on the resource is decided before the body: an invalid request for what
    // the caller may not see or change gets the 404 or 403 a valid one would.
    if (principal) await refuseUnseenResource(spec, (req.params ?? {}) as Record<string, unknown>, principal, req.id, bus, config);
    throw err;
  }
  // Bound only once the request is valid: what the gateway refuses is never stored under a key (D5.4).
  // A key the gateway made is new: nothing else can have used it.
  if (idempotency && !idempotency.made) await guards.keys.bind(idempotency.ctx);
  const views = guards.views;
  const cached = spec.localCache && principal ? spec.localCache(input as { path: Record<string, string> }, principal) : undefined;
  if (cached) {
    const hit = views.get(cached.key);
    if (hit !== undefined) return { status: spec.successStatus, body: successBodyOfJson(hit, req.id) };
  }
  const fill = cached ? views.begin() : undefined;
  const reply = await callOperation(bus, spec.op, { ctx: { requestId: req.id, principal, admin: spec.auth === 'admin', ...(signature ? { signed: true, signature } : {}), ...(idempotency ? { idempotency: idempotency.ctx } : {}) }, input }, { timeoutMs: config.RPC_TIMEOUT_MS });
  // Only a plain answer is kept: no stored replay, no pagination, no meta of its own.
  if (fill && cached && reply.ok && reply.status === 200 && !reply.replayed && !reply.meta && !reply.pagination) fill(cached.key, cached.tags, JSON.stringify(reply.data));
  const meta: string | Meta = reply.meta ?? req.id;
  const replayed: Record<string, string> = reply.replayed ? { 'idempotent-replayed': 'true' } : {};
  if (!reply.ok && reply.status === OUTCOME_UNKNOWN_STATUS) {
    const res = errorResponse(reply.status, reply.errors, meta);
    return { ...res, headers: { ...res.headers, ...outcomeUnknownHeaders(spec, req, idempotency) } };
  }
  if (!reply.ok) {
    const res = errorResponse(reply.status, reply.errors, meta);
    return { ...res, headers: { ...res.headers, ...replayed } };
  }
  if (spec.raw) return { status: 200, body: JSON.stringify(reply.data), type: `application/${spec.raw}` };
  return { status: reply.status === 200 ? spec.successStatus : reply.status, body: successBody(reply.data, meta, reply.pagination), headers: replayed };
}

/** Path, query and body against the operation's contract, after the edge's hygiene rules. */
function checkInput(spec: RouteSpec, check: Checks, req: FastifyRequest) {
  const params = (req.params ?? {}) as Record<string, unknown>;
  const query = (req.query ?? {}) as Record<string, unknown>;
  if (isMalformedQuery(query)) throw new AppError('VALIDATION_ERROR', 'The query string is not valid percent-encoded UTF-8.', { field: '/query' });
  hygiene('path', params);
  hygiene('query', query);
  const errors: ErrorEntry[] = [];
  const part = (v: ReturnType<Checks['path']['check']>) => (v.ok ? v.value : (errors.push(...v.errors), {}));
  const input = {
    path: part(check.path.check(params, '/path')),
    query: part(check.query.check(coerceQuery(check.query.schema, query), '/query')),
    body: spec.stripeEvent
      ? part(check.body.check({ payload: req.rawBody?.toString('utf8') ?? '', signature: header(req, 'stripe-signature') ?? '' }, '/body'))
      : spec.body ? part(check.body.check(req.body === undefined && spec.body === 'optional' ? {} : req.body, '/body')) : {},
  };
  if (errors.length > 0) throw AppError.many(errors.slice(0, 20));
  return input;
}

/** The edge's hygiene rules on the values of the path or the query. */
function hygiene(part: 'path' | 'query', values: Record<string, unknown>): void {
  const problem = valuesProblem(values);
  if (problem) throw new AppError('VALIDATION_ERROR', `"/${part}${problem.pointer}" ${problem.message}.`, { field: `/${part}${problem.pointer}` });
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
    query: validator(props.query ?? empty),
    body: validator(props.body ?? empty),
  };
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
