import { randomUUID } from 'node:crypto';
import { pagination, transactionsOperatorAction, walletOperatorAction, webhooksOperatorAction, type identityOps, type MessageDef, type OperatorActionData, type Static } from '@aex/contracts';
import { consumeIdempotently, type OperationHandler, type Stoppable } from '@aex/platform';
import { sql, type Kysely } from 'kysely';
import type { IdentityDeps } from '../context.js';
import type { Database } from '../db/schema.js';

type Action = Static<typeof OperatorActionData>;

/**
 * D15.3: the operator's audit log, kept by identity. Identity's own operator
 * actions are written in the database transaction of their effect; other services write theirs to
 * their outbox (in the transaction of the effect, or right after a read) and identity keeps each
 * once, under the message id.
 */
export async function recordOperatorAction(trx: Kysely<Database>, a: Action & { service: string; id?: string; at: Date }): Promise<void> {
  await trx
    .insertInto('operatorActions')
    .values({ id: a.id ?? randomUUID(), action: a.action, service: a.service, targetType: a.targetType, targetId: a.targetId, requestId: a.requestId, details: JSON.stringify(a.details) as never, at: a.at })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/** The actions other services report, one consumer per reporting service. */
export async function collectOperatorActions(deps: IdentityDeps): Promise<Stoppable> {
  const from = (service: string, def: MessageDef<typeof OperatorActionData>) =>
    consumeIdempotently({
      bus: deps.bus, tx: deps.tx, logger: deps.logger, durable: `identity-audit-${service}`, def,
      handle: (trx, a, _work, env) => recordOperatorAction(trx, { ...a, service, id: env.id, at: new Date(env.occurredAt) }),
    });
  const consumers = await Promise.all([from('wallet', walletOperatorAction), from('transactions', transactionsOperatorAction), from('webhooks', webhooksOperatorAction)]);
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}

/** GET /admin/v1/audit: newest first, paginated (operator token only, checked at the gateway). */
export const listOperatorActions = (deps: IdentityDeps): OperationHandler<(typeof identityOps)['listOperatorActions']> => async ({ query }) => {
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const [rows, count] = await Promise.all([
    deps.db.selectFrom('operatorActions').selectAll().orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    deps.db.selectFrom('operatorActions').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return {
    data: rows.map((r) => ({
      id: r.id, action: r.action, service: r.service,
      target: r.targetType === null ? null : { type: r.targetType, id: r.targetId },
      requestId: r.requestId, details: r.details, at: r.at.toISOString(),
    })),
    pagination: pagination(count.n, limit, offset),
  };
};
