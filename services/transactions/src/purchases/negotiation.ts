import type { transactionOps } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import { visibleTransaction } from './handlers.js';
import { negotiationView } from './views.js';

type Ops = typeof transactionOps;

/**
 * POST /v1/transactions/{id}/negotiate (spec "Negotiations", D11). An `accept` agrees to the latest
 * offer's price, checked against the consumer's rules at that price (D10.2); the answer is the
 * transaction in `funds_held` (having passed through `matched`), `awaiting_approval` (D10.3),
 * 402/403 with nothing changed, or 202 while the wallet has not answered within SAGA_WAIT_MS.
 */
export const negotiate = (deps: TransactionDeps): OperationHandler<Ops['negotiate']> => async ({ path, body }, ctx) =>
  deps.purchases.request(ctx, path.transactionId, { kind: 'negotiate', caller: requireAgent(ctx), body });

/** GET /v1/transactions/{id}/negotiations: every message by round, parties only (D11.5). */
export const listNegotiations = (deps: TransactionDeps): OperationHandler<Ops['listNegotiations']> => async ({ path }, ctx) => {
  const t = await visibleTransaction(deps, requireAgent(ctx).agentId, path.transactionId);
  const rows = await deps.db.selectFrom('negotiationMessages').selectAll().where('transactionId', '=', t.id).orderBy('round').execute();
  return { data: rows.map(negotiationView) };
};
