import { API_KEY_PATTERN, AppError, AUTH_CACHE, hashApiKey, identityOps, Principal, validator, type Principal as PrincipalT } from '@aex/contracts';
import { agentTag, callOperation, keyTag, LocalCache, sameSecret, within, type Bus, type CacheMembership, type KvStore } from '@aex/platform';
import type { AuthFailures } from './auth-failures.js';

const principalCheck = validator(Principal);
const unauthenticated = (message: string) => new AppError('UNAUTHENTICATED', message);

/** Unknown key hashes remembered by one gateway replica (no key can become valid: keys are random). */
const NEGATIVE_CACHE_SIZE = 10_000;
const NEGATIVE_CACHE_TTL_MS = 10 * 60_000;
/** Principals held in the replica's own memory (docs/gateway-caches.md). */
const LOCAL_PRINCIPALS = { maxEntries: 100_000, ttlMs: AUTH_CACHE.ttlMs };
/**
 * Longest a request waits for the shared cache: past it, identity is asked (a bucket electing its
 * leader would otherwise hold every uncached key for nats.js's 5 s).
 */
const SHARED_CACHE_MS = 1_000;

/**
 * API-key authentication (D2) with two caches (D2.5). The replica's own memory answers without a
 * round trip; identity makes every replica forget a principal before it answers the change
 * (docs/gateway-caches.md). Behind it, the shared KV cache (docs/auth-cache.md): a hit is used as
 * is; a miss or a `stale` marker asks identity, and the answer is cached with compare-and-set against
 * the revision read first — so a marker written by a concurrent revocation always wins.
 *
 * Keys that are not cached cost identity a database query, so guessing is bounded twice: an unknown
 * key hash is remembered locally (answered 401 without asking again), and every lookup of an
 * uncached key takes a token from the client address's failed-authentication limit (D24.1,
 * auth-failures.ts) — given back when the key turns out valid — so one client cannot make identity
 * look up more than that many per minute (429 beyond, with the D4.3 headers). Past that limit every
 * key from the address is refused, one held in memory included.
 */
export class ApiKeyAuthenticator {
  private readonly unknownKeys = new Map<string, number>();
  private readonly local: LocalCache<PrincipalT>;

  private constructor(
    private readonly bus: Bus,
    private readonly cache: KvStore,
    private readonly failures: AuthFailures,
    private readonly timeoutMs: number,
    membership: CacheMembership,
  ) {
    this.local = new LocalCache(membership, LOCAL_PRINCIPALS);
  }

  static async create(bus: Bus, failures: AuthFailures, timeoutMs: number, membership: CacheMembership): Promise<ApiKeyAuthenticator> {
    return new ApiKeyAuthenticator(bus, await bus.kv(AUTH_CACHE.bucket(bus.namespace), { ttlMs: AUTH_CACHE.ttlMs }), failures, timeoutMs, membership);
  }

  async authenticate(authorization: string | undefined, requestId: string, clientIp: string): Promise<PrincipalT> {
    let hash: string;
    try {
      hash = keyHashOf(authorization);
    } catch (err) {
      // No header is no guess; a malformed key is a failed one (D24.1).
      if (authorization === undefined) throw err;
      return this.failures.failed(clientIp, err as AppError);
    }
    return this.authenticateHash(hash, requestId, clientIp);
  }

  /**
   * The principal of the Authorization header when this replica holds it in memory, without a
   * promise (the authenticated read's hot path); undefined when it must be looked up (`authenticate`).
   */
  fromMemory(authorization: string | undefined, clientIp: string): PrincipalT | undefined {
    this.failures.check(clientIp);
    let hash: string;
    try {
      hash = keyHashOf(authorization);
    } catch {
      return undefined; // `authenticate` answers a malformed key, counting it (D24.1)
    }
    const known = this.local.get(hash);
    return known && unexpired(known);
  }

