import { sql } from 'kysely';
import { AppError, pagination, type Principal, type transactionOps } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import { disputeView } from '../disputes/handlers.js';
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

/** GET /v1/accounts/{id}/transactions: the purchases of the account's agents, newest first (owner agent). */
export const listAccountTransactions = (deps: TransactionDeps): OperationHandler<Ops['listAccountTransactions']> => async ({ path, query }, ctx) => {
  const caller = requireAgent(ctx);
  requireOwnerOf(caller, path.accountId);
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const q = deps.db.selectFrom('transactions')
    .where('consumerAccountId', '=', path.accountId)
    .$if(query.status !== undefined, (b) => b.where('status', '=', query.status!))
    .$if(query.agentId !== undefined, (b) => b.where('consumerAgentId', '=', query.agentId!));
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('createdAt', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    q.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { data: rows.map((r) => transactionView(r, caller.accountId)), pagination: pagination(count.n, limit, offset) };
};

/** GET /v1/accounts/{id}/transactions/{transactionId}: one purchase with its negotiation and dispute (owner agent). */
export const getAccountTransaction = (deps: TransactionDeps): OperationHandler<Ops['getAccountTransaction']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  requireOwnerOf(caller, path.accountId);
  const t = await deps.db.selectFrom('transactions').selectAll().where('id', '=', path.transactionId).where('consumerAccountId', '=', path.accountId).executeTakeFirst();
  if (!t) throw new AppError('NOT_FOUND', 'No such purchase of this account.');
  const [messages, dispute] = await Promise.all([
    deps.db.selectFrom('negotiationMessages').selectAll().where('transactionId', '=', t.id).orderBy('round').execute(),
    t.disputeId ? deps.db.selectFrom('disputes').selectAll().where('id', '=', t.disputeId).executeTakeFirst() : undefined,
  ]);
  return { data: { transaction: transactionView(t, caller.accountId), negotiation: messages.map(negotiationView), dispute: dispute ? disputeView(dispute) : null } };
};
