import { randomUUID } from 'node:crypto';
import { AppError, pagination, transactionsOperatorAction, type DisputeView, type Principal, type transactionOps } from '@aex/contracts';
import { requireAgent, runStep, type OperationHandler, type TimerHandler, type UnitOfWork } from '@aex/platform';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { TransactionDeps } from '../context.js';
import type { Database, DisputeRow } from '../db/schema.js';
import { decideDisputeAction, disputeEntry, type DisputeAction, type DisputeActor, type DisputeEffect } from '../domain/disputes.js';
import { TIMERS } from '../domain/purchase.js';
import { assertAction } from '../domain/state-machine.js';
import type { VersionedRow } from '../purchases/known-transactions.js';
import { lockTransaction, purchaseStep, requireRole, visibleTransaction } from '../purchases/repository.js';

type Ops = typeof transactionOps;
type Trx = Transaction<Database>;

/**
 * D12: disputes, owned by the transaction service. Opening one stops the review window and keeps
 * the hold; each step is one database transaction with the dispute and its transaction locked
 * (in that order everywhere); a resolution moves the money through the wallet saga (D12.8):
 * `consumer_wins` returns the hold (`failed`), `provider_wins` settles it, `partial_refund` returns
 * the refund and settles the rest with the fee on the rest (`settled`), `provider_redo` sends the
 * transaction back to `executing` with a new `expiresAt`. A transaction is disputed once at most.
 */

export function disputeView(d: DisputeRow): DisputeView {
  return {
    id: d.id, transactionId: d.transactionId, consumerAgentId: d.consumerAgentId, providerAgentId: d.providerAgentId,
    reason: d.reason, description: d.description, evidence: d.evidence, status: d.status,
    openedAt: d.openedAt.toISOString(), deadlineAt: d.deadlineAt.toISOString(),
    proposal: d.proposal, outcome: d.outcome, refundCents: d.refundCents,
    resolvedAt: d.resolvedAt?.toISOString() ?? null, resolvedBy: d.resolvedBy, messages: d.messages,
  };
}

/**
 * D12.9: a dispute is visible to its parties, and to the owner agent of either party's account, who
 * may act for its agent (D2.2; the console's disputes); to anyone else it does not exist (404).
 */
async function visibleDispute(db: Kysely<Database>, caller: Principal, id: string): Promise<DisputeRow & { accounts: Accounts }> {
  const d = await db.selectFrom('disputes as d').innerJoin('transactions as t', 't.id', 'd.transactionId')
    .selectAll('d').select(['t.consumerAccountId', 't.providerAccountId']).where('d.id', '=', id).executeTakeFirst();
  if (!d) throw new AppError('NOT_FOUND', 'No such dispute.');
  const { consumerAccountId, providerAccountId, ...dispute } = d;
  const accounts = { consumer: consumerAccountId, provider: providerAccountId };
  if (!actsAs(caller, dispute, accounts, 'consumer') && !actsAs(caller, dispute, accounts, 'provider')) throw new AppError('NOT_FOUND', 'No such dispute.');
  return { ...dispute, accounts };
}

interface Accounts { consumer: string; provider: string | null }

/** Whether the caller is the party `role` of the dispute, or the owner agent of that party's account. */
const actsAs = (caller: Principal, d: Pick<DisputeRow, 'consumerAgentId' | 'providerAgentId'>, accounts: Accounts, role: 'consumer' | 'provider') =>
  (role === 'consumer' ? d.consumerAgentId : d.providerAgentId) === caller.agentId || (caller.isOwner && caller.accountId === accounts[role]);

/** POST /v1/transactions/{id}/dispute (D12.1): the consumer, on `delivered`; the hold stays. */
export const openDispute = (deps: TransactionDeps): OperationHandler<Ops['openDispute']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  const seen = await visibleTransaction(deps.db, caller, path.transactionId);
  requireRole(seen, caller, 'consumer', 'dispute');
  assertAction('dispute', seen.status);
  const now = deps.now();
  return ctx.effect(deps.tx, async (trx, work) => {
    const disputeId = randomUUID();
    // The transaction moves first (D12.1: refused unless delivered, undisputed and not being settled).
    const { state: t } = (await purchaseStep(deps, trx, work, seen.id, { kind: 'openDispute', disputeId }))!;
    const d: DisputeRow = {
      id: disputeId, transactionId: t.id, consumerAgentId: t.consumerAgentId, providerAgentId: t.providerAgentId,
      reason: body.reason, description: body.description, evidence: body.evidence ?? null, status: 'open', proposal: null,
      outcome: null, refundCents: null, messages: [disputeEntry('consumer', 'opened', now, { message: body.description, evidence: body.evidence ?? null })],
      openedAt: now, deadlineAt: new Date(now.getTime() + deps.config.DISPUTE_RESPONSE_SECONDS * 1000), resolvedAt: null, resolvedBy: null, updatedAt: now,
    };
    await trx.insertInto('disputes').values({ ...d, evidence: json(d.evidence), proposal: null, messages: json(d.messages) }).execute();
    work.schedule({ kind: TIMERS.disputeDeadline, key: d.id, fireAt: d.deadlineAt });
    return { status: 201, data: disputeView(d) };
  });
};

/** GET /v1/disputes/{id} (D12.9). */
export const getDispute = (deps: TransactionDeps): OperationHandler<Ops['getDispute']> => async ({ path }, ctx) =>
  ({ data: disputeView(await visibleDispute(deps.db, requireAgent(ctx), path.disputeId)) });

