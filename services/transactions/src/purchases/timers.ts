import type { TimerHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { TIMERS, type PurchaseCommand } from '../domain/purchase.js';

/**
 * The purchase's durable timers, each a purchase command decided on the row locked in the timer's
 * transaction (`decidePurchase`), which changes nothing when the moment has passed: D11.4 an offer
 * unanswered, D9.7 no valid delivery in time, D9.7 a review window ended with neither verify nor
 * dispute, D10.3 an approval not decided in time.
 */
export function purchaseTimers(deps: TransactionDeps): Record<string, TimerHandler<Database>> {
  const fire = (command: (payload: unknown) => PurchaseCommand): TimerHandler<Database> => async (trx, timer, work) =>
    void (await deps.purchases.within(trx, work, timer.key, command(timer.payload)));
  return {
    [TIMERS.offerExpiry]: fire((payload) => ({ kind: 'offerExpired', round: (payload as { round?: number }).round ?? 0 })),
    [TIMERS.transactionExpiry]: fire(() => ({ kind: 'expire' })),
    [TIMERS.reviewWindow]: fire(() => ({ kind: 'reviewWindowEnded' })),
    [TIMERS.approvalExpiry]: fire(() => ({ kind: 'approvalExpired' })),
  };
}
