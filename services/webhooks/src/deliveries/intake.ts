import { randomUUID } from 'node:crypto';
import { SESSION_EVENTS_FILTER, SessionEventData, subjects, TRANSACTION_EVENTS_FILTER, TransactionEventData, validator, type Validator } from '@aex/contracts';
import { ack, readMessage, retryLater, type Stoppable } from '@aex/platform';
import { TimedBatches } from './timed-batches.js';
import { sql, type Transaction } from 'kysely';
import type { WebhookDeps } from '../context.js';
import type { Handoff } from './dispatcher.js';
import { withWhereTo, type Claimed } from './due-deliveries.js';
import type { Database } from '../db/schema.js';
import { firstAttemptAt } from '../domain/schedule.js';
import { webhookIdOf } from '../domain/signing.js';

const dataCheck = validator(TransactionEventData);
const sessionCheck = validator(SessionEventData);
const CONSUMER = 'webhooks-transaction-events';
/**
 * Events written per database transaction at most, and how long the first waits for company (issue
 * 14). Every transaction event comes here — four per settled purchase — whether or not a party has a
 * webhook URL, and each batch is a commit of its own. With 10 ms, a busy exchange wrote batches of
 * about 1.7 events: 2.4 of the 8 commits of a lifecycle were this intake's. 40 ms gathers about four
 * times as many per commit (docs/performance.md); a webhook's first attempt starts
 * up to 40 ms after its event, far inside D14.4's first retry at 5 s.
 */
const BATCH = 128;
const BATCH_WAIT_MS = 40;

interface Pending { id: string; type: string; body: string; agents: string[] }

/**
 * D14.1: each `transaction.<status>` event becomes one delivery per party that has a webhook URL
 * (and, awaiting approval, for the consumer's account owner agent: D10.3),
 * written in the database transaction that records the event as processed (the idempotent
 * consumer's rule) — so a crash loses none, and a redelivered event never makes a second one:
 * deliveries are unique per event and agent, and the `webhook-id` is made here once. Events are
 * written in batches (group commit): a message is acknowledged only once its batch has committed.
 */
export async function startIntake(deps: WebhookDeps, dispatcher: Handoff): Promise<Stoppable> {
  const batches = new TimedBatches<Pending>((batch) => writeBatch(deps, dispatcher, batch), { max: BATCH, waitMs: BATCH_WAIT_MS });
  const events = <D extends { consumerAgentId: string; providerAgentId: string; ownerAgentId?: string }>(durable: string, filter: string, check: Validator<D>) => deps.bus.consume({
    stream: 'events',
    durable,
    filter: subjects.event(deps.bus.namespace, filter),
    concurrency: BATCH * 2,
    handler: async (msg) => {
      const read = readMessage(msg, check, deps.logger);
      if (!read.ok) return read.outcome;
      const { envelope, data } = read;
      const type = envelope.type.replace(/^transactions\./, '');
      // D14.1: the spec's payload, `data` with previousStatus and statusReason added. D10.3: a purchase
      // awaiting approval is told to the consumer's account owner agent too, whom the payload does not name.
      const { ownerAgentId, ...shown } = data;
      const body = JSON.stringify({ type, timestamp: envelope.occurredAt, data: shown });
      const agents = [...new Set([data.consumerAgentId, data.providerAgentId, ...(ownerAgentId ? [ownerAgentId] : [])])];
      try {
        await batches.add({ id: envelope.id, type, body, agents });
        return ack();
      } catch (err) {
        deps.logger.warn({ err, subject: msg.subject, attempt: msg.deliveryCount }, 'webhook intake failed; will retry');
        return retryLater(msg);
      }
    },
  });
  // D14.1 `transaction.<status>`; D17.6 `session.opened` and `session.closed`, to both parties alike.
  const consumers = [await events(CONSUMER, TRANSACTION_EVENTS_FILTER, dataCheck), await events('webhooks-session-events', SESSION_EVENTS_FILTER, sessionCheck)];
  return {
    async stop() {
      await Promise.all(consumers.map((c) => c.stop()));
      await batches.flush();
    },
  };
}

/**
 * One statement for a batch (atomic, one round trip): the events not processed before are marked
 * processed, and theirs are the deliveries written — one per party with a URL now, due at once.
 * A delivery whose endpoint has a free place on this replica is written claimed and handed to the
 * dispatcher as the statement returns; one whose endpoint is stuck is written put off, for the
 * endpoint's own places to take in order; the others wait for the dispatcher's next round.
 */
