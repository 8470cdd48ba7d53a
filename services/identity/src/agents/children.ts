import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import {
  AppError, childSaga, CHILD_LIFETIME_HOURS, events, walletOps,
  type identityOps, type MessageData, type WalletView,
} from '@aex/contracts';
import { awaitState, callOperation, consumeIdempotently, requireActive, requireAgent, type OperationHandler, type Stoppable, type UnitOfWork } from '@aex/platform';
import type { IdentityDeps } from '../context.js';
import type { AgentRow, Database } from '../db/schema.js';
import { issueApiKey } from '../domain/api-keys.js';
import { mayGovernAgent } from '../domain/ownership.js';
import { forgetAfterCommit, warmKeyCache } from './key-cache.js';
import { clampForChild } from './effective-delegation.js';
import { agentFacts, announceAgent, findAgent, insertAgent, principalOf, takeAgentPlace } from './repository.js';
import { fullAgentView } from './views.js';

type Trx = Transaction<Database>;
const HOUR_MS = 3_600_000;

/**
 * Child agents (D6.8). A spawn commits the child together with the `allocate` command in identity's
 * outbox; the wallet service opens the child's wallet with the budget moved from the parent's in one
 * database transaction, or refuses (the parent's available balance is short), and that first
 * decision is final. Until the wallet answers, the child's key does not authenticate. Funded: the
 * child is announced (`agent.created`). Refused: the child is deleted — no child exists, the spawn
 * answers 402. At `expiresAt` the sweep marks it `expired` (its key → 401) and sends `close`: the
 * wallet returns the child's available balance to the parent, and whatever reaches the child later.
 * Every step is a committed row plus an outbox message, so a crash anywhere resumes (docs/children.md).
 */

/** POST /v1/agents/{id}/spawn: the agent itself or its account's owner agent. */
export const spawnAgent = (deps: IdentityDeps): OperationHandler<typeof identityOps['spawnAgent']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  const parent = await findAgent(deps.db, path.agentId);
  if (!parent) throw new AppError('NOT_FOUND', 'No such agent.');
  const self = caller.agentId === parent.id;
  if (!self && !mayGovernAgent(caller, parent)) throw new AppError('FORBIDDEN', 'Only the agent itself or its account’s owner agent may spawn children of it.');
  if (parent.parentAgentId) throw new AppError('FORBIDDEN', 'A child agent cannot spawn children.');
  requireActive(caller);
  if (parent.status !== 'active') throw new AppError('AGENT_INACTIVE', 'A deactivated agent cannot spawn children.', { details: { status: parent.status } });
  // A parent's rules were set by the owner: only the owner may let a child start from the account's.
  if (body.inheritDelegation === false && !caller.isOwner) {
    throw new AppError('FORBIDDEN', 'Only the owner agent may spawn a child that does not inherit its parent’s delegation rules.', { field: '/body/inheritDelegation' });
  }
  if (!parent.walletOpenedAt) {
    throw new AppError('INVALID_STATE', 'The parent’s wallet is still being opened; spawn again in a moment.', { details: { status: parent.status, wallet: 'opening' } });
  }
  const inheritDelegation = body.inheritDelegation ?? true;
  // Looser values than the rules it starts from are clamped (D6.8).
  const delegation = await clampForChild(deps.db, { accountId: parent.accountId, parentAgentId: parent.id, inheritDelegation }, body.delegation ?? {});
  const now = deps.now();
  const id = randomUUID();
  const key = issueApiKey();
  const budgetCents = body.budgetCents ?? 0;
  const expiresAt = new Date(now.getTime() + (body.maxLifetimeHours ?? CHILD_LIFETIME_HOURS.default) * HOUR_MS);
  const created = await ctx.effect(deps.tx, async (trx, work) => {
    await takeAgentPlace(trx, parent.accountId, deps.config.MAX_AGENTS_PER_ACCOUNT);
    await insertAgent(trx, work, {
      id, accountId: parent.accountId, isOwner: false, name: body.name, agentType: 'ephemeral', description: body.description, delegation, now,
      child: { parentAgentId: parent.id, expiresAt, budgetCents, inheritDelegation },
    }, key);
    requestChildWallet(work, { id, accountId: parent.accountId, parentAgentId: parent.id, spawnBudgetCents: budgetCents });
    const child = (await findAgent(trx, id))!;
    // D9.9 applied to spawns: until the wallet saga decides, the answer is 202 and the key waits.
    return { status: 202, data: { ...fullAgentView(child, deps.config.PUBLIC_BASE_URL), apiKey: key.plaintext, wallet: null } };
  });
  const decided = await awaitSpawn(deps, id, deps.config.SAGA_WAIT_MS);
  if (decided.state === 'refused') {
    // The refusal is the answer stored under the request's Idempotency-Key (a second effect, D5.3).
    return ctx.effect(deps.tx, async () => {
      throw new AppError('INSUFFICIENT_FUNDS', `The parent’s available balance is too low to give the child ${budgetCents} cents; no child was created.`, {
        details: { availableCents: decided.availableCents, requiredCents: budgetCents },
      });
    });
  }
  if (decided.state === 'pending') return created;
  const principal = principalOf(decided.agent);
  await warmKeyCache(deps.authCache, key.hash, principal);
  const wallet = await childWallet(deps, ctx.requestId, principal!);
  return { ...created, status: 201, data: { ...fullAgentView(decided.agent, deps.config.PUBLIC_BASE_URL), apiKey: key.plaintext, wallet } };
};

