import { sql, type RawBuilder } from 'kysely';
import { exchangeMetrics, outsideTrace, type Stoppable } from '@aex/platform';
import type { WebhookDeps } from '../context.js';
import type { Database, DeliveryRow } from '../db/schema.js';
import { afterFailure } from '../domain/schedule.js';
import { signatureHeader } from '../domain/signing.js';
import { secretsInForce } from '../endpoints/endpoints.js';
import type { AttemptResult } from '../db/schema.js';
import { TimedBatches } from './timed-batches.js';

export interface DispatcherOptions {
  /** Attempts under way at once on this replica. */
  concurrency?: number;
  /** Attempts under way at once to one agent's endpoint: a slow one never takes more. */
  perEndpoint?: number;
  /** How often due deliveries are looked for when nothing wakes the dispatcher. */
  pollMs?: number;
}

/** A place of an endpoint taken for a fresh delivery before its row is written (the intake's hand-off). */
export interface Place {
  readonly agentId: string;
  readonly start: number;
}

/** What the intake hands the dispatcher: fresh deliveries go out without a claim round. */
export interface Handoff {
  /** How long a claim holds a delivery (ms). */
  readonly lease: number;
  /** How far a stuck endpoint's waiting deliveries are put off (ms). */
  readonly putOff: number;
  reserve(agentId: string): Place | null;
  isStuck(agentId: string): boolean;
  launch(place: Place, row: Claimed): void;
  giveUp(place: Place): void;
  waitingFor(agentIds: Iterable<string>): void;
}

/**
 * Delivers what is due (D14.3–D14.4), each endpoint at most `perEndpoint` attempts at once on this
 * replica, so a slow or dead endpoint takes only its own places and never holds up the others (no
 * head-of-line blocking); attempts run concurrently up to `concurrency`.
 *
 * A fresh delivery whose endpoint has a free place is written already claimed by the intake and
 * sent at once (`reserve`, then `launch`): the common case costs no claim. The rest — retries coming
 * due, deliveries whose endpoint was full, what another replica left — are claimed in rounds: due
 * deliveries claimed for a lease, at most the free places of each agent, none of an agent at its
 * limit. A round runs when something may be waiting for a place that has just come free, and on a
 * poll. Each attempt's outcome and the delivery's next state commit together; the schedule lives in
 * the rows, so it survives restarts, and a dispatcher that dies mid-attempt leaves a claim that
 * lapses: the attempt is made again (at least once, same webhook-id).
 */
export class Dispatcher implements Stoppable, Handoff {
  /** When each attempt under way started, by agent (agents with attempts under way only). */
  private readonly started = new Map<string, number[]>();
  /** Agents whose waiting deliveries were put off, and when. */
  private readonly deferred = new Map<string, number>();
  /** Agents that may have due deliveries unclaimed: a place of theirs coming free starts a round. */
  private readonly waiting = new Set<string>();
  /** The last round filled every free place: more may be due. */
  private moreDue = true;
  private total = 0;
  /** Attempts started so far: handed over by the intake as written, and claimed by rounds. */
  readonly counts = { handedOff: 0, claimed: 0 };
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | null = null;
  /**
   * The stuck endpoints' bookkeeping (putting off, giving back), one statement at a time: two of them
   * never lock one endpoint's rows in different orders, and a give-back is never overtaken by a
   * put-off decided before it.
   */
  private bookkept: Promise<void> = Promise.resolve();
  private readonly refills = new Set<Promise<void>>();
  private deferPending = false;
  private again = false;
  private stopped = false;
  private readonly attempts = new Set<Promise<void>>();
  private readonly concurrency: number;
  private readonly perEndpoint: number;
  /** How long a claim holds a delivery: the attempt's deadline and room to record it (ms). */
  readonly lease: number;
  /** How far a stuck endpoint's waiting deliveries are put off (ms). */
  readonly putOff: number;
  private readonly recorder: TimedBatches<{ row: Attempted; r: Outcome }>;

  constructor(private readonly deps: WebhookDeps, opts: DispatcherOptions = {}) {
    this.recorder = new TimedBatches((batch) => recordAll(deps, batch).then(() => undefined), RECORD_BATCH);
    this.concurrency = opts.concurrency ?? 128;
    this.perEndpoint = opts.perEndpoint ?? 4;
    this.lease = deps.config.WEBHOOK_TIMEOUT_MS + 10_000;
    this.putOff = Math.max(deps.config.WEBHOOK_TIMEOUT_MS, PUT_OFF_MIN_MS);
    this.timer = outsideTrace(() => setInterval(() => this.kick(), opts.pollMs ?? 250));
  }