  /**
   * The principal of the API key whose hash is `hash`: what a console session holds instead of the
   * key itself, authorized afresh on every request (a rotated or revoked key ends the session).
   */
  async authenticateHash(hash: string, requestId: string, clientIp: string): Promise<PrincipalT> {
    this.failures.check(clientIp);
    const known = this.local.get(hash);
    if (known) return unexpired(known);
    const fill = this.local.begin();
    const remember = (p: PrincipalT) => fill(hash, [keyTag(hash), agentTag(p.agentId)], p);
    const entry = await within(this.cache.get(hash), SHARED_CACHE_MS, 'the API-key cache').catch(() => undefined);
    if (entry && entry.value !== AUTH_CACHE.staleMarker) {
      const cached = principalCheck.check(JSON.parse(entry.value));
      if (cached.ok) {
        remember(cached.value);
        return unexpired(cached.value);
      }
    }
    const taken = await this.failures.take(clientIp);
    if (this.isKnownUnknown(hash)) {
      this.failures.failedAfter(clientIp, taken);
      throw unauthenticated('The API key is unknown or has been revoked.');
    }
    const reply = await callOperation(this.bus, identityOps.authenticate, { ctx: { requestId, principal: null }, input: { path: {}, query: {}, body: { keyHash: hash } } }, { timeoutMs: this.timeoutMs });
    if (!reply.ok) throw AppError.many(reply.errors);
    const principal = reply.data === null ? null : principalCheck.check(reply.data);
    if (!principal || !principal.ok) {
      this.rememberUnknown(hash);
      this.failures.failedAfter(clientIp, taken);
      throw unauthenticated('The API key is unknown or has been revoked.');
    }
    this.failures.succeeded(clientIp);
    const json = JSON.stringify(principal.value);
    const store = entry ? this.cache.update(hash, json, entry.revision) : this.cache.create(hash, json);
    // A lost compare-and-set means identity marked the key meanwhile; a cache that cannot be written
    // only costs a lookup next time. Either way this request is answered with what identity said.
    await within(store, SHARED_CACHE_MS, 'the API-key cache').catch(() => undefined);
    remember(principal.value);
    return unexpired(principal.value);
  }

  private isKnownUnknown(hash: string): boolean {
    const until = this.unknownKeys.get(hash);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.unknownKeys.delete(hash);
    return false;
  }

  private rememberUnknown(hash: string): void {
    // A Map iterates in insertion order: the oldest entry goes first when the cache is full.
    if (this.unknownKeys.size >= NEGATIVE_CACHE_SIZE) this.unknownKeys.delete(this.unknownKeys.keys().next().value!);
    this.unknownKeys.set(hash, Date.now() + NEGATIVE_CACHE_TTL_MS);
  }
}

/** The hash of the Authorization header's API key (401 when there is none, or it is malformed). */
function keyHashOf(authorization: string | undefined): string {
  const key = authorization?.startsWith('Bearer ') ? authorization.slice(7) : undefined;
  if (key === undefined || key.length === 0 || /\s/.test(key)) throw unauthenticated('An Authorization: Bearer <API key> header is required.');
  if (!API_KEY_PATTERN.test(key)) throw unauthenticated('The API key is malformed.');
  return hashApiKey(key);
}

/** D6.8: a child's key stops at its `expiresAt`, whatever the cache holds (identity marks it expired within a second). */
function unexpired(p: PrincipalT): PrincipalT {
  if (p.expiresAt && Date.parse(p.expiresAt) <= Date.now()) throw unauthenticated('This child agent has expired; its API key no longer authenticates.');
  return p;
}

/**
 * D15.3: the operator token given (a bearer token, or the console's sign-in), compared in constant
 * time; a wrong one takes from the address's failed-authentication limit (D24.1).
 */
export async function checkAdminToken(configured: string | undefined, given: string | undefined, failures: AuthFailures, clientIp: string): Promise<void> {
  failures.check(clientIp);
  if (!configured) throw new AppError('NOT_FOUND', 'No such route.');
  if (given === undefined) throw unauthenticated('The operator token is missing or wrong.');
  if (!sameSecret(given, configured)) await failures.failed(clientIp, unauthenticated('The operator token is missing or wrong.'));
}
