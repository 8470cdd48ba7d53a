import type { TimerHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { TIMERS } from '../domain/purchase.js';
import { lastMessage, lockTransaction, purchaseStep } from './repository.js';

/**
 * The purchase's durable timers, each a purchase command on the row locked (`decidePurchase`), which changes nothing when the moment
 * has passed: D11.4 an offer unanswered, D9.7 no valid delivery in time, D9.7 a review window ended
 * with neither verify nor dispute, D10.3 an approval not decided in time.
 */
export function purchaseTimers(deps: TransactionDeps): Record<string, TimerHandler<Database>> {
  return {
    [TIMERS.offerExpiry]: async (trx, timer, work) => {
      let latestRound: number | null = null;
      const lock = async () => {
        const t = await lockTransaction(trx, timer.key);
        latestRound = t ? (await lastMessage(trx, timer.key))?.round ?? null : null;
        return t;
      };
      const round = (timer.payload as { round?: number }).round ?? 0;
      await purchaseStep(deps, trx, work, timer.key, () => ({ kind: 'offerExpired', round, latestRound }), { lock });
    },
    [TIMERS.transactionExpiry]: async (trx, timer, work) => void (await purchaseStep(deps, trx, work, timer.key, { kind: 'expire' })),
    [TIMERS.reviewWindow]: async (trx, timer, work) => void (await purchaseStep(deps, trx, work, timer.key, { kind: 'reviewWindowEnded' })),
    [TIMERS.approvalExpiry]: async (trx, timer, work) => void (await purchaseStep(deps, trx, work, timer.key, { kind: 'approvalExpired' })),
  };
}
