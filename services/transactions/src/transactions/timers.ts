import { TimerRunner, type Stoppable } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { TIMERS } from '../domain/purchase.js';
import { actOn } from './disputes.js';
import { lastMessage, lockTransaction, purchaseStep } from './repository.js';

/**
 * Durable timers (ARCHITECTURE "Timers"): rows claimed with SKIP LOCKED and fired in the database
 * transaction that deletes them — within a poll (250 ms) of being due, after any restart, once. Each
 * is a purchase command on the row locked (`decidePurchase`), which changes nothing when the moment
 * has passed: D11.4 an offer unanswered, D9.7 no valid delivery in time, D9.7 a review window ended
 * with neither verify nor dispute, D12.7 a dispute the provider did not answer (the consumer wins).
 */
export function startTimers(deps: TransactionDeps, pollMs = 250): Stoppable {
  const runner = new TimerRunner<Database>(deps.db, {
    [TIMERS.offerExpiry]: async (trx, timer) => {
      let latestRound: number | null = null;
      const lock = async () => {
        const t = await lockTransaction(trx, timer.key);
        latestRound = t ? (await lastMessage(trx, timer.key))?.round ?? null : null;
        return t;
      };
      const round = (timer.payload as { round?: number }).round ?? 0;
      await purchaseStep(deps, trx, timer.key, () => ({ kind: 'offerExpired', round, latestRound }), { lock });
    },
    [TIMERS.transactionExpiry]: async (trx, timer) => void (await purchaseStep(deps, trx, timer.key, { kind: 'expire' })),
    [TIMERS.reviewWindow]: async (trx, timer) => void (await purchaseStep(deps, trx, timer.key, { kind: 'reviewWindowEnded' })),
    [TIMERS.disputeDeadline]: async (trx, timer) => void (await actOn(deps, trx, timer.key, 'exchange', { kind: 'deadline' })),
  }, deps.logger, { pollMs, afterFire: () => deps.relay.kick() });
  runner.start();
  return runner;
}
