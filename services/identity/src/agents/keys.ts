import { randomUUID } from 'node:crypto';
import { AppError, events, type identityOps } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { IdentityDeps } from '../context.js';
import { issueApiKey } from '../domain/api-keys.js';
import { didDocument, didWebFor } from '../domain/did.js';
import { mayEditAgent } from '../domain/ownership.js';
import { forgetAfterCommit, markStale, warmKeyCache } from './key-cache.js';
import { findAgent, lookupKey, principalForKey } from './repository.js';

type Ops = typeof identityOps;

/**
 * POST /v1/agents/{id}/keys/rotate (D2.5): the old key is revoked before the answer leaves, on
 * every gateway replica. The stale marker is written before the commit (so a KV outage aborts the
 * rotation instead of leaving the old key cached) and again after it (so a gateway that read the
 * old key while we were committing cannot keep it).
 */
export const rotateKey = (deps: IdentityDeps): OperationHandler<Ops['rotateKey']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const agent = await findAgent(deps.db, path.agentId);
  // D24.5: another account's agent's keys are not its to see: as if the agent did not exist.
  if (!agent || agent.accountId !== caller.accountId) throw new AppError('NOT_FOUND', 'No such agent.');
  if (!mayEditAgent(caller, agent)) throw new AppError('FORBIDDEN', 'You may not rotate the key of this agent.');
  const now = deps.now();
  const key = issueApiKey();
  let oldHashes: string[] = [];
  const reply = await ctx.effect(deps.tx, async (trx, work) => {
    await trx.selectFrom('agents').select('id').where('id', '=', path.agentId).forUpdate().execute();
    const old = await trx.updateTable('apiKeys').set({ revokedAt: now }).where('agentId', '=', path.agentId).where('revokedAt', 'is', null).returning('keyHash').execute();
    await trx.insertInto('apiKeys').values({ id: randomUUID(), agentId: path.agentId, keyHash: key.hash, keyPrefix: key.prefix, createdAt: now, revokedAt: null }).execute();
    work.enqueue(events.agentKeyRotated, { agentId: path.agentId, keyPrefix: key.prefix }, { now });
    oldHashes = old.map((o) => o.keyHash);
    try {
      await markStale(deps.authCache, oldHashes);
    } catch {
      throw new AppError('SERVICE_UNAVAILABLE', 'The key cache is unreachable; the key was not rotated.');
    }
    // Before the commit too, as the marker: should this process die before telling them afterwards,
    // no gateway still holds the old key's principal (docs/gateway-caches.md).
    await deps.replicas.forget({ keyHashes: oldHashes });
    return { data: { apiKey: key.plaintext, keyPrefix: key.prefix, expiresAt: null } };
  });
  // The profile shows the key's prefix; the old key's principal must go everywhere (D2.5).
  await forgetAfterCommit(deps, { keyHashes: oldHashes, agentIds: [path.agentId] }, ctx.logger);
  await warmKeyCache(deps.authCache, key.hash, await principalForKey(deps.db, key.hash));
  return reply;
};

/**
 * Internal: the principal of a key hash, or null (the gateway then answers 401 and remembers the key
 * as unknown). A child's key waiting for its budget is refused with an error instead: it is about to
 * become valid, and a gateway must not remember it as unknown (D6.8).
 */
export const authenticate = (deps: IdentityDeps): OperationHandler<Ops['authenticate']> => async ({ body }) => {
  const found = await lookupKey(deps.db, body.keyHash);
  if (found.pending) throw new AppError('UNAUTHENTICATED', 'This child agent’s budget is still being moved; its key works once that is done.');
  return { data: found.principal };
};

/** D6.7: the DID document, every registered key with revoked ones marked. */
export const getDidDocument = (deps: IdentityDeps): OperationHandler<Ops['getDidDocument']> => async ({ path }) => {
  const agent = await deps.db.selectFrom('agents').select('id').where('id', '=', path.agentId).executeTakeFirst();
  if (!agent) throw new AppError('NOT_FOUND', 'No such agent.');
  const keys = await deps.db.selectFrom('signingKeys').select(['publicKey', 'createdAt', 'revokedAt']).where('agentId', '=', path.agentId).orderBy('createdAt').orderBy('id').execute();
  const base = deps.config.PUBLIC_BASE_URL;
  return { data: didDocument({ did: didWebFor(base, agent.id), profileUrl: `${base}/v1/agents/${agent.id}`, keys }) };
};
