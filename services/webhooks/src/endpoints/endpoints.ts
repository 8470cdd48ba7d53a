import { sql, type Transaction } from 'kysely';
import { events } from '@aex/contracts';
import { consumeIdempotently, type Stoppable } from '@aex/platform';
import type { WebhookDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { newSecret } from '../domain/signing.js';

type Trx = Transaction<Database>;

/**
 * The dispatcher's replica of where each agent's webhooks go (D14.1), kept from identity's agent
 * events through its outbox and JetStream. Events may arrive out of order across consumers, so a
 * write only wins when the fact is at least as new (`source_at`). D14.2: an agent's secret is made
 * when it first has a webhookUrl.
 */
export async function startEndpointReplica(deps: WebhookDeps): Promise<Stoppable> {
  const base = { bus: deps.bus, tx: deps.tx, logger: deps.logger };
  const apply = async (trx: Trx, e: { agentId: string; accountId: string; webhookUrl?: string | null }, occurredAt: string) => {
    await upsertEndpoint(trx, { agentId: e.agentId, accountId: e.accountId, url: e.webhookUrl, at: new Date(occurredAt) });
    if (e.webhookUrl) await ensureSecret(trx, e.agentId, deps.now());
  };
  const consumers = await Promise.all([
    consumeIdempotently({ ...base, durable: 'webhooks-agent-created', def: events.agentCreated, handle: (trx, e, work, env) => apply(trx, e, env.occurredAt) }),
    consumeIdempotently({ ...base, durable: 'webhooks-agent-updated', def: events.agentUpdated, handle: (trx, e, work, env) => apply(trx, e, env.occurredAt) }),
    consumeIdempotently({ ...base, durable: 'webhooks-agent-status', def: events.agentStatusChanged, handle: (trx, e, work, env) => apply(trx, e, env.occurredAt) }),
  ]);
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}

/** `url` undefined: the event does not say (an older event shape); the stored URL stays. */
async function upsertEndpoint(trx: Trx, f: { agentId: string; accountId: string; url: string | null | undefined; at: Date }): Promise<void> {
  await trx
    .insertInto('endpoints')
    .values({ agentId: f.agentId, accountId: f.accountId, url: f.url ?? null, sourceAt: f.at })
    .onConflict((oc) =>
      oc.column('agentId').doUpdateSet({
        url: f.url === undefined ? sql`endpoints.url` : sql`case when endpoints.source_at <= excluded.source_at then excluded.url else endpoints.url end`,
        sourceAt: sql`greatest(endpoints.source_at, excluded.source_at)`,
      }),
    )
    .execute();
}

/** D14.2: the agent's secret, made once. */
export async function ensureSecret(trx: Trx | WebhookDeps['db'], agentId: string, now: Date): Promise<void> {
  await trx.insertInto('secrets').values({ agentId, secret: newSecret(), previousSecret: null, previousExpiresAt: null, createdAt: now }).onConflict((oc) => oc.column('agentId').doNothing()).execute();
}

/** The secrets that sign now: the current one, and the replaced one for 24 h after a rotation. */
export function secretsInForce(row: Pick<Database['secrets'], 'secret' | 'previousSecret' | 'previousExpiresAt'>, now: Date): string[] {
  return row.previousSecret && row.previousExpiresAt && row.previousExpiresAt > now ? [row.secret, row.previousSecret] : [row.secret];
}
