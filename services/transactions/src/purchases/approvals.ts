import { sql } from 'kysely';
import { AppError, type Principal, type transactionOps } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import type { TransactionRow } from '../db/schema.js';
import { assertAction } from '../domain/state-machine.js';
import { checkDelegation, delegationOf, lockAgents } from './limits.js';
import { awaitRow, purchaseStep, refuseAfterEffect, transactionsPage } from './repository.js';
import { transactionView } from './views.js';
import { requireOwnerOf } from './account.js';

type Ops = typeof transactionOps;

/**
 * D10.3: who may decide a purchase awaiting approval — the consumer's account owner agent only. The
 * provider and the account's other agents (the consumer among them, unless it is the owner) know of
 * the purchase: 403. To any other account it does not exist (404, as D9.8 answers it).
 */
async function decidableTransaction(deps: TransactionDeps, caller: Principal, id: string): Promise<TransactionRow> {
  const t = await deps.db.selectFrom('transactions').selectAll().where('id', '=', id).executeTakeFirst();
  const known = t && (t.consumerAccountId === caller.accountId || t.providerAgentId === caller.agentId);
  if (!t || !known) throw new AppError('NOT_FOUND', 'No such transaction.');
  if (t.consumerAccountId !== caller.accountId || !caller.isOwner) {
    throw new AppError('FORBIDDEN', "Only the consumer's account owner agent may approve or deny this purchase.", { details: { role: 'owner' } });
  }
  return t;
}

/**
 * POST /v1/transactions/{id}/approve (D10.3): the owner approves; D10.2 is checked again without the
 * approval rule (403 DELEGATION_EXCEEDED, still waiting), and the wallet asked for the hold. 200 in
 * `funds_held` once the wallet holds it (after a negotiation, through `matched`); 402 when it cannot,
 * the purchase still waiting for an approval; 202 while the wallet has not answered (D9.9).
 */
export const approve = (deps: TransactionDeps): OperationHandler<Ops['approve']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const seen = await decidableTransaction(deps, caller, path.transactionId);
  assertAction('approve', seen.status);
  // Read before the database transaction: no lock is held across a call to another service.
  const delegation = await delegationOf(deps, seen.consumerAgentId, ctx.requestId);
  const watch = deps.signals.watch(seen.id);
  const asked = await ctx.effect(deps.tx, async (trx, work) => {
    // The consumer's spending is counted under its lock, as at creation and accept.
    await lockAgents(trx, [seen.consumerAgentId]);
    const { state: t } = (await purchaseStep(deps, trx, work, seen.id, { kind: 'approve', by: caller.agentId }))!;
    await checkDelegation(trx, delegation.rules, { consumerAgentId: t.consumerAgentId, category: t.category, priceCents: t.agreedPriceCents!, now: deps.now(), excluding: t.id });
    return { status: 202, data: transactionView(t, caller.accountId) };
  }).catch((err: unknown) => {
    watch.close();
    throw err;
  });
  const t = await awaitRow(deps.db, deps.signals, seen.id, deps.config.SAGA_WAIT_MS, (r) => r.hold !== 'requested', watch);
  if (t.hold === 'held') return { ...asked, status: 200, data: transactionView(t, caller.accountId) };
  if (t.hold === 'refused') {
    return refuseAfterEffect(ctx, deps.db, new AppError('INSUFFICIENT_FUNDS', `The consumer's available balance is too low to hold ${t.agreedPriceCents} cents; the purchase still awaits an approval.`, {
      details: { transactionId: t.id, requiredCents: t.agreedPriceCents, status: t.status },
    }));
  }
  return { ...asked, status: 202, data: transactionView(t, caller.accountId) };
};

/** POST /v1/transactions/{id}/deny (D10.3): the owner refuses; the purchase is cancelled (`approval_denied`), nothing held. */
export const deny = (deps: TransactionDeps): OperationHandler<Ops['deny']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  const seen = await decidableTransaction(deps, caller, path.transactionId);
  assertAction('deny', seen.status);
  const reply = await ctx.effect(deps.tx, async (trx, work) => ({
    data: transactionView((await purchaseStep(deps, trx, work, seen.id, { kind: 'deny', by: caller.agentId, reason: body.reason ?? null }))!.state, caller.accountId),
  }));
  // An approval's hold on its way when denied is returned: the answer waits for it, as a cancel's does.
  const t = await awaitRow(deps.db, deps.signals, seen.id, deps.config.SAGA_WAIT_MS, (r) => r.hold !== 'returning');
  return { ...reply, data: transactionView(t, caller.accountId) };
};

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