async function writeBatch(deps: WebhookDeps, dispatcher: Handoff, batch: Pending[]): Promise<void> {
  const now = deps.now();
  const dueAt = firstAttemptAt(deps.delays, now);
  // A batch may hold one event twice (a redelivery racing the first): once is enough.
  const events = [...new Map(batch.map((p) => [p.id, p])).values()];
  const rows = events.flatMap((p) => p.agents.map((agent) => ({ ...p, agent, webhookId: webhookIdOf(randomUUID()) })));
  const places = new Map(dueAt <= now ? rows.flatMap((r) => {
    const place = dispatcher.reserve(r.agent);
    return place ? [[r.webhookId, place] as const] : [];
  }) : []);
  const putOff = new Set(rows.filter((r) => !places.has(r.webhookId) && dispatcher.isStuck(r.agent)).map((r) => r.webhookId));
  let written: Claimed[];
  try {
    ({ rows: written } = await sql<Claimed>`
      with fresh as (
        insert into processed_messages (consumer, message_id)
        select ${CONSUMER}, id from unnest(${events.map((p) => p.id)}::uuid[]) as id
        on conflict do nothing
        returning message_id
      ), written as (
        insert into deliveries (webhook_id, agent_id, event_id, event_type, body, status, attempt_count, attempts_left, next_attempt_at, deferred_from, claimed_until, created_at, updated_at)
        select r.webhook_id, r.agent_id, r.event_id, r.event_type, r.body, 'pending', 0, ${deps.delays.length}::int,
          case when r.put_off then now() + make_interval(secs => ${dispatcher.putOff / 1000}) else ${dueAt}::timestamptz end,
          case when r.put_off then ${dueAt}::timestamptz end,
          case when r.claimed then now() + make_interval(secs => ${dispatcher.lease / 1000}) end, ${now}::timestamptz, ${now}::timestamptz
        from unnest(${rows.map((r) => r.webhookId)}::text[], ${rows.map((r) => r.agent)}::uuid[], ${rows.map((r) => r.id)}::uuid[],
          ${rows.map((r) => r.type)}::text[], ${rows.map((r) => r.body)}::text[], ${rows.map((r) => places.has(r.webhookId))}::bool[], ${rows.map((r) => putOff.has(r.webhookId))}::bool[])
          as r(webhook_id, agent_id, event_id, event_type, body, claimed, put_off)
        join fresh f on f.message_id = r.event_id
        join endpoints e on e.agent_id = r.agent_id and e.url is not null
        on conflict (event_id, agent_id) do nothing
        returning webhook_id, agent_id, body, attempt_count, attempts_left
      )
      ${withWhereTo(sql`written`)}`.execute(deps.db));
  } catch (err) {
    for (const place of places.values()) dispatcher.giveUp(place);
    throw err;
  }
  const waiting = new Set<string>();
  for (const row of written) {
    const place = places.get(row.webhookId);
    places.delete(row.webhookId);
    if (place) dispatcher.launch(place, row);
    else if (!putOff.has(row.webhookId)) waiting.add(row.agentId);
  }
  for (const place of places.values()) dispatcher.giveUp(place);
  if (waiting.size > 0) dispatcher.waitingFor(waiting);
}

/** One delivery of one event to one agent (the test route's), its first attempt due at once. */
export async function addDelivery(deps: WebhookDeps, trx: Transaction<Database>, d: { agentId: string; eventId: string; eventType: string; body: string }): Promise<string | null> {
  const now = deps.now();
  const webhookId = webhookIdOf(randomUUID());
  const inserted = await trx
    .insertInto('deliveries')
    .values({
      webhookId, agentId: d.agentId, eventId: d.eventId, eventType: d.eventType, body: d.body, status: 'pending',
      attemptCount: 0, attemptsLeft: deps.delays.length, nextAttemptAt: firstAttemptAt(deps.delays, now), deferredFrom: null, claimedUntil: null, createdAt: now, updatedAt: now,
    })
    .onConflict((oc) => oc.columns(['eventId', 'agentId']).doNothing())
    .returning('webhookId')
    .executeTakeFirst();
  return inserted?.webhookId ?? null;
}
