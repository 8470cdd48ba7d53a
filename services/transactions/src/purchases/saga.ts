import { walletSaga, type MessageDef, type Static } from '@aex/contracts';
import { consumeIdempotently, type Stoppable } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import type { PurchaseCommand } from '../domain/purchase.js';
import type { VersionedRow } from './known-transactions.js';
import { purchaseStep } from './repository.js';

/**
 * The transaction service's side of the saga (ARCHITECTURE "Messaging", D9.9): the wallet's answers
 * are purchase commands (`decidePurchase`), each applied once (its message id is recorded with the
 * step) and only when it is the answer the transaction waits for, so late, repeated or stale answers
 * change nothing. Each is decided first on the row as this replica last knew it (the step runner's
 * guarded write). The request that asked may already have answered 202: these run whether or not it
 * waits; its waiter is woken after the commit, with the row as the commit left it.
 */
export async function serveSaga(deps: TransactionDeps): Promise<Stoppable> {
  const answer = <M extends MessageDef>(durable: string, def: M, command: (e: Static<M['data']>) => PurchaseCommand) =>
    consumeIdempotently<M, Database, VersionedRow | undefined>({
      bus: deps.bus, db: deps.db, logger: deps.logger, concurrency: 8, durable, def,
      handle: async (trx, e, work) => {
        const id = (e as { transactionId: string }).transactionId;
        const step = await purchaseStep(deps, trx, work, id, command(e), { remembered: deps.known.get(id) });
        return step?.decision.kind === 'changed' ? step.state : undefined;
      },
      afterCommit: (e, moved) => {
        if (!moved) return deps.signals.moved((e as { transactionId: string }).transactionId);
        deps.known.remember(moved);
        deps.signals.committed(moved);
      },
    });
  const consumers = await Promise.all([
    answer('transactions-hold-placed', walletSaga.holdPlaced, (e) => ({ kind: 'holdPlaced', attempt: e.attempt, at: new Date(e.at) })),
    answer('transactions-hold-refused', walletSaga.holdRefused, (e) => ({ kind: 'holdRefused', attempt: e.attempt, reason: e.reason })),
    answer('transactions-hold-returned', walletSaga.holdReturned, () => ({ kind: 'holdReturned' })),
    answer('transactions-hold-settled', walletSaga.holdSettled, (e) => ({ kind: 'holdSettled', at: new Date(e.at) })),
  ]);
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}