  /** Looks for due deliveries now (a new one was written, an attempt ended). */
  kick(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = outsideTrace(() => this.drain())
      .catch((err) => this.deps.logger.warn({ err }, 'webhook dispatch round failed; retrying'))
      .finally(() => {
        this.draining = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.draining;
    await this.bookkept;
    await Promise.allSettled([...this.refills]);
    await Promise.allSettled([...this.attempts]);
    await this.recorder.flush();
  }

  /**
   * A place of `agentId`'s endpoint for a delivery about to be written, if one is free and none of
   * the agent's deliveries waits before it (those go first, in order, through a round).
   */
  reserve(agentId: string): Place | null {
    if (this.stopped || this.total >= this.concurrency || this.waiting.has(agentId)) return null;
    const starts = this.started.get(agentId) ?? [];
    if (starts.length >= this.perEndpoint) return null;
    return this.take(agentId);
  }

  /** The delivery was written claimed in `place`: its attempt starts now. */
  launch(place: Place, row: Claimed): void {
    this.counts.handedOff++;
    this.attempt(place, row);
  }

  /** No delivery was written for `place` (an event seen before, an agent without a URL). */
  giveUp(place: Place): void {
    this.free(place);
  }

  /** The agent's endpoint is stuck: its new deliveries are written put off, for its own places to take. */
  isStuck(agentId: string): boolean {
    return this.deferred.has(agentId);
  }

  /** Deliveries of these agents were written unclaimed, due now: a round takes them. */
  waitingFor(agentIds: Iterable<string>): void {
    let room = false;
    for (const agentId of agentIds) {
      this.waiting.add(agentId);
      room ||= (this.started.get(agentId)?.length ?? 0) < this.perEndpoint;
    }
    if (room && this.total < this.concurrency) this.kick();
  }

  private take(agentId: string): Place {
    const start = performance.now();
    this.started.set(agentId, [...(this.started.get(agentId) ?? []), start]);
    this.total++;
    return { agentId, start };
  }

  private free({ agentId, start }: Place): void {
    this.total--;
    const starts = (this.started.get(agentId) ?? []).filter((s) => s !== start);
    if (starts.length > 0) this.started.set(agentId, starts);
    else this.started.delete(agentId);
  }

  /** Sends one attempt in `place`; the place is the endpoint's while the request is on the wire. */
  private attempt(place: Place, row: Claimed): void {
    // The record then commits in the recorder's next batch (the row stays claimed until it has).
    const run: Promise<void> = signAndSend(this.deps, row, row.url, row.secret ? secretsInForce({ ...row, secret: row.secret }, this.deps.now()) : [])
      .then((r) => {
        this.release(place, r.ok);
        return this.recorder.add({ row, r });
      }, (err) => {
        this.release(place, false);
        this.deps.logger.error({ err, webhookId: row.webhookId }, 'webhook attempt failed unexpectedly; it is made again when its claim lapses');
      })
      .catch((err) => this.deps.logger.error({ err, webhookId: row.webhookId }, 'webhook attempt could not be recorded; it is made again when its claim lapses'))
      .finally(() => this.attempts.delete(run));
    this.attempts.add(run);
  }

  private async drain(): Promise<void> {
    // Off the round's path: a stuck endpoint's bookkeeping never delays the others' claims.
    if (!this.deferPending) {
      this.deferPending = true;
      this.bookkeeping(() => {
        this.deferPending = false;
        return this.deferStuck();
      }, 'could not put off a stuck endpoint\'s deliveries; the next round tries again');
    }
    const room = this.concurrency - this.total;
    if (room <= 0) {
      this.moreDue = true;
      return;
    }
    const inFlight = new Map([...this.started].map(([agent, starts]) => [agent, starts.length]));
    // What this round may find for the agents thought to be waiting: those it does not fill up are
    // waiting no more (what the intake notes meanwhile is added back).
    const asked = [...this.waiting];
    this.waiting.clear();
    let rows: Claimed[];
    try {
      rows = await this.claim(room, [...inFlight]);
    } catch (err) {
      for (const agent of asked) this.waiting.add(agent);
      throw err;
    }
    this.moreDue = rows.length >= room;
    const claimed = new Map<string, number>();
    const giveBack: string[] = [];
    for (const row of rows) {
      const starts = this.started.get(row.agentId) ?? [];
      if (starts.length >= this.perEndpoint || this.total >= this.concurrency) {
        // Places taken by the intake while the claim ran.
        giveBack.push(row.webhookId);
        this.waiting.add(row.agentId);
        continue;
      }
      claimed.set(row.agentId, (claimed.get(row.agentId) ?? 0) + 1);
      this.counts.claimed++;
      this.attempt(this.take(row.agentId), row);
    }
    for (const agent of asked) {
      const free = this.perEndpoint - (inFlight.get(agent) ?? 0);
      if (free <= 0 || (claimed.get(agent) ?? 0) >= free) this.waiting.add(agent);
    }
    if (giveBack.length > 0) await this.deps.db.updateTable('deliveries').set({ claimedUntil: null }).where('webhookId', 'in', giveBack).execute();
  }

  /**
   * An endpoint is stuck when every one of its places has been taken for `STUCK_MS` (a dead or very
   * slow receiver). Its other due deliveries are then put off — their due time moves `putOff` ahead,
   * the time they had is kept — and so are its new ones as the intake writes them: no round reads a
   * stuck endpoint's backlog, which costs the others nothing. Its own places, as they come free, take
   * its oldest deliveries (`refill`); its first success gives the rest their due time back. Should
   * this replica die, what it put off comes due again after `putOff`.
   */
  private async deferStuck(): Promise<void> {
    const now = performance.now();
    const stuck = [...this.started]
      .filter(([agent, starts]) => starts.length >= this.perEndpoint && now - starts[0]! >= STUCK_MS && now - (this.deferred.get(agent) ?? -Infinity) >= STUCK_MS)
      .map(([agent]) => agent);
    if (stuck.length === 0) return;
    for (const agent of stuck) this.deferred.set(agent, now);
    await sql`
      update deliveries set deferred_from = coalesce(deferred_from, next_attempt_at),
        next_attempt_at = now() + make_interval(secs => ${this.putOff / 1000})
      where agent_id = any(${stuck}::uuid[]) and status = 'pending' and next_attempt_at <= now()
        and (claimed_until is null or claimed_until < now())`.execute(this.deps.db);
  }

  /** Once stopped, none is begun: what was put off comes due when its put-off ends. */
  private bookkeeping(step: () => Promise<void>, failure: string): void {
    if (this.stopped) return;
    this.bookkept = this.bookkept.then(step).catch((err) => this.deps.logger.warn({ err }, failure));
  }

  /** An attempt's request ended (`ok`: with a 2xx): its endpoint's place and the dispatcher's are free again. */
  private release(place: Place, ok: boolean): void {
    this.free(place);
    const { agentId } = place;
    if (this.deferred.has(agentId)) {
      if (ok) {
        // The endpoint answers again: what was put off is due again as it was.
        this.deferred.delete(agentId);
        this.bookkeeping(async () => {
          await this.deps.db.updateTable('deliveries').set({ nextAttemptAt: sql`deferred_from`, deferredFrom: null })
            .where('agentId', '=', agentId).where('status', '=', 'pending').where('deferredFrom', 'is not', null).execute();
          this.waitingFor([agentId]);
        }, 'could not give back the due times of a stuck endpoint\'s deliveries; they come due when put off ends');
      } else {
        const refill: Promise<void> = this.refill(agentId)
          .catch((err) => this.deps.logger.warn({ err, agentId }, 'could not claim a stuck endpoint\'s next deliveries; they come due when put off ends'))
          .finally(() => this.refills.delete(refill));
        this.refills.add(refill);
      }
      return;
    }
    // Under load a round waits until enough places are free: one claim per many attempts.
    if (this.waiting.has(agentId) || (this.moreDue && this.concurrency - this.total >= Math.min(CLAIM_MIN_ROOM, this.concurrency))) this.kick();
  }

  /**
   * A stuck endpoint's places that came free are given to its own oldest waiting deliveries (put off
   * or due), claimed by one query on its rows alone: its backlog is never made due all at once, so no
   * round reads it. The places are taken before the query, so places freed together never claim more.
   */
  private async refill(agentId: string): Promise<void> {
    const places: Place[] = [];
    while ((this.started.get(agentId)?.length ?? 0) < this.perEndpoint && this.total < this.concurrency && !this.stopped) places.push(this.take(agentId));
    if (places.length === 0) return;
    let rows: Claimed[] = [];
    try {
      rows = await this.claimRows(sql`
        select webhook_id from deliveries
        where agent_id = ${agentId} and status = 'pending' and (claimed_until is null or claimed_until < now())
          and (deferred_from is not null or next_attempt_at <= now())
        order by coalesce(deferred_from, next_attempt_at)
        limit ${places.length}
        for update skip locked`);
    } finally {
      for (const place of places.slice(rows.length)) this.free(place);
    }
    rows.forEach((row, i) => {
      this.counts.claimed++;
      this.attempt(places[i]!, row);
    });
    // Nothing of it waits any more: the endpoint is no longer treated as stuck.
    if (rows.length === 0 && !this.started.has(agentId)) this.deferred.delete(agentId);
  }

  /**
   * Claims due deliveries, at most `perEndpoint` of each agent, oldest due first.
   */
  private async claim(limit: number, inFlight: [agent: string, attempts: number][]): Promise<Claimed[]> {
    const busy = inFlight.filter(([, n]) => n >= this.perEndpoint).map(([agent]) => agent);
    return this.claimRows(sql`
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
      where c.place <= ${this.perEndpoint} - coalesce(f.n, 0)
      order by c.next_attempt_at
      limit ${limit}`);
  }

  /**
   * Claims the deliveries `ids` selects for a lease, with what their attempts need. The selection
   * runs once (a materialized common table: a LIMIT inside `IN (…)` may be evaluated again and claim
   * more), and the condition is checked again on each row the UPDATE locks, so two dispatchers never
   * hold one.
   */
  private async claimRows(ids: RawBuilder<unknown>): Promise<Claimed[]> {
    const { rows } = await sql<Claimed>`
      with chosen as materialized (${ids}), claimed as (
        update deliveries d set claimed_until = now() + make_interval(secs => ${this.lease / 1000})
        where d.webhook_id in (select webhook_id from chosen)
          and d.status = 'pending' and (d.claimed_until is null or d.claimed_until < now())
        returning d.webhook_id, d.agent_id, d.body, d.attempt_count, d.attempts_left
      )
      ${withWhereTo(sql`claimed`)}`.execute(this.deps.db);
    return rows;
  }

}

/** A claimed delivery with where it goes now and its agent's secrets. */
export type Claimed = Pick<DeliveryRow, 'webhookId' | 'agentId' | 'body' | 'attemptCount' | 'attemptsLeft'> & { url: string | null }
  & { [K in 'secret' | 'previousSecret' | 'previousExpiresAt']: Database['secrets'][K] | null };

/**
 * The deliveries of the common table `rows` (`webhook_id, agent_id, body, attempt_count,
 * attempts_left`) with where each goes now and its agent's secrets: what an attempt needs.
 */
export function withWhereTo(rows: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    select w.webhook_id, w.agent_id, w.body, w.attempt_count, w.attempts_left, e.url, s.secret, s.previous_secret, s.previous_expires_at
    from ${rows} w left join endpoints e on e.agent_id = w.agent_id left join secrets s on s.agent_id = w.agent_id`;
}

/** How long all of an endpoint's places must have been taken for it to count as stuck. */
const STUCK_MS = 1000;

/** A stuck endpoint's deliveries are put off at least this far (ms): rarely read again while it stays stuck. */
const PUT_OFF_MIN_MS = 60_000;

/** Free places that make an ended attempt start a claim at once (else the next kick or poll does). */
const CLAIM_MIN_ROOM = 16;

/** Due deliveries looked at per claim, oldest first (bounds the claim's cost whatever the backlog). */
const SCAN_LIMIT = 2000;

/** Signs and sends one attempt of a delivery to the agent's URL as it is now. */
export async function sendOnce(deps: WebhookDeps, row: Pick<DeliveryRow, 'webhookId' | 'agentId' | 'body'>, urlNow?: string): Promise<AttemptResult & { url: string | null }> {
  const [endpoint, secret] = await Promise.all([
    urlNow ? { url: urlNow } : deps.db.selectFrom('endpoints').select('url').where('agentId', '=', row.agentId).executeTakeFirst(),
    deps.db.selectFrom('secrets').selectAll().where('agentId', '=', row.agentId).executeTakeFirst(),
  ]);
  return signAndSend(deps, row, endpoint?.url ?? null, secret ? secretsInForce(secret, deps.now()) : []);
}

async function signAndSend(deps: WebhookDeps, row: Pick<DeliveryRow, 'webhookId' | 'body'>, url: string | null, secrets: string[]): Promise<AttemptResult & { url: string | null }> {
  if (!url || secrets.length === 0) {
    return { url, ok: false, address: null, statusCode: null, latencyMs: 0, errorClass: 'no_endpoint', error: 'the agent has no webhook URL now', responseExcerpt: null };
  }
  const timestamp = Math.floor(deps.now().getTime() / 1000);
  const headers = {
    'webhook-id': row.webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, row.webhookId, timestamp, row.body),
  };
  return { url, ...(await deps.sender.post(url, headers, row.body)) };
}

type Outcome = AttemptResult & { url: string | null };
type Attempted = Pick<DeliveryRow, 'webhookId' | 'attemptCount' | 'attemptsLeft'>;

/** The delivery's next state after an attempt: delivered, due again after the schedule's delay, or dead (D14.4). */
function nextState(deps: WebhookDeps, row: Attempted, r: Outcome, now: Date) {
  const next = r.ok ? { status: 'delivered' as const } : afterFailure(deps.delays, row.attemptsLeft - 1, now);
  return {
    status: next.status,
    attemptsLeft: r.ok ? row.attemptsLeft : row.attemptsLeft - 1,
    nextAttemptAt: next.status === 'pending' ? next.nextAttemptAt : null,
  };
}

/**
 * Attempts and the deliveries' next states, written together in one statement for a batch of
 * attempts (group commit: one round trip for many attempts). Each is recorded only by the holder of
 * the attempt (`attempt_count` unchanged since the claim), so an attempt made twice after a lapsed
 * claim is logged once.
 */
async function recordAll(deps: WebhookDeps, batch: { row: Attempted; r: Outcome }[]): Promise<Map<string, DeliveryRow['status']>> {
  const now = deps.now();
  const values = batch.map(({ row, r }) => {
    const n = nextState(deps, row, r, now);
    return sql`(${row.webhookId}::text, ${row.attemptCount}::int, ${n.status}::text, ${n.attemptsLeft}::int, ${n.nextAttemptAt}::timestamptz,
      ${new Date(now.getTime() - r.latencyMs)}::timestamptz, ${r.url}::text, ${r.address}::text, ${r.statusCode}::int, ${r.latencyMs}::int,
      ${r.errorClass}::text, ${r.error}::text, ${r.responseExcerpt}::text)`;
  });
  const updated = await sql<{ webhookId: string; status: DeliveryRow['status'] }>`
    with v (webhook_id, seen, status, left_after, next_at, at, url, address, status_code, latency_ms, error_class, error, response_excerpt) as (
      values ${sql.join(values)}
    ), updated as (
      update deliveries d set status = v.status, attempt_count = v.seen + 1, attempts_left = v.left_after,
        next_attempt_at = v.next_at, deferred_from = null, claimed_until = null, updated_at = ${now}
      from v where d.webhook_id = v.webhook_id and d.attempt_count = v.seen
      returning d.webhook_id, d.status
    ), logged as (
      insert into attempts (webhook_id, attempt, at, url, address, status_code, latency_ms, error_class, error, response_excerpt)
      select v.webhook_id, v.seen + 1, v.at, v.url, v.address, v.status_code, v.latency_ms, v.error_class, v.error, v.response_excerpt
      from v join updated u on u.webhook_id = v.webhook_id
    )
    select webhook_id, status from updated`.execute(deps.db);
  // Each attempt recorded, counted by what it led to.
  const latency = new Map(batch.map(({ row, r }) => [row.webhookId, r.latencyMs]));
  for (const u of updated.rows) {
    attempts.inc({ outcome: u.status === 'delivered' ? 'delivered' : u.status === 'dead' ? 'dead_lettered' : 'failed' });
    attemptDuration.observe({}, (latency.get(u.webhookId) ?? 0) / 1000);
  }
  return new Map(updated.rows.map((u) => [u.webhookId, u.status]));
}

const attempts = exchangeMetrics.webhookAttempts();
const attemptDuration = exchangeMetrics.webhookAttemptDuration();
// Every outcome is a series from the start, so a dashboard shows 0 rather than no data.
for (const outcome of ['delivered', 'failed', 'dead_lettered']) attempts.inc({ outcome }, 0);

/** One attempt's record, on its own (the test route answers with it). */
export async function recordAttempt(deps: WebhookDeps, row: Attempted, r: Outcome): Promise<DeliveryRow['status'] | null> {
  return (await recordAll(deps, [{ row, r }])).get(row.webhookId) ?? null;
}

/** Attempts' records are written in batches of up to 64, an attempt waiting at most 3 ms. */
const RECORD_BATCH = { max: 64, waitMs: 3 };
