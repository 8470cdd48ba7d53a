import { sql } from 'kysely';
import { AppError, type Principal, type transactionOps } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import { disputeView } from '../disputes/views.js';
import { sessionsPage } from '../sessions/aggregate.js';
import { namedLike } from './names.js';
import { transactionsPage } from './repository.js';
import { negotiationView, transactionView } from './views.js';

type Ops = typeof transactionOps;

/**
 * The account's owner agent reads its agents' purchases (D2.2: it governs them); another agent of
 * the account is refused (403), another account does not see the account at all (404).
 */
export function requireOwnerOf(caller: Principal, accountId: string): void {
  if (caller.accountId !== accountId) throw new AppError('NOT_FOUND', 'No such account.');
  if (!caller.isOwner) throw new AppError('FORBIDDEN', "Only the account's owner agent sees its agents' purchases.", { details: { role: 'owner' } });
}

/**
 * GET /v1/accounts/{id}/transactions: the purchases of the account's agents (`role: provider`: their
 * sales), newest first (owner agent).
 */
export const listAccountTransactions = (deps: TransactionDeps): OperationHandler<Ops['listAccountTransactions']> => async ({ path, query }, ctx) => {
  const caller = requireAgent(ctx);
  requireOwnerOf(caller, path.accountId);
  const selling = query.role === 'provider';
  const q = deps.db.selectFrom('transactions')
    .where(selling ? 'providerAccountId' : 'consumerAccountId', '=', path.accountId)
    .$if(query.status !== undefined, (b) => b.where('status', '=', query.status!))
    .$if(query.agentId !== undefined, (b) => b.where(selling ? 'providerAgentId' : 'consumerAgentId', '=', query.agentId!))
    .$if(query.sessionId !== undefined, (b) => b.where('sessionId', '=', query.sessionId!))
    .$if(query.q !== undefined, (b) => b.where(namedLike(query.q!)));
  return transactionsPage(q, query, caller.accountId);
};

/** GET /v1/accounts/{id}/transactions/{transactionId}: one purchase or sale of the account's agents with its negotiation and dispute (owner agent). */
export const getAccountTransaction = (deps: TransactionDeps): OperationHandler<Ops['getAccountTransaction']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  requireOwnerOf(caller, path.accountId);
  const t = await deps.db.selectFrom('transactions').selectAll().where('id', '=', path.transactionId)
    .where((eb) => eb.or([eb('consumerAccountId', '=', path.accountId), eb('providerAccountId', '=', path.accountId)])).executeTakeFirst();
  if (!t) throw new AppError('NOT_FOUND', 'No such purchase or sale of this account.');
  const [messages, dispute, receipt] = await Promise.all([
    deps.db.selectFrom('negotiationMessages').selectAll().where('transactionId', '=', t.id).orderBy('round').execute(),
    t.disputeId ? deps.db.selectFrom('disputes').selectAll().where('id', '=', t.disputeId).executeTakeFirst() : undefined,
    deps.db.selectFrom('receipts').select(['jws', 'claims']).where('transactionId', '=', t.id).executeTakeFirst(),
  ]);
  const roles = [...(t.consumerAccountId === path.accountId ? ['consumer' as const] : []), ...(t.providerAccountId === path.accountId ? ['provider' as const] : [])];
  return { data: { transaction: transactionView(t, caller.accountId), roles, negotiation: messages.map(negotiationView), dispute: dispute ? disputeView(dispute) : null, receipt: receipt ? { receipt: receipt.jws, claims: receipt.claims } : null } };
};

/** GET /v1/accounts/{id}/sessions: the prepaid sessions of the account's agents (`role: provider`: those they sell in), newest first (owner agent). */
export const listAccountSessions = (deps: TransactionDeps): OperationHandler<Ops['listAccountSessions']> => async ({ path, query }, ctx) => {
  requireOwnerOf(requireAgent(ctx), path.accountId);
  const q = deps.db.selectFrom('sessions').where(query.role === 'provider' ? 'providerAccountId' : 'consumerAccountId', '=', path.accountId)
    .$if(query.status !== undefined, (b) => b.where('status', '=', query.status!));
  return sessionsPage(q, query);
};

/** GET /v1/accounts/{id}/spending: the account's (or one of its agents') purchases of the last `days` days whose price was held, by category (owner agent). */
export const spending = (deps: TransactionDeps): OperationHandler<Ops['spending']> => async ({ path, query }, ctx) => {
  requireOwnerOf(requireAgent(ctx), path.accountId);
  const days = query.days ?? 30;
  const since = new Date(deps.now().getTime() - days * 86_400_000);
  const rows = await deps.db.selectFrom('transactions')
    .select(['category', sql<number>`count(*)::int`.as('purchases'),
      sql<string>`coalesce(sum(agreed_price_cents) filter (where hold = 'settled'), 0)`.as('settled'),
      sql<string>`coalesce(sum(agreed_price_cents) filter (where hold in ('held', 'settling')), 0)`.as('held')])
    .where('consumerAccountId', '=', path.accountId)
    .$if(query.agentId !== undefined, (b) => b.where('consumerAgentId', '=', query.agentId!))
    .where('fundsHeldAt', '>=', since)
    .groupBy('category')
    .orderBy(sql`sum(agreed_price_cents)`, 'desc')
    .execute();
  return { data: { days, categories: rows.map((r) => ({ category: r.category, purchases: r.purchases, settledCents: Number(r.settled), heldCents: Number(r.held) })) } };
};

/** GET /admin/v1/figures (operator): money held now; purchases, settlements, volume and fees of the last `hours` hours, per hour. */
export const figures = (deps: TransactionDeps): OperationHandler<Ops['figures']> => async ({ query }) => {
  const hours = query.hours ?? 24;
  const now = deps.now();
  const from = new Date(Math.floor(now.getTime() / 3_600_000) * 3_600_000 - (hours - 1) * 3_600_000);
  const [held, bought, settled] = await Promise.all([
    deps.db.selectFrom('transactions').select(sql<string>`coalesce(sum(agreed_price_cents), 0)`.as('n')).where('hold', 'in', ['held', 'settling']).executeTakeFirstOrThrow(),
    deps.db.selectFrom('transactions').select([sql<Date>`date_trunc('hour', funds_held_at)`.as('hour'), sql<number>`count(*)::int`.as('n')])
      .where('fundsHeldAt', '>=', from).groupBy(sql`1`).execute(),
    deps.db.selectFrom('transactions').select([sql<Date>`date_trunc('hour', settled_at)`.as('hour'), sql<number>`count(*)::int`.as('n'),
      sql<string>`coalesce(sum(agreed_price_cents), 0)`.as('volume'), sql<string>`coalesce(sum(platform_fee_cents), 0)`.as('fees')])
      .where('settledAt', '>=', from).groupBy(sql`1`).execute(),
  ]);
  const perHour = Array.from({ length: hours }, (_, i) => {
    const hour = new Date(from.getTime() + i * 3_600_000);
    const b = bought.find((r) => new Date(r.hour).getTime() === hour.getTime());
    const s = settled.find((r) => new Date(r.hour).getTime() === hour.getTime());
    return { hour: hour.toISOString(), purchases: b?.n ?? 0, settled: s?.n ?? 0, volumeCents: Number(s?.volume ?? 0), feesCents: Number(s?.fees ?? 0) };
  });
  const sum = (k: 'purchases' | 'volumeCents' | 'feesCents') => perHour.reduce((n, h) => n + h[k], 0);
  return { data: { hours, heldCents: Number(held.n), settledCents: sum('volumeCents'), feesCents: sum('feesCents'), purchases: sum('purchases'), perHour } };
};
