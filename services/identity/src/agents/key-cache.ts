import { AUTH_CACHE, type CacheInvalidation, type Principal } from '@aex/contracts';
import type { KvStore, Logger } from '@aex/platform';
import type { IdentityDeps } from '../context.js';

/**
 * D2.5: makes every gateway replica forget the cached principal of these keys. A `stale` marker
 * (not a delete) is written so a gateway that read identity before our commit cannot re-cache what
 * it read: its compare-and-set on the older revision fails (docs/auth-cache.md).
 */
export async function markStale(cache: KvStore, hashes: string[]): Promise<void> {
  for (const h of hashes) await cache.put(h, AUTH_CACHE.staleMarker);
}

/**
 * After a commit that changed agents, their keys or an account's default rules: the shared cache's
 * markers for the keys, then every replica in the registry (gateways, transactions) forgets the
 * keys' principals and what it keeps about the agents and accounts (`ReplicaCaches`). Awaited before
 * the change is answered, so the next request sees it anywhere.
 */
export async function forgetAfterCommit(deps: Pick<IdentityDeps, 'authCache' | 'replicas'>, what: Partial<CacheInvalidation>, logger: Logger): Promise<void> {
  if (what.keyHashes?.length) await markStaleAfterCommit(deps.authCache, what.keyHashes, logger);
  await deps.replicas.forget(what);
}

/**
 * A write answered again under its key without its handler running (`replayed`, rpc.ts): the
 * replica that committed it may have died before telling the caches, so what the write's path names
 * is forgotten again — the agent, with every key of it a cache may still hold (revoked within the
 * cache's TTL: a rotation's old key), or the account.
 */
export async function forgetReplayed(deps: Pick<IdentityDeps, 'authCache' | 'replicas' | 'db' | 'now'>, input: unknown, logger: Logger): Promise<void> {
  const path = (input as { path?: Record<string, unknown> } | null)?.path ?? {};
  const agentId = typeof path.agentId === 'string' ? path.agentId : undefined;
  const accountId = typeof path.accountId === 'string' ? path.accountId : undefined;
  if (!agentId && !accountId) return;
  const cachedSince = new Date(deps.now().getTime() - AUTH_CACHE.ttlMs);
  const keys = agentId
    ? await deps.db.selectFrom('apiKeys').select('keyHash').where('agentId', '=', agentId)
      .where((eb) => eb.or([eb('revokedAt', 'is', null), eb('revokedAt', '>', cachedSince)])).execute()
    : [];
  await forgetAfterCommit(deps, { keyHashes: keys.map((k) => k.keyHash), agentIds: agentId ? [agentId] : [], ...(accountId && { accountIds: [accountId] }) }, logger);
}

/** After a commit: retried until it lands, because a missed marker keeps a principal cached up to the TTL. */
async function markStaleAfterCommit(cache: KvStore, hashes: string[], logger: Logger): Promise<void> {
  for (let attempt = 0; attempt < 8; attempt++) {
    try {
      await markStale(cache, hashes);
      return;
    } catch (err) {
      logger.warn({ err, attempt }, 'could not mark API keys stale; retrying');
      await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
    }
  }
  logger.error({ keys: hashes.length }, 'API keys could not be marked stale; gateway caches expire within the TTL');
}

/**
 * After a key is issued (sign-up, new agent, rotation): the principal goes into the shared cache at
 * once, so the key's first request needs no lookup — and costs its client no token of the
 * failed-authentication budget. `create` only: a stale marker written meanwhile (a revocation) wins.
 */
export async function warmKeyCache(cache: KvStore, hash: string, principal: Principal | null): Promise<void> {
  if (principal) await cache.create(hash, JSON.stringify(principal)).catch(() => undefined);
}
