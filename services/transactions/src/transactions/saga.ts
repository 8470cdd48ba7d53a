import { randomUUID } from 'node:crypto';
import { walletSaga, type MessageData, type MessageDef, type Static } from '@aex/contracts';
import { cancelTimer, consumeIdempotently, type Stoppable } from '@aex/platform';
import type { Transaction } from 'kysely';
import type { TransactionDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { canMove } from '../domain/state-machine.js';
import type { KnownRow, VersionedRow } from '../known-transactions.js';
import { agreedPendingAccept, lastMessage, lockTransaction, move, moveIfUnchanged, scheduleExpiry, scheduleOfferExpiry, TIMERS } from './repository.js';

type Trx = Transaction<Database>;

/**
 * The transaction service's side of the saga (ARCHITECTURE "Messaging", D9.9): the wallet's answers
 * move transactions on. Each answer is applied once (its message id is recorded with the effect) and
 * only when it is the answer the transaction waits for, so late, repeated or stale answers change
 * nothing. The request that asked may already have answered 202: these run whether or not it waits.
 */
export async function serveSaga(deps: TransactionDeps): Promise<Stoppable> {
  const afterCommit = (e: { transactionId: string }, moved: VersionedRow | undefined) => {
    deps.relay.kick();
    if (!moved) return deps.signals.moved(e.transactionId);
    deps.known.remember(moved);
    deps.signals.committed(moved);
  };
  /**
   * A consumer of one answer; the waiting request of its transaction is woken after the commit, with
   * the row as the commit left it when the answer moved the transaction.
   */
  const answer = <M extends MessageDef>(durable: string, def: M, apply: (deps: TransactionDeps, trx: Trx, e: Static<M['data']> & { transactionId: string }) => Promise<VersionedRow | undefined>) =>
    consumeIdempotently<M, Database, VersionedRow | undefined>({
      bus: deps.bus, db: deps.db, logger: deps.logger, afterCommit: (e, moved) => afterCommit(e as { transactionId: string }, moved), concurrency: 8, durable, def,
      handle: (trx, e) => apply(deps, trx, e as Static<M['data']> & { transactionId: string }),
    });
  const consumers = await Promise.all([
    answer('transactions-hold-placed', walletSaga.holdPlaced, holdPlaced),
    answer('transactions-hold-refused', walletSaga.holdRefused, holdRefused),
    answer('transactions-hold-returned', walletSaga.holdReturned, holdReturned),
    answer('transactions-hold-settled', walletSaga.holdSettled, holdSettled),
  ]);
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}

/**
 * The hold is in place: a new transaction becomes `funds_held`; a pending accept is recorded and the
 * transaction moves `negotiating → matched → funds_held` (both events, D9.7). A hold placed for a
 * transaction that ended meanwhile is already being returned (`move` sent the return).
 */
async function holdPlaced(deps: TransactionDeps, trx: Trx, e: MessageData<typeof walletSaga.holdPlaced>): Promise<VersionedRow | undefined> {
  const now = deps.now();
  const heldAt = new Date(e.at);
  const fundsHeld = (t: KnownRow) => ({ hold: 'held' as const, fundsHeldAt: heldAt, expiresAt: new Date(heldAt.getTime() + t.sla.timeoutMs) });
  // The row as its creation left it, if it still is (no locking read).
  const known = deps.known.get(e.transactionId);
  if (known?.status === 'initiated' && known.hold === 'requested' && known.holdAttempt === e.attempt) {
    const held = await moveIfUnchanged(trx, known, 'funds_held', fundsHeld(known), now);
    if (held) {
      await scheduleExpiry(trx, held.id, held.expiresAt!);
      return held;
    }
  }
  let t = await lockTransaction(trx, e.transactionId);
  if (!t || t.hold !== 'requested' || e.attempt !== t.holdAttempt) return undefined;
  if (t.status === 'negotiating' && t.pendingAcceptBy) {
    const last = (await lastMessage(trx, t.id))!;
    await trx.insertInto('negotiationMessages').values({
      id: randomUUID(), transactionId: t.id, fromAgentId: t.pendingAcceptBy, messageType: 'accept', round: last.round + 1,
      terms: '{}' as never, message: t.pendingAcceptMessage, expiresAt: null, createdAt: now,
    }).execute();
    await cancelTimer(trx, TIMERS.offerExpiry, t.id);
    t = await move(trx, t, 'matched', agreedPendingAccept(t.pendingAcceptPriceCents!), now);
  }
  if (t.status !== 'initiated' && t.status !== 'matched') throw new Error(`hold placed for transaction ${t.id} in status ${t.status}`);
  const held = await move(trx, t, 'funds_held', fundsHeld(t), now);
  await scheduleExpiry(trx, t.id, held.expiresAt!);
  return held;
}

/**
 * The wallet refused the hold. A new transaction fails (402 to its creator, `insufficient_funds`);
 * a pending accept is dropped and the negotiation goes on as before it (D9.7: nothing changes), its
 * latest offer still expiring when it would have. A refusal of a hold already being returned
 * (the transaction ended before the wallet saw the hold) means nothing was ever held.
 */
async function holdRefused(deps: TransactionDeps, trx: Trx, e: MessageData<typeof walletSaga.holdRefused>): Promise<VersionedRow | undefined> {
  const t = await lockTransaction(trx, e.transactionId);
  if (!t) return undefined;
  const now = deps.now();
  if (t.hold === 'returning') {
    await trx.updateTable('transactions').set({ hold: 'returned', updatedAt: now }).where('id', '=', t.id).execute();
    return undefined;
  }
  if (t.hold !== 'requested' || e.attempt !== t.holdAttempt) return undefined;
  if (t.status === 'initiated') return move(trx, t, 'failed', { hold: 'refused', statusReason: e.reason }, now);
  await trx.updateTable('transactions').set({ hold: 'refused', pendingAcceptBy: null, pendingAcceptPriceCents: null, pendingAcceptMessage: null, updatedAt: now }).where('id', '=', t.id).execute();
  const last = await lastMessage(trx, t.id);
  if (last?.expiresAt) await scheduleOfferExpiry(trx, t.id, last.round, last.expiresAt);
  return undefined;
}

async function holdReturned(deps: TransactionDeps, trx: Trx, e: MessageData<typeof walletSaga.holdReturned>): Promise<undefined> {
  await trx.updateTable('transactions').set({ hold: 'returned', updatedAt: deps.now() }).where('id', '=', e.transactionId).where('hold', '=', 'returning').execute();
  return undefined;
}

/** Settlement done: a verified transaction becomes `settled` (D9.7). */
async function holdSettled(deps: TransactionDeps, trx: Trx, e: MessageData<typeof walletSaga.holdSettled>): Promise<VersionedRow | undefined> {
  // The reason the settlement was asked for (`review_window_ended`, or none for a verify) stays.
  const settled = (t: KnownRow) => ({ hold: 'settled' as const, settledAt: new Date(e.at), statusReason: t.statusReason });
  // The row as the verify left it, if it still is (no locking read).
  const known = deps.known.get(e.transactionId);
  if (known?.hold === 'settling' && canMove(known.status, 'settled')) {
    const moved = await moveIfUnchanged(trx, known, 'settled', settled(known), deps.now());
    if (moved) return moved;
  }
  const t = await lockTransaction(trx, e.transactionId);
  if (!t || t.hold !== 'settling') return undefined;
  return move(trx, t, 'settled', settled(t), deps.now());
}
