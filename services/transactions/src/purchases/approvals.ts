import { sql } from 'kysely';
import type { transactionOps } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import { transactionsPage } from './repository.js';
import { requireOwnerOf } from './account.js';

type Ops = typeof transactionOps;

/**
 * POST /v1/transactions/{id}/approve (D10.3): the consumer's account owner approves; D10.2 is checked
 * again without the approval rule (403 DELEGATION_EXCEEDED, still waiting), and the wallet asked for
 * the hold. 200 in `funds_held` once the wallet holds it (after a negotiation, through `matched`);
 * 402 when it cannot, the purchase still waiting for an approval; 202 while the wallet has not
 * answered (D9.9).
 */
export const approve = (deps: TransactionDeps): OperationHandler<Ops['approve']> => async ({ path }, ctx) =>
  deps.purchases.request(ctx, path.transactionId, { kind: 'approve', caller: requireAgent(ctx) });

/** POST /v1/transactions/{id}/deny (D10.3): the owner refuses; the purchase is cancelled (`approval_denied`), any hold on its way returned. */
export const deny = (deps: TransactionDeps): OperationHandler<Ops['deny']> => async ({ path, body }, ctx) =>
  deps.purchases.request(ctx, path.transactionId, { kind: 'deny', caller: requireAgent(ctx), reason: body.reason ?? null });

/**
 * GET /v1/accounts/{id}/approvals (D10.3): the owner's inbox — its account's purchases that needed
 * an approval, newest first: `pending` (default) those still waiting, `decided` those approved or
 * denied, `all` every one (also those expired or cancelled while waiting).
 */
export const listApprovals = (deps: TransactionDeps): OperationHandler<Ops['listApprovals']> => async ({ path, query }, ctx) => {
  const caller = requireAgent(ctx);
  requireOwnerOf(caller, path.accountId);
  const state = query.state ?? 'pending';
  // The predicate is the approvals index's (migration 0009).
  let q = deps.db.selectFrom('transactions').where('consumerAccountId', '=', path.accountId).where(sql<boolean>`approval is not null`);
  if (state === 'pending') q = q.where('status', '=', 'awaiting_approval');
  // An approval whose hold the wallet refused is undecided again (D10.3).
  if (state === 'decided') q = q.where(sql<boolean>`approval ? 'decision'`);
  return transactionsPage(q, query, caller.accountId);
};