/** GET /v1/transactions/{id}/dispute (D12.9). */
export const getTransactionDispute = (deps: TransactionDeps): OperationHandler<Ops['getTransactionDispute']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const t = await visibleTransaction(deps.db, caller, path.transactionId);
  if (!t.disputeId) throw new AppError('NOT_FOUND', 'This transaction has no dispute.');
  return { data: disputeView(await visibleDispute(deps.db, caller, t.disputeId)) };
};

/** POST /v1/disputes/{id}/respond (D12.3): the provider, while `open`. */
export const respondDispute = (deps: TransactionDeps): OperationHandler<Ops['respondDispute']> => async ({ path, body }, ctx) =>
  byParty(deps, ctx, path.disputeId, 'provider', { kind: 'respond', outcome: body.outcome, refundCents: body.refundCents }, { message: body.message, evidence: body.evidence });

/** POST /v1/disputes/{id}/decide (D12.4): the consumer, on a proposal. */
export const decideDispute = (deps: TransactionDeps): OperationHandler<Ops['decideDispute']> => async ({ path, body }, ctx) =>
  byParty(deps, ctx, path.disputeId, 'consumer', { kind: 'decide', accept: body.accept }, { message: body.message });

/** POST /v1/disputes/{id}/withdraw (D12.5): the consumer, until resolved; the provider wins. */
export const withdrawDispute = (deps: TransactionDeps): OperationHandler<Ops['withdrawDispute']> => async ({ path, body }, ctx) =>
  byParty(deps, ctx, path.disputeId, 'consumer', { kind: 'withdraw' }, { message: body.message });

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

/** POST /admin/v1/disputes/{id}/resolve (D12.6): the operator, any outcome of any unresolved dispute. */
export const resolveDispute = (deps: TransactionDeps): OperationHandler<Ops['resolveDispute']> => async ({ path, body }, ctx) => {
  return ctx.effect(deps.tx, async (trx, work) => {
    const d = await actOn(deps, trx, work, path.disputeId, 'operator', { kind: 'resolve', outcome: body.outcome, refundCents: body.refundCents }, { message: body.note }, ctx.requestId);
    if (!d) throw new AppError('NOT_FOUND', 'No such dispute.');
    return { data: disputeView(d) };
  });
};

async function byParty(deps: TransactionDeps, ctx: Parameters<OperationHandler<Ops['respondDispute']>>[1], id: string, role: 'consumer' | 'provider', action: DisputeAction, note: { message?: string; evidence?: Record<string, unknown> }) {
  const caller = requireAgent(ctx);
  const seen = await visibleDispute(deps.db, caller, id);
  if (!actsAs(caller, seen, seen.accounts, role)) {
    throw new AppError('FORBIDDEN', `Only the ${role} may ${action.kind} this dispute.`, { details: { role } });
  }
  return ctx.effect(deps.tx, async (trx, work) => ({ data: disputeView((await actOn(deps, trx, work, id, role, action, note))!) }));
}

/** D12.7: no answer from the provider by the deadline: the consumer wins. */
export const disputeTimers = (deps: TransactionDeps): Record<string, TimerHandler<Database>> => ({
  [TIMERS.disputeDeadline]: async (trx, timer, work) => void (await actOn(deps, trx, work, timer.key, 'exchange', { kind: 'deadline' })),
});

/**
 * One step of a dispute (`runStep`), with the dispute and then its transaction locked: decided by
 * `decideDispute`, the dispute written, then its effects — the deadline dropped and the transaction's
 * side of a resolution (`purchaseStep`), and an operator's step in the audit log (D15.3), all in the
 * same database transaction. Returns the dispute as it now is, or undefined when there is none.
 */
export async function actOn(deps: TransactionDeps, trx: Trx, work: UnitOfWork, id: string, actor: DisputeActor, action: DisputeAction, note: { message?: string; evidence?: Record<string, unknown> } = {}, requestId?: string): Promise<DisputeRow | undefined> {
  const now = deps.now();
  let t: VersionedRow | undefined;
  const result = await runStep<DisputeRow, DisputeRow, DisputeEffect>({
    lock: async () => {
      const d = await trx.selectFrom('disputes').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
      if (d) t = await lockTransaction(trx, d.transactionId);
      return d;
    },
    decide: (d) => decideDisputeAction(d, t!.agreedPriceCents!, actor, action, note, now),
    write: async (d, next) => {
      await trx.updateTable('disputes').set({
        status: next.status, proposal: json(next.proposal), outcome: next.outcome, refundCents: next.refundCents,
        resolvedAt: next.resolvedAt, resolvedBy: next.resolvedBy, messages: json(next.messages), updatedAt: next.updatedAt,
      }).where('id', '=', d.id).execute();
      return next;
    },
    apply: async (d, effects) => {
      for (const e of effects) {
        switch (e.kind) {
          case 'cancelDeadline':
            work.cancelTimers(TIMERS.disputeDeadline, d.id);
            break;
          case 'resolvePurchase':
            // D12.8: what the outcome does to the transaction and, through the wallet saga, to the money.
            await purchaseStep(deps, trx, work, t!.id, { kind: 'resolveDispute', outcome: e.outcome, refundCents: e.refundCents }, { lock: async () => t });
            break;
          case 'audit':
            work.enqueue(transactionsOperatorAction, { action: 'dispute.resolve', targetType: 'dispute', targetId: d.id, requestId: requestId ?? '', details: { outcome: d.outcome, refundCents: d.refundCents, transactionId: d.transactionId } }, { now });
            break;
        }
      }
    },
  });
  return result?.state;
}

const json = (v: unknown) => (v === null ? null : JSON.stringify(v)) as never;
