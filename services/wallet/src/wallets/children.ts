import { randomUUID } from 'node:crypto';
import { childSaga, type MessageData } from '@aex/contracts';
import { consumeIdempotently, type Stoppable, type UnitOfWork } from '@aex/platform';
import type { Transaction } from 'kysely';
import type { WalletDeps } from '../context.js';
import type { ChildAllocationRow, Database } from '../db/schema.js';
import { applyMovements } from './movements.js';

type Trx = Transaction<Database>;

/**
 * The wallet's side of a child agent's life (D6.8, D13.2): its wallet opened with the budget moved
 * from the parent's (`parent_allocation` in both, one database transaction) or the spawn refused —
 * decided once per child, so a repeated command gets the same answer — and, at expiry, its wallet
 * closed with its available balance returned (`parent_return`). What becomes available in a closed
 * wallet later (held funds of its transactions as they end) returns in the same database transaction
 * that frees it (`movements.ts`).
 */
export async function serveChildren(deps: WalletDeps): Promise<Stoppable> {
  const common = { bus: deps.bus, tx: deps.tx, logger: deps.logger };
  const consumers = await Promise.all([
    consumeIdempotently({ ...common, durable: 'wallet-allocate-child', def: childSaga.allocate, handle: (trx, cmd, work) => allocate(deps, trx, work, cmd) }),
    consumeIdempotently({ ...common, durable: 'wallet-close-child', def: childSaga.close, handle: (trx, cmd) => close(deps, trx, cmd.childAgentId) }),
  ]);
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}

async function announce(deps: WalletDeps, trx: Trx, work: UnitOfWork, a: ChildAllocationRow): Promise<void> {
  const now = deps.now();
  if (a.status === 'funded') {
    const child = await trx.selectFrom('wallets').select('id').where('agentId', '=', a.childAgentId).executeTakeFirstOrThrow();
    work.enqueue(childSaga.funded, { childAgentId: a.childAgentId, walletId: child.id, budgetCents: Number(a.budgetCents) }, { now });
  } else {
    work.enqueue(childSaga.refused, { childAgentId: a.childAgentId, reason: a.refusal ?? 'insufficient_funds', availableCents: Number(a.availableCents), requiredCents: Number(a.budgetCents) }, { now });
  }
}

async function allocate(deps: WalletDeps, trx: Trx, work: UnitOfWork, cmd: MessageData<typeof childSaga.allocate>): Promise<void> {
  // The parent's wallet first: allocations of one parent happen one after another.
  const parent = await trx.selectFrom('wallets').selectAll().where('agentId', '=', cmd.parentAgentId).forUpdate().executeTakeFirst();
  const decided = await trx.selectFrom('childAllocations').selectAll().where('childAgentId', '=', cmd.childAgentId).forUpdate().executeTakeFirst();
  if (decided) return announce(deps, trx, work, decided);
  const now = deps.now();
  const available = parent ? parent.balanceCents - parent.heldCents : 0;
  const base = { childAgentId: cmd.childAgentId, parentWalletId: parent?.id ?? null, budgetCents: cmd.budgetCents, availableCents: available, decidedAt: now };
  let decision: ChildAllocationRow;
  if (!parent) {
    decision = { ...base, status: 'refused', refusal: 'no_wallet' };
  } else if (available < cmd.budgetCents) {
    decision = { ...base, status: 'refused', refusal: 'insufficient_funds' };
  } else {
    const child = { id: randomUUID(), kind: 'agent' as const, agentId: cmd.childAgentId, accountId: cmd.accountId, balanceCents: 0, heldCents: 0, lifetimeEarnedCents: 0, lifetimeSpentCents: 0, parentWalletId: parent.id, closedAt: null, createdAt: now, updatedAt: now };
    await trx.insertInto('wallets').values(child).execute();
    if (cmd.budgetCents > 0) {
      const description = `Budget of child agent ${cmd.childAgentId}`;
      await applyMovements(trx, `spawn:${cmd.childAgentId}`, [
        { walletId: parent.id, txType: 'parent_allocation', amountCents: -cmd.budgetCents, description },
        { walletId: child.id, txType: 'parent_allocation', amountCents: cmd.budgetCents, description },
      ], now, { locked: [parent, child], onceByCaller: true });
    }
    decision = { ...base, status: 'funded', refusal: null };
  }
  await trx.insertInto('childAllocations').values(decision).execute();
  await announce(deps, trx, work, decision);
}

/** Closes an expired child's wallet, its available balance back to the parent; once is enough. */
async function close(deps: WalletDeps, trx: Trx, childAgentId: string): Promise<void> {
  const child = await trx.selectFrom('wallets').select(['id', 'parentWalletId', 'closedAt']).where('agentId', '=', childAgentId).executeTakeFirst();
  if (!child?.parentWalletId) throw new Error(`close of child ${childAgentId}, which has no child wallet`);
  if (child.closedAt) return;
  const now = deps.now();
  // Both wallets locked in id order, as every movement locks them (no deadlock with one under way).
  const rows = await trx.selectFrom('wallets').selectAll().where('id', 'in', [child.id, child.parentWalletId]).orderBy('id').forUpdate().execute();
  const locked = rows.find((w) => w.id === child.id)!;
  if (locked.closedAt) return;
  await trx.updateTable('wallets').set({ closedAt: now, updatedAt: now }).where('id', '=', child.id).execute();
  const available = locked.balanceCents - locked.heldCents;
  if (available > 0) {
    const description = `Returned by expired child agent ${childAgentId}`;
    await applyMovements(trx, `close:${childAgentId}`, [
      { walletId: child.id, txType: 'parent_return', amountCents: -available, description },
      { walletId: child.parentWalletId, txType: 'parent_return', amountCents: available, description },
    ], now, { locked: rows.map((w) => (w.id === child.id ? { ...w, closedAt: now } : w)), onceByCaller: true });
  }
}