/** The child's wallet as its owner reads it; null when the wallet service does not answer in time. */
async function childWallet(deps: IdentityDeps, requestId: string, principal: NonNullable<ReturnType<typeof principalOf>>): Promise<WalletView | null> {
  const reply = await callOperation(deps.bus, walletOps.getWallet, {
    ctx: { requestId, principal },
    input: { path: { agentId: principal.agentId }, query: {}, body: {} },
  }, { timeoutMs: deps.config.RPC_TIMEOUT_MS });
  return reply.ok ? reply.data : null;
}

/** The saga's command for a child (also sent again by the wallet re-drive, `wallet-saga.ts`). */
export function requestChildWallet(work: UnitOfWork, child: Pick<AgentRow, 'id' | 'accountId'> & { parentAgentId: string; spawnBudgetCents?: number | null }): void {
  work.enqueue(childSaga.allocate, { childAgentId: child.id, parentAgentId: child.parentAgentId, accountId: child.accountId, budgetCents: Number(child.spawnBudgetCents ?? 0) });
}

type SpawnState =
  | { state: 'funded'; agent: NonNullable<Awaited<ReturnType<typeof findAgent>>> }
  | { state: 'refused'; availableCents: number }
  | { state: 'pending' };

/** Waits up to `ms` for the wallet's decision on a spawned child, woken by its saga's step (`deps.sagas`). */
function awaitSpawn(deps: IdentityDeps, childId: string, ms: number): Promise<SpawnState> {
  const read = async (): Promise<SpawnState> => {
    const agent = await findAgent(deps.db, childId);
    if (agent?.walletOpenedAt) return { state: 'funded', agent };
    if (agent) return { state: 'pending' };
    const refusal = await deps.db.selectFrom('spawnRefusals').select('availableCents').where('childAgentId', '=', childId).executeTakeFirst();
    return refusal ? { state: 'refused', availableCents: refusal.availableCents } : { state: 'pending' };
  };
  return awaitState(deps.sagas, childId, read, (s) => s.state !== 'pending', ms);
}

