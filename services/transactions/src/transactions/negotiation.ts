import { randomUUID } from 'node:crypto';
import { AppError, OFFER_EXPIRY, type transactionOps } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import type { NegotiationRow, TransactionRow } from '../db/schema.js';
import { decideNegotiationMessage, type LastMessage } from '../domain/negotiation.js';
import { assertAction } from '../domain/state-machine.js';
import { checkDelegation, delegationOf, lockAgents } from './rules.js';
import { awaitRow, lastMessage, lockTransaction, move, refuseAfterEffect, requestHold, scheduleOfferExpiry, visibleTransaction } from './repository.js';
import { negotiationView, transactionView } from './views.js';

type Ops = typeof transactionOps;

function lastOf(m: NegotiationRow): LastMessage {
  const price = (m.terms as { priceCents?: unknown }).priceCents;
  return { fromAgentId: m.fromAgentId, round: m.round, messageType: m.messageType, priceCents: typeof price === 'number' ? price : null };
}

/** 409 while an accept waits for its hold: the negotiation is settled unless the wallet refuses. */
function assertNoPendingAccept(t: TransactionRow): void {
  if (t.pendingAcceptBy) throw new AppError('INVALID_STATE', 'An accept of this negotiation is waiting for the consumer\'s funds to be held.', { details: { status: t.status, pending: 'accept' } });
}

/**
 * POST /v1/transactions/{id}/negotiate (spec "Negotiations", D11). Turn, message and round rules are
 * `decideNegotiationMessage`'s. An `accept` agrees to the latest offer's price: the consumer's delegation is checked
 * again at that price (D10.2), then the hold is asked of the wallet; the answer is the transaction
 * in `funds_held` (having passed through `matched`), 402/403 with nothing changed, or 202 while the
 * wallet has not answered within SAGA_WAIT_MS.
 */
export const negotiate = (deps: TransactionDeps): OperationHandler<Ops['negotiate']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  const seen = await visibleTransaction(deps.db, caller, path.transactionId);
  assertAction('negotiate', seen.status);
  // Read before the database transaction: no lock is held across a call to another service.
  const rules = body.type === 'accept' ? await delegationOf(deps, seen.consumerAgentId, ctx.requestId) : null;
  const now = deps.now();
  let agreedPriceCents: number | null = null;
  const reply = await ctx.effect(deps.db, async (trx) => {
    if (rules) await lockAgents(trx, [seen.consumerAgentId]);
    let t: TransactionRow = (await lockTransaction(trx, seen.id))!;
    assertAction('negotiate', t.status);
    assertNoPendingAccept(t);
    const last = (await lastMessage(trx, t.id))!;
    const ruling = decideNegotiationMessage(lastOf(last), caller.agentId, body, t.pricing, deps.config.MAX_TRANSACTION_CENTS);
    if (ruling.kind === 'refused') throw new AppError(ruling.code, ruling.message, ruling.field ? { field: ruling.field } : {});
    if (ruling.agreedPriceCents !== null) {
      // accept: recorded when the hold is placed (saga.ts); until then the accept is pending.
      agreedPriceCents = ruling.agreedPriceCents;
      await checkDelegation(trx, rules!, { consumerAgentId: t.consumerAgentId, category: t.category, priceCents: agreedPriceCents, now });
      const attempt = await requestHold(trx, t, ruling.agreedPriceCents, now);
      t = await trx
        .updateTable('transactions')
        .set({ hold: 'requested', holdAttempt: attempt, pendingAcceptBy: caller.agentId, pendingAcceptPriceCents: ruling.agreedPriceCents, pendingAcceptMessage: body.message ?? null, updatedAt: now })
        .where('id', '=', t.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return { status: 202, data: transactionView(t) };
    }
    const expiresAt = ruling.ends ? null : new Date(now.getTime() + (body.expiresInSeconds ?? OFFER_EXPIRY.defaultSeconds) * 1000);
    await trx.insertInto('negotiationMessages').values({
      id: randomUUID(), transactionId: t.id, fromAgentId: caller.agentId, messageType: body.type, round: ruling.round,
      terms: JSON.stringify(body.terms) as never, message: body.message ?? null, expiresAt, createdAt: now,
    }).execute();
    if (ruling.ends) {
      t = await move(trx, t, 'cancelled', { statusReason: ruling.ends }, now);
    } else {
      // D11.4: the new offer's expiry replaces the previous one's.
      await scheduleOfferExpiry(trx, t.id, ruling.round, expiresAt!);
      t = await trx.updateTable('transactions').set({ updatedAt: now }).where('id', '=', t.id).returningAll().executeTakeFirstOrThrow();
    }
    return { data: transactionView(t) };
  });
  deps.relay.kick();
  if (body.type !== 'accept') return reply;
  const t = await awaitRow(deps.db, deps.signals, seen.id, deps.config.SAGA_WAIT_MS, (r) => r.hold !== 'requested');
  if (t.hold === 'held') return { ...reply, status: 200, data: transactionView(t) };
  if (t.hold === 'refused' || (t.status === 'negotiating' && !t.pendingAcceptBy)) {
    return refuseAfterEffect(ctx, deps.db, new AppError('INSUFFICIENT_FUNDS', 'The consumer\'s available balance is too low to hold the agreed price; the negotiation goes on.', { details: { transactionId: t.id, requiredCents: agreedPriceCents } }));
  }
  return { ...reply, status: 202, data: transactionView(t) };
};

/** GET /v1/transactions/{id}/negotiations: every message by round, parties only (D11.5). */
export const listNegotiations = (deps: TransactionDeps): OperationHandler<Ops['listNegotiations']> => async ({ path }, ctx) => {
  const t = await visibleTransaction(deps.db, requireAgent(ctx), path.transactionId);
  const rows = await deps.db.selectFrom('negotiationMessages').selectAll().where('transactionId', '=', t.id).orderBy('round').execute();
  return { data: rows.map(negotiationView) };
};
