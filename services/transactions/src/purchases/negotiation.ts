import { AppError, OFFER_EXPIRY, type transactionOps } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import type { NegotiationRow } from '../db/schema.js';
import type { LastMessage } from '../domain/negotiation.js';
import { assertAction } from '../domain/state-machine.js';
import { approverOf, checkDelegation, delegationOf, lockAgents } from './limits.js';
import { awaitRow, lastMessage, lockTransaction, purchaseStep, refuseAfterEffect, visibleTransaction } from './repository.js';
import { negotiationView, transactionView } from './views.js';

type Ops = typeof transactionOps;

function lastOf(m: NegotiationRow): LastMessage {
  const price = (m.terms as { priceCents?: unknown }).priceCents;
  return { fromAgentId: m.fromAgentId, round: m.round, messageType: m.messageType, priceCents: typeof price === 'number' ? price : null };
}

/**
 * POST /v1/transactions/{id}/negotiate (spec "Negotiations", D11), decided by `decidePurchase` (turn,
 * message and round rules are `decideNegotiationMessage`'s). An `accept` agrees to the latest offer's price: the consumer's delegation is checked
 * again at that price (D10.2), then the hold is asked of the wallet; the answer is the transaction
 * in `funds_held` (having passed through `matched`), 402/403 with nothing changed, or 202 while the
 * wallet has not answered within SAGA_WAIT_MS.
 */
export const negotiate = (deps: TransactionDeps): OperationHandler<Ops['negotiate']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  const seen = await visibleTransaction(deps.db, caller, path.transactionId);
  assertAction('negotiate', seen.status);
  // Read before the database transaction: no lock is held across a call to another service.
  const delegation = body.type === 'accept' ? await delegationOf(deps, seen.consumerAgentId, ctx.requestId) : null;
  let agreedPriceCents: number | null = null;
  const reply = await ctx.effect(deps.tx, async (trx, work) => {
    if (delegation) await lockAgents(trx, [seen.consumerAgentId]);
    let last: LastMessage | undefined;
    const lock = async () => {
      const t = await lockTransaction(trx, seen.id);
      last = lastOf((await lastMessage(trx, seen.id))!);
      return t;
    };
    const command = () => ({ kind: 'negotiate', by: caller.agentId, body, last: last!, expiresInSeconds: body.expiresInSeconds ?? OFFER_EXPIRY.defaultSeconds, maxTransactionCents: deps.config.MAX_TRANSACTION_CENTS, approver: delegation && approverOf(deps, delegation) }) as const;
    const { state: t } = (await purchaseStep(deps, trx, work, seen.id, command, { lock }))!;
    if (t.pendingAcceptBy || t.status === 'awaiting_approval') {
      // D10.2: the consumer's rules again, at the agreed price, before the hold is asked for — or
      // before it waits for the owner's approval (D10.3), which a refusal here makes no one ask for.
      agreedPriceCents = t.pendingAcceptPriceCents ?? t.agreedPriceCents;
      await checkDelegation(trx, delegation!.rules, { consumerAgentId: t.consumerAgentId, category: t.category, priceCents: agreedPriceCents!, now: deps.now(), excluding: t.id });
      return { status: t.pendingAcceptBy ? 202 : 200, data: transactionView(t, caller.accountId) };
    }
    return { data: transactionView(t, caller.accountId) };
  });
  if (body.type !== 'accept' || reply.data.status === 'awaiting_approval') return reply;
  const t = await awaitRow(deps.db, deps.signals, seen.id, deps.config.SAGA_WAIT_MS, (r) => r.hold !== 'requested');
  if (t.hold === 'held') return { ...reply, status: 200, data: transactionView(t, caller.accountId) };
  if (t.hold === 'refused' || (t.status === 'negotiating' && !t.pendingAcceptBy)) {
    return refuseAfterEffect(ctx, deps.db, new AppError('INSUFFICIENT_FUNDS', 'The consumer\'s available balance is too low to hold the agreed price; the negotiation goes on.', { details: { transactionId: t.id, requiredCents: agreedPriceCents } }));
  }
  return { ...reply, status: 202, data: transactionView(t, caller.accountId) };
};

/** GET /v1/transactions/{id}/negotiations: every message by round, parties only (D11.5). */
export const listNegotiations = (deps: TransactionDeps): OperationHandler<Ops['listNegotiations']> => async ({ path }, ctx) => {
  const t = await visibleTransaction(deps.db, requireAgent(ctx), path.transactionId);
  const rows = await deps.db.selectFrom('negotiationMessages').selectAll().where('transactionId', '=', t.id).orderBy('round').execute();
  return { data: rows.map(negotiationView) };
};
