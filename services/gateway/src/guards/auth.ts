import { createHash, timingSafeEqual } from 'node:crypto';
import { API_KEY_PATTERN, AppError, AUTH_CACHE, hashApiKey, identityOps, Principal, validator, type Principal as PrincipalT } from '@aex/contracts';
import { callOperation, type Bus, type KvStore } from '@aex/platform';

const principalCheck = validator(Principal);
const unauthenticated = (message: string) => new AppError('UNAUTHENTICATED', message);

/**
 * API-key authentication (D2) with the shared key cache (D2.5, docs/auth-cache.md): a KV hit is used
 * as is; a miss or a `stale` marker asks identity, and the answer is cached with compare-and-set
 * against the revision read first — so a marker written by a concurrent revocation always wins.
 */
export class ApiKeyAuthenticator {
  private constructor(private readonly bus: Bus, private readonly cache: KvStore, private readonly timeoutMs: number) {}

  static async create(bus: Bus, timeoutMs: number): Promise<ApiKeyAuthenticator> {
    return new ApiKeyAuthenticator(bus, await bus.kv(AUTH_CACHE.bucket(bus.namespace), { ttlMs: AUTH_CACHE.ttlMs }), timeoutMs);
  }

  async authenticate(authorization: string | undefined, requestId: string): Promise<PrincipalT> {
    const match = /^Bearer (\S+)$/.exec(authorization ?? '');
    if (!match) throw unauthenticated('An Authorization: Bearer <API key> header is required.');
    const key = match[1]!;
    if (!API_KEY_PATTERN.test(key)) throw unauthenticated('The API key is malformed.');
    const hash = hashApiKey(key);
    const entry = await this.cache.get(hash).catch(() => undefined);
    if (entry && entry.value !== AUTH_CACHE.staleMarker) {
      const cached = principalCheck.check(JSON.parse(entry.value));
      if (cached.ok) return cached.value;
    }
    const reply = await callOperation(this.bus, identityOps.authenticate, { ctx: { requestId, principal: null }, input: { path: {}, query: {}, body: { keyHash: hash } } }, { timeoutMs: this.timeoutMs });
    if (!reply.ok) throw AppError.many(reply.errors);
    const principal = reply.data === null ? null : principalCheck.check(reply.data);
    if (!principal || !principal.ok) throw unauthenticated('The API key is unknown or has been revoked.');
    const json = JSON.stringify(principal.value);
    const store = entry ? this.cache.update(hash, json, entry.revision) : this.cache.create(hash, json);
    // A lost compare-and-set means identity marked the key meanwhile; a cache that cannot be written
    // only costs a lookup next time. Either way this request is answered with what identity said.
    await store.catch(() => undefined);
    return principal.value;
  }
}

/** D15.3: operator bearer token, compared in constant time. */
export function checkAdminToken(configured: string | undefined, authorization: string | undefined): void {
  if (!configured) throw new AppError('NOT_FOUND', 'No such route.');
  const match = /^Bearer (\S+)$/.exec(authorization ?? '');
  const given = createHash('sha256').update(match?.[1] ?? '').digest();
  const expected = createHash('sha256').update(configured).digest();
  if (!match || !timingSafeEqual(given, expected)) throw unauthenticated('The operator token is missing or wrong.');
}
