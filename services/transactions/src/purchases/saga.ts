import { walletSaga } from '@aex/contracts';
import type { Stoppable } from '@aex/platform';
import type { TransactionDeps } from '../context.js';

/**
 * The transaction service's side of the saga (docs/messaging.md, D9.9): the wallet's answers
 * are purchase commands (`decidePurchase`) — or, for a prepaid session's budget (`session`, D17.4),
 * session commands (`decideSession`) — each applied once (its message id recorded with the step) and
 * only when it is the answer the aggregate waits for, so late, repeated or stale answers change
 * nothing. The request that asked may already have answered 202: these run whether or not it
 * waits; its waiter hears of the step after the commit, with the row as the commit left it. A
 * session call's capture has no answer: the call settles as it is sent (D17.5, `settling.ts`).
 */
export async function serveSaga(deps: TransactionDeps): Promise<Stoppable> {
  const base = { bus: deps.bus, logger: deps.logger, concurrency: 8 };
  const purchase = <C>(session: boolean | undefined, step: C) => (session ? null : step);
  const session = <C>(isSession: boolean | undefined, step: C) => (isSession ? step : null);
  const consumers = await Promise.all([
    deps.purchases.consume({ ...base, durable: 'transactions-hold-placed', def: walletSaga.holdPlaced, command: (e) => purchase(e.session, { id: e.transactionId, command: { kind: 'holdPlaced', attempt: e.attempt, at: new Date(e.at) } }) }),
    deps.purchases.consume({ ...base, durable: 'transactions-hold-refused', def: walletSaga.holdRefused, command: (e) => purchase(e.session, { id: e.transactionId, command: { kind: 'holdRefused', attempt: e.attempt, reason: e.reason } }) }),
    deps.purchases.consume({ ...base, durable: 'transactions-hold-returned', def: walletSaga.holdReturned, command: (e) => purchase(e.session, { id: e.transactionId, command: { kind: 'holdReturned' } }) }),
    deps.purchases.consume({ ...base, durable: 'transactions-hold-settled', def: walletSaga.holdSettled, command: (e) => ({ id: e.transactionId, command: { kind: 'holdSettled', at: new Date(e.at) } }) }),
    deps.sessions.consume({ ...base, durable: 'transactions-session-hold-placed', def: walletSaga.holdPlaced, command: (e) => session(e.session, { id: e.transactionId, command: { kind: 'holdPlaced' } }) }),
    deps.sessions.consume({ ...base, durable: 'transactions-session-hold-refused', def: walletSaga.holdRefused, command: (e) => session(e.session, { id: e.transactionId, command: { kind: 'holdRefused', reason: e.reason } }) }),
    deps.sessions.consume({ ...base, durable: 'transactions-session-hold-returned', def: walletSaga.holdReturned, command: (e) => session(e.session, { id: e.transactionId, command: { kind: 'holdReturned' } }) }),
  ]);
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}
