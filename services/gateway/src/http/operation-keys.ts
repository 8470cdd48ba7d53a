import { createHash, randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AppError, type IdempotencyContext, type Principal } from '@aex/contracts';
import { operationScope } from '@aex/platform';
import { routes, type RouteSpec } from './routes.js';

/**
 * A write's operation key (D5): the client's Idempotency-Key in the caller's scope, or — for a write
 * sent without one — a key the gateway made (`made`), in the operation scope of the caller.
 */
export interface OperationKey {
  ctx: IdempotencyContext;
  made: boolean;
}

const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
/** D5.1: 1–255 printable ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
/** How the keys the gateway makes begin; a client repeating one with this prefix is in their scope. */
export const MADE_KEY_PREFIX = 'aex-op-';

/**
 * Every write carries an operation key to its owner, so that the gateway can ask the owner again
 * when the first copy is not answered (docs/idempotency.md "When a replica dies"). The client's
 * Idempotency-Key is scoped to the agent; for an unauthenticated route (sign-up) to the route and
 * the client's IP, so a stored answer — which holds a new API key — is only ever given again to a
 * repeat from where the first came. A write sent without one gets a key the gateway makes
 * (`aex-op-<uuid>`), in the operation scope apart from the client's keys; its first copy records
 * it with its effect, without a claim. A client that repeats a made key (given back with a 202 whose
 * outcome was unknown) repeats it in that same scope.
 */
export function operationKeyOf(spec: RouteSpec, req: FastifyRequest, principal: Principal | null): OperationKey | undefined {
  if (!MUTATING.has(req.method)) return undefined;
  const sent = req.headers['idempotency-key'];
  const key = Array.isArray(sent) ? sent[0] : sent;
  if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
    throw new AppError('VALIDATION_ERROR', 'Idempotency-Key must be 1–255 printable ASCII characters.', { field: '/headers/idempotency-key' });
  }
  const clientScope = principal ? `agent:${principal.agentId}` : spec.auth === 'admin' ? 'operator' : `anonymous:${spec.method} ${spec.url}:${req.ip}`;
  const bodyHash = createHash('sha256').update(req.rawBody ?? '').digest('hex');
  const fingerprint = createHash('sha256').update(`${req.method}\n${req.url}\n${bodyHash}`).digest('hex');
  if (key === undefined) return { ctx: { key: `${MADE_KEY_PREFIX}${randomUUID()}`, scope: operationScope(clientScope), fingerprint, firstCopy: true }, made: true };
  return { ctx: { key, scope: key.startsWith(MADE_KEY_PREFIX) ? operationScope(clientScope) : clientScope, fingerprint }, made: false };
}

let readable: Set<string> | undefined;

/**
 * The headers of a 202 whose outcome is unknown: the key to repeat the request with and when (the
 * client's, or the one the gateway made), and where the resource can be read when the route acts on
 * one (the path up to its last parameter, when a GET route serves it).
 */
export function outcomeUnknownHeaders(spec: RouteSpec, req: FastifyRequest, key: OperationKey | undefined): Record<string, string> {
  const headers: Record<string, string> = key ? { 'idempotency-key': key.ctx.key, 'retry-after': '1' } : {};
  const parts = spec.url.split('/');
  let last = -1;
  parts.forEach((p, i) => p.startsWith(':') && (last = i));
  if (last < 0) return headers;
  const resource = parts.slice(0, last + 1).join('/');
  readable ??= new Set(routes.filter((r) => r.method === 'GET').map((r) => r.url));
  if (!readable.has(resource)) return headers;
  const params = (req.params ?? {}) as Record<string, string>;
  headers.location = resource.replace(/:([A-Za-z]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
  return headers;
}
