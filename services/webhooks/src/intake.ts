import { randomUUID } from 'node:crypto';
import { TRANSACTION_EVENTS_FILTER, TransactionEventData, type MessageDef } from '@aex/contracts';
import { consumeIdempotently, type Stoppable } from '@aex/platform';
import type { Transaction } from 'kysely';
import type { WebhookDeps } from './context.js';
import type { Database } from './db/schema.js';
import { firstAttemptAt } from './domain/schedule.js';
import { webhookIdOf } from './domain/signing.js';

/** Every `transaction.<status>` event at once (a wildcard subject; each event keeps its own type). */
const transactionEvents: MessageDef<typeof TransactionEventData> = { kind: 'event', owner: 'transactions', type: TRANSACTION_EVENTS_FILTER, data: TransactionEventData };

/**
 * D14.1: each transaction event becomes one delivery per party that has a webhook URL, written in
 * the database transaction that records the event as processed — so a crash loses none, and a
 * redelivered event (or the same event handled twice) never makes a second one: deliveries are
 * unique per event and agent, and the `webhook-id` is made here once.
 */
export function startIntake(deps: WebhookDeps): Promise<Stoppable> {
  return consumeIdempotently({
    bus: deps.bus,
    db: deps.db,
    logger: deps.logger,
    durable: 'webhooks-transaction-events',
    def: transactionEvents,
    concurrency: 8,
    afterCommit: deps.kick,
    handle: async (trx, data, env) => {
      const type = env.type.replace(/^transactions\./, '');
      // D14.1: the spec's payload, `data` with previousStatus and statusReason added.
      const body = JSON.stringify({ type, timestamp: env.occurredAt, data });
      for (const agentId of new Set([data.consumerAgentId, data.providerAgentId])) {
        await addDelivery(deps, trx, { agentId, eventId: env.id, eventType: type, body });
      }
    },
  });
}

/** A delivery of one event to one agent, if the agent has a webhook URL now; its first attempt due at once. */
export async function addDelivery(deps: WebhookDeps, trx: Transaction<Database>, d: { agentId: string; eventId: string; eventType: string; body: string }, opts: { always?: boolean } = {}): Promise<string | null> {
  if (!opts.always) {
    const endpoint = await trx.selectFrom('endpoints').select('url').where('agentId', '=', d.agentId).executeTakeFirst();
    if (!endpoint?.url) return null;
  }
  const now = deps.now();
  const webhookId = webhookIdOf(randomUUID());
  const inserted = await trx
    .insertInto('deliveries')
    .values({
      webhookId, agentId: d.agentId, eventId: d.eventId, eventType: d.eventType, body: d.body, status: 'pending',
      attemptCount: 0, attemptsLeft: deps.delays.length, nextAttemptAt: firstAttemptAt(deps.delays, now), claimedUntil: null, createdAt: now, updatedAt: now,
    })
    .onConflict((oc) => oc.columns(['eventId', 'agentId']).doNothing())
    .returning('webhookId')
    .executeTakeFirst();
  return inserted?.webhookId ?? null;
}