/** Identity's side of the wallet's decisions: a funded child is announced, a refused one removed. */
export async function recordChildFunding(deps: IdentityDeps): Promise<Stoppable> {
  const base = { bus: deps.bus, tx: deps.tx, logger: deps.logger };
  const consumers = await Promise.all([
    consumeIdempotently({ ...base, durable: 'identity-child-funded', def: childSaga.funded, handle: (trx, e, work) => childFunded(deps, trx, work, e) }),
    consumeIdempotently({
      ...base, durable: 'identity-child-refused', def: childSaga.refused, handle: (trx, e, work) => childRefused(deps, trx, work, e),
      // The child is gone: gateways drop its profile and its key's principal (tagged with the agent).
      afterCommit: async (e) => {
        await forgetAfterCommit(deps, { agentIds: [e.childAgentId] }, deps.logger);
      },
    }),
  ]);
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}

async function childFunded(deps: IdentityDeps, trx: Trx, work: UnitOfWork, e: MessageData<typeof childSaga.funded>): Promise<void> {
  const now = deps.now();
  const row = await trx.updateTable('agents').set({ walletOpenedAt: now }).where('id', '=', e.childAgentId).where('walletOpenedAt', 'is', null).returningAll().executeTakeFirst();
  if (row) announceAgent(work, row, now);
  work.afterCommit(() => deps.sagas.moved(e.childAgentId));
}

/** D6.8 "short → 402 and no child exists": the child and everything made with it are deleted. */
async function childRefused(deps: IdentityDeps, trx: Trx, work: UnitOfWork, e: MessageData<typeof childSaga.refused>): Promise<void> {
  work.afterCommit(() => deps.sagas.moved(e.childAgentId));
  const child = await trx.selectFrom('agents').select(['id', 'walletOpenedAt']).where('id', '=', e.childAgentId).forUpdate().executeTakeFirst();
  if (!child || child.walletOpenedAt) return;
  await trx.insertInto('spawnRefusals').values({ childAgentId: e.childAgentId, reason: e.reason, availableCents: e.availableCents, requiredCents: e.requiredCents, at: deps.now() })
    .onConflict((oc) => oc.column('childAgentId').doNothing()).execute();
  for (const table of ['apiKeys', 'signingKeys', 'signingKeyOwners', 'trustScores'] as const) {
    await trx.deleteFrom(table).where('agentId', '=', e.childAgentId).execute();
  }
  await trx.deleteFrom('agents').where('id', '=', e.childAgentId).execute();
}

/**
 * Marks the children past their `expiresAt` expired (their keys stop at once on every gateway) and
 * asks the wallet to close their wallets; returns how many. Safe on every replica at once (rows
 * claimed with SKIP LOCKED); a child whose budget is still being moved waits for the decision.
 */
export async function expireDueChildren(deps: IdentityDeps): Promise<number> {
  const now = deps.now();
  const { expired, hashes, ids } = await deps.tx.run(async (trx, work) => {
    const due = await trx
      .selectFrom('agents')
      .selectAll()
      .where('parentAgentId', 'is not', null)
      .where('status', '<>', 'expired')
      .where('expiresAt', '<=', now)
      .where('walletOpenedAt', 'is not', null)
      .orderBy('expiresAt')
      .limit(100)
      .forUpdate()
      .skipLocked()
      .execute();
    for (const child of due) {
      await trx.updateTable('agents').set({ status: 'expired', updatedAt: now }).where('id', '=', child.id).execute();
      work.enqueue(events.agentStatusChanged, { ...agentFacts({ ...child, status: 'expired' }), previousStatus: child.status }, { now });
      work.enqueue(childSaga.close, { childAgentId: child.id });
    }
    if (due.length === 0) return { expired: 0, hashes: [], ids: [] };
    const keys = await trx.selectFrom('apiKeys').select('keyHash').where('agentId', 'in', due.map((c) => c.id)).where('revokedAt', 'is', null).execute();
    return { expired: due.length, hashes: keys.map((k) => k.keyHash), ids: due.map((c) => c.id) };
  });
  if (expired === 0) return 0;
  await forgetAfterCommit(deps, { keyHashes: hashes, agentIds: ids }, deps.logger);
  return expired;
}
