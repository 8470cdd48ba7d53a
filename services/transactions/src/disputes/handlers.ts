import { randomUUID } from 'node:crypto';
import { AppError, pagination, type transactionOps } from '@aex/contracts';
import { requireAgent, type HandlerContext, type OperationHandler, type TimerHandler } from '@aex/platform';
import { sql } from 'kysely';
import type { TransactionDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { actsAs, type DisputeCommand } from '../domain/dispute-case.js';
import type { DisputeAction } from '../domain/disputes.js';
import { TIMERS } from '../domain/purchase.js';
import { visibleTransaction } from '../purchases/handlers.js';
import { disputeView } from './views.js';

type Ops = typeof transactionOps;

/** POST /v1/transactions/{id}/dispute (D12.1): the consumer, on `delivered`; the hold stays. */
export const openDispute = (deps: TransactionDeps): OperationHandler<Ops['openDispute']> => async ({ path, body }, ctx) => {
  const command: DisputeCommand = {
    kind: 'open', caller: requireAgent(ctx), disputeId: randomUUID(), transactionId: path.transactionId,
    reason: body.reason, description: body.description, evidence: body.evidence ?? null, responseSeconds: deps.config.DISPUTE_RESPONSE_SECONDS,
  };
  return deps.disputes.request(ctx, command.disputeId, command);
};

/** A party's action on a dispute (D12.3–D12.5): by the party, or the owner agent of its account. */
const byParty = (deps: TransactionDeps, ctx: HandlerContext, id: string, actor: 'consumer' | 'provider', action: DisputeAction, note: { message?: string | undefined; evidence?: Record<string, unknown> | undefined }) =>
  deps.disputes.request(ctx, id, { kind: 'act', by: { actor, caller: requireAgent(ctx) }, action, note });

/** POST /v1/disputes/{id}/respond (D12.3): the provider, while `open`. */
export const respondDispute = (deps: TransactionDeps): OperationHandler<Ops['respondDispute']> => async ({ path, body }, ctx) =>
  byParty(deps, ctx, path.disputeId, 'provider', { kind: 'respond', outcome: body.outcome, refundCents: body.refundCents }, { message: body.message, evidence: body.evidence });

/** POST /v1/disputes/{id}/decide (D12.4): the consumer, on a proposal. */
export const decideDispute = (deps: TransactionDeps): OperationHandler<Ops['decideDispute']> => async ({ path, body }, ctx) =>
  byParty(deps, ctx, path.disputeId, 'consumer', { kind: 'decide', accept: body.accept }, { message: body.message });

/** POST /v1/disputes/{id}/withdraw (D12.5): the consumer, until resolved; the provider wins. */
export const withdrawDispute = (deps: TransactionDeps): OperationHandler<Ops['withdrawDispute']> => async ({ path, body }, ctx) =>
  byParty(deps, ctx, path.disputeId, 'consumer', { kind: 'withdraw' }, { message: body.message });

/** POST /admin/v1/disputes/{id}/resolve (D12.6): the operator, any outcome of any unresolved dispute. */
export const resolveDispute = (deps: TransactionDeps): OperationHandler<Ops['resolveDispute']> => async ({ path, body }, ctx) =>
  deps.disputes.request(ctx, path.disputeId, { kind: 'act', by: { actor: 'operator', requestId: ctx.requestId }, action: { kind: 'resolve', outcome: body.outcome, refundCents: body.refundCents }, note: { message: body.note } });

/** D12.7: no answer from the provider by the deadline: the consumer wins. */
export const disputeTimers = (deps: TransactionDeps): Record<string, TimerHandler<Database>> => ({
  [TIMERS.disputeDeadline]: async (trx, timer, work) => void (await deps.disputes.within(trx, work, timer.key, { kind: 'act', by: { actor: 'exchange' }, action: { kind: 'deadline' }, note: {} })),
});

/** GET /v1/disputes/{id} (D12.9): its parties and the owner agents of their accounts. */
export const getDispute = (deps: TransactionDeps): OperationHandler<Ops['getDispute']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const s = await deps.disputes.read(path.disputeId);
  if (!s || (!actsAs(caller, s.purchase, 'consumer') && !actsAs(caller, s.purchase, 'provider'))) throw new AppError('NOT_FOUND', 'No such dispute.');
  return { data: disputeView(s.dispute) };
};

/** GET /v1/transactions/{id}/dispute (D12.9): the transaction's parties. */
export const getTransactionDispute = (deps: TransactionDeps): OperationHandler<Ops['getTransactionDispute']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const t = await visibleTransaction(deps, caller.agentId, path.transactionId);
  if (!t.disputeId) throw new AppError('NOT_FOUND', 'This transaction has no dispute.');
  const s = await deps.disputes.read(t.disputeId);
  if (!s) throw new AppError('NOT_FOUND', 'No such dispute.');
  return { data: disputeView(s.dispute) };
};

/** GET /admin/v1/disputes (D15.3): every dispute, or those in one status, the oldest deadline first. */
export const listDisputes = (deps: TransactionDeps): OperationHandler<Ops['listDisputes']> => async ({ query }) => {
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const q = deps.db.selectFrom('disputes').$if(query.status !== undefined, (b) => b.where('status', '=', query.status!));
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('deadlineAt').orderBy('id').limit(limit).offset(offset).execute(),
    q.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { data: rows.map(disputeView), pagination: pagination(count.n, limit, offset) };
};
