import { sql, type Transaction } from 'kysely';
import { applyOnce, callOrThrow, consumeIdempotently, type HandlerContext, type OperationHandler, type Stoppable } from '@aex/platform';
import { AppError, events, identityOps, validator, type catalogOps, type Principal } from '@aex/contracts';
import type { CatalogDeps } from '../context.js';
import type { Database } from '../db/schema.js';

/**
 * The catalog's replica of providers (docs/architecture.md "Layout of a service"): name, status and trust score of
 * every agent, kept from identity's events through its outbox, JetStream and these idempotent
 * consumers. Events may arrive out of order across consumers, so each write is guarded by the time
 * the fact was true (`source_at`, `trust_at`); leaving `active` is final (agents are never reactivated).
 */
export async function startProviderReplica(deps: CatalogDeps): Promise<Stoppable> {
  const base = { bus: deps.bus, tx: deps.tx, logger: deps.logger };
  const consumers = await Promise.all([
    consumeIdempotently({
      ...base, durable: 'catalog-agent-created', def: events.agentCreated,
      handle: async (trx, e, work, env) => upsertProvider(trx, { ...e, at: new Date(env.occurredAt) }, e.trustScore),
    }),
    consumeIdempotently({
      ...base, durable: 'catalog-agent-updated', def: events.agentUpdated,
      handle: async (trx, e, work, env) => upsertProvider(trx, { ...e, at: new Date(env.occurredAt) }),
    }),
    consumeIdempotently({
      ...base, durable: STATUS_CONSUMER, def: events.agentStatusChanged,
      handle: async (trx, e, work, env) => upsertProvider(trx, { ...e, at: new Date(env.occurredAt) }),
      afterCommit: (e) => forgetProvider(deps, e.agentId),
    }),
    consumeIdempotently({
      ...base, durable: 'catalog-agent-trust', def: events.trustScoreChanged,
      handle: async (trx, e, work, env) => {
        await trx.updateTable('providers').set({ trustScore: e.trustScore, trustAt: new Date(env.occurredAt) })
          .where('agentId', '=', e.agentId).where('trustAt', '<=', new Date(env.occurredAt)).execute();
      },
    }),
  ]);
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}

const STATUS_CONSUMER = 'catalog-agent-status';
const statusChange = validator(events.agentStatusChanged.data);

/**
 * catalog.applyAgentEvent: an `agent.status_changed` event handed over by identity before it answers
 * (D6.5: a deactivated agent's services leave listing and discovery at once). Applied once, under the
 * consumer's name, so the same event arriving later through JetStream is found applied.
 */
export const applyAgentEvent = (deps: CatalogDeps): OperationHandler<(typeof catalogOps)['applyAgentEvent']> => async ({ body }) => {
  if (body.type !== events.agentStatusChanged.type) throw new AppError('VALIDATION_ERROR', 'Only agent status changes are applied directly.', { field: '/body/type' });
  const e = statusChange.parse(body.data, '/body/data');
  const applied = await applyOnce(deps.tx, STATUS_CONSUMER, body, (trx) => upsertProvider(trx, { ...e, at: new Date(body.occurredAt) }));
  if (applied) await forgetProvider(deps, e.agentId);
  return { data: { applied } };
};

/**
 * After a provider's status changed here: the contracts of its services that the transactions
 * replicas keep say `providerStatus`, so they are forgotten before the change is answered
 * (identity waits for `applyAgentEvent`) or acknowledged (the event through JetStream).
 */
const forgetProvider = (deps: CatalogDeps, agentId: string) => deps.replicas.forget({ agentIds: [agentId] });

interface ProviderFact {
  agentId: string;
  accountId: string;
  name: string;
  status: string;
  at: Date;
}

async function upsertProvider(trx: Transaction<Database>, f: ProviderFact, trustScore?: number): Promise<void> {
  await trx
    .insertInto('providers')
    .values({ agentId: f.agentId, accountId: f.accountId, name: f.name, status: f.status, trustScore: trustScore ?? 50, sourceAt: f.at, trustAt: trustScore === undefined ? new Date(0) : f.at })
    .onConflict((oc) =>
      oc.column('agentId').doUpdateSet({
        name: sql`case when providers.source_at <= excluded.source_at then excluded.name else providers.name end`,
        // Leaving `active` is final; among later facts the newest wins.
        status: sql`case when providers.status <> 'active' then providers.status when providers.source_at <= excluded.source_at then excluded.status else providers.status end`,
        sourceAt: sql`greatest(providers.source_at, excluded.source_at)`,
      }),
    )
    .execute();
}

/**
 * Makes sure the replica knows the caller before it registers a service: its `agent.created` event
 * may still be on its way. Asks identity for the caller's own record; any later event overrides it.
 */
export async function ensureProvider(deps: CatalogDeps, caller: Principal, ctx: HandlerContext): Promise<void> {
  const known = await deps.db.selectFrom('providers').select('agentId').where('agentId', '=', caller.agentId).executeTakeFirst();
  if (known) return;
  const agent = await callOrThrow(deps.bus, identityOps.getAgent, {
    ctx: { requestId: ctx.requestId, principal: caller },
    input: { path: { agentId: caller.agentId }, query: {}, body: {} },
  }, deps.config.RPC_TIMEOUT_MS);
  // Older than any event, so that every event about this agent wins over this snapshot.
  const epoch = new Date(0);
  await deps.db
    .insertInto('providers')
    .values({ agentId: caller.agentId, accountId: caller.accountId, name: agent.name, status: agent.status, trustScore: agent.trustScore, sourceAt: epoch, trustAt: epoch })
    .onConflict((oc) => oc.column('agentId').doNothing())
    .execute();
}
