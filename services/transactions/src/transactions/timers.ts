import { TimerRunner, type Stoppable } from '@aex/platform';
import type { Transaction } from 'kysely';
import type { TransactionDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { ACTION_SOURCES } from '../domain/state-machine.js';
import { actOn } from './disputes.js';
import { lastMessage, lockTransaction, move, requestSettlement, TIMERS } from './repository.js';

type Trx = Transaction<Database>;

/**
 * Durable timers (ARCHITECTURE "Timers"): rows claimed with SKIP LOCKED and fired in the database
 * transaction that marks them fired — within a poll (250 ms) of being due, after any restart, once.
 * Each handler re-reads the transaction and does nothing when the moment has passed.
 */
export function startTimers(deps: TransactionDeps, pollMs = 250): Stoppable {
  const runner = new TimerRunner<Database>(deps.db, {
    [TIMERS.offerExpiry]: (trx, timer) => offerExpired(deps, trx, timer.key, (timer.payload as { round?: number }).round ?? 0),
    [TIMERS.transactionExpiry]: (trx, timer) => transactionExpired(deps, trx, timer.key),
    [TIMERS.reviewWindow]: (trx, timer) => reviewWindowEnded(deps, trx, timer.key),
    // D12.7: no answer from the provider by the deadline: the consumer wins.
    [TIMERS.disputeDeadline]: async (trx, timer) => void (await actOn(deps, trx, timer.key, 'exchange', { kind: 'deadline' })),
  }, deps.logger, { pollMs, afterFire: () => deps.relay.kick() });
  runner.start();
  return runner;
}

/** D11.4: the latest offer went unanswered: the negotiation ends (`offer_expired`). */
async function offerExpired(deps: TransactionDeps, trx: Trx, id: string, round: number): Promise<void> {
  const t = await lockTransaction(trx, id);
  if (!t || t.status !== 'negotiating' || t.pendingAcceptBy) return;
  const last = await lastMessage(trx, id);
  if (last?.round !== round) return;
  await move(trx, t, 'cancelled', { statusReason: 'offer_expired' }, deps.now());
}

/** D9.7: no valid delivery by `expiresAt`: `expired`, the hold returned. */
async function transactionExpired(deps: TransactionDeps, trx: Trx, id: string): Promise<void> {
  const t = await lockTransaction(trx, id);
  if (!t || !(ACTION_SOURCES.expire as readonly string[]).includes(t.status)) return;
  await move(trx, t, 'expired', { statusReason: 'sla_timeout' }, deps.now());
}

/**
 * D9.7 (EXT): delivered, and neither verified nor disputed when the review window ended: the
 * settlement is asked for as a verify would, with the reason kept on the transaction
 * (`review_window_ended`) through to `settled`. A verify or dispute that came first left nothing to do.
 */
async function reviewWindowEnded(deps: TransactionDeps, trx: Trx, id: string): Promise<void> {
  const t = await lockTransaction(trx, id);
  if (!t || t.status !== 'delivered' || t.hold !== 'held') return;
  const now = deps.now();
  await requestSettlement(trx, t, now);
  await trx.updateTable('transactions').set({ hold: 'settling', statusReason: 'review_window_ended', updatedAt: now }).where('id', '=', t.id).execute();
}
