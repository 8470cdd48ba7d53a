import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database, DeliveryRow } from '../db/schema.js';

/**
 * The queries by which the dispatcher takes due deliveries — claimed for a lease, with what their
 * attempts need — and moves a stuck endpoint's due times (put off, given back).
 */

/** A claimed delivery with where it goes now and its agent's secrets. */
export type Claimed = Pick<DeliveryRow, 'webhookId' | 'agentId' | 'body' | 'attemptCount' | 'attemptsLeft'> & { url: string | null }
  & { [K in 'secret' | 'previousSecret' | 'previousExpiresAt']: Database['secrets'][K] | null };

/** Due deliveries looked at per claim, oldest first (bounds the claim's cost whatever the backlog). */
const SCAN_LIMIT = 2000;

/**
 * The deliveries of the common table `rows` (`webhook_id, agent_id, body, attempt_count,
 * attempts_left`) with where each goes now and its agent's secrets: what an attempt needs.
 */
export function withWhereTo(rows: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    select w.webhook_id, w.agent_id, w.body, w.attempt_count, w.attempts_left, e.url, s.secret, s.previous_secret, s.previous_expires_at
    from ${rows} w left join endpoints e on e.agent_id = w.agent_id left join secrets s on s.agent_id = w.agent_id`;
}

/**
 * Claims due deliveries for `leaseMs`, at most `perEndpoint` of each agent counting the attempts it
 * has `inFlight`, at most `limit` in all, oldest due first.
 */
export function claimDue(db: Kysely<Database>, opts: { limit: number; inFlight: [agent: string, attempts: number][]; perEndpoint: number; leaseMs: number }): Promise<Claimed[]> {
  const { limit, inFlight, perEndpoint } = opts;
  const busy = inFlight.filter(([, n]) => n >= perEndpoint).map(([agent]) => agent);
  return claimRows(db, opts.leaseMs, sql`
    select c.webhook_id from (
      select webhook_id, next_attempt_at, agent_id, row_number() over (partition by agent_id order by next_attempt_at) as place
      from (
        select webhook_id, agent_id, next_attempt_at from deliveries
        where status = 'pending' and next_attempt_at <= now()
          and (claimed_until is null or claimed_until < now())
          and agent_id <> all(${busy}::uuid[])
        order by next_attempt_at
        limit ${SCAN_LIMIT}
      ) due
    ) c
    left join unnest(${inFlight.map(([a]) => a)}::uuid[], ${inFlight.map(([, n]) => n)}::int[]) as f(agent_id, n) on f.agent_id = c.agent_id
    where c.place <= ${perEndpoint} - coalesce(f.n, 0)
    order by c.next_attempt_at
    limit ${limit}`);
}

/** Claims for `leaseMs` the `count` oldest waiting deliveries of one agent, put off or due. */
export function claimOldestOf(db: Kysely<Database>, agentId: string, count: number, leaseMs: number): Promise<Claimed[]> {
  return claimRows(db, leaseMs, sql`
    select webhook_id from deliveries
    where agent_id = ${agentId} and status = 'pending' and (claimed_until is null or claimed_until < now())
      and (deferred_from is not null or next_attempt_at <= now())
    order by coalesce(deferred_from, next_attempt_at)
    limit ${count}
    for update skip locked`);
}

/**
 * Claims the deliveries `ids` selects for a lease, with what their attempts need. The selection
 * runs once (a materialized common table: a LIMIT inside `IN (…)` may be evaluated again and claim
 * more), and the condition is checked again on each row the UPDATE locks, so two dispatchers never
 * hold one.
 */
async function claimRows(db: Kysely<Database>, leaseMs: number, ids: RawBuilder<unknown>): Promise<Claimed[]> {
  const { rows } = await sql<Claimed>`
    with chosen as materialized (${ids}), claimed as (
      update deliveries d set claimed_until = now() + make_interval(secs => ${leaseMs / 1000})
      where d.webhook_id in (select webhook_id from chosen)
        and d.status = 'pending' and (d.claimed_until is null or d.claimed_until < now())
      returning d.webhook_id, d.agent_id, d.body, d.attempt_count, d.attempts_left
    )
    ${withWhereTo(sql`claimed`)}`.execute(db);
  return rows;
}

/** Claims given back unused: the deliveries are due again for any round. */
export async function unclaim(db: Kysely<Database>, webhookIds: string[]): Promise<void> {
  await db.updateTable('deliveries').set({ claimedUntil: null }).where('webhookId', 'in', webhookIds).execute();
}

/**
 * The stuck agents' due, unclaimed deliveries put off by `putOffMs`: their due time moves ahead,
 * the time they had is kept.
 */
export async function putOff(db: Kysely<Database>, agentIds: string[], putOffMs: number): Promise<void> {
  await sql`
    update deliveries set deferred_from = coalesce(deferred_from, next_attempt_at),
      next_attempt_at = now() + make_interval(secs => ${putOffMs / 1000})
    where agent_id = any(${agentIds}::uuid[]) and status = 'pending' and next_attempt_at <= now()
      and (claimed_until is null or claimed_until < now())`.execute(db);
}

/** What was put off of one agent's deliveries is due again as it was. */
export async function giveBackDueTimes(db: Kysely<Database>, agentId: string): Promise<void> {
  await db.updateTable('deliveries').set({ nextAttemptAt: sql`deferred_from`, deferredFrom: null })
    .where('agentId', '=', agentId).where('status', '=', 'pending').where('deferredFrom', 'is not', null).execute();
}
