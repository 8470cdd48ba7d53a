import { sql } from 'kysely';
import { outsideTrace, type Stoppable } from '@aex/platform';
import type { WebhookDeps } from './context.js';
import type { Database, DeliveryRow } from './db/schema.js';
import { afterFailure } from './domain/schedule.js';
import { signatureHeader } from './domain/signing.js';
import { secretsInForce } from './endpoints.js';
import type { AttemptResult } from './sender.js';
import { GroupCommit } from './group-commit.js';

export interface DispatcherOptions {
  /** Attempts under way at once on this replica. */
  concurrency?: number;
  /** Attempts under way at once to one agent's endpoint: a slow one never takes more. */
  perEndpoint?: number;
  /** How often due deliveries are looked for when nothing wakes the dispatcher. */
  pollMs?: number;
}

/**
 * Delivers what is due (D14.3–D14.4). Each round claims due deliveries for a lease — at most
 * `perEndpoint` per agent, none of an agent already at its limit — so a slow or dead endpoint
 * takes only its own places and never holds up the others (no head-of-line blocking); attempts run
 * concurrently up to `concurrency`. Each attempt's outcome and the delivery's next state commit
 * together; the schedule lives in the rows, so it survives restarts, and a dispatcher that dies
 * mid-attempt leaves a claim that lapses: the attempt is made again (at least once, same webhook-id).
 */
export class Dispatcher implements Stoppable {
  /** When each attempt under way started, by agent (agents with attempts under way only). */
  private readonly started = new Map<string, number[]>();
  /** Agents whose waiting deliveries were put off, and when. */
  private readonly deferred = new Map<string, number>();
  private total = 0;
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private readonly attempts = new Set<Promise<void>>();
  private readonly concurrency: number;
  private readonly perEndpoint: number;
  private readonly leaseMs: number;
  private readonly recorder: GroupCommit<{ row: Attempted; r: Outcome }>;

  constructor(private readonly deps: WebhookDeps, opts: DispatcherOptions = {}) {
    this.recorder = new GroupCommit((batch) => recordAll(deps, batch).then(() => undefined), RECORD_BATCH);
    this.concurrency = opts.concurrency ?? 128;
    this.perEndpoint = opts.perEndpoint ?? 4;
    this.leaseMs = deps.config.WEBHOOK_TIMEOUT_MS + 10_000;
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
    await Promise.allSettled([...this.attempts]);
    await this.recorder.flush();
  }

  private async drain(): Promise<void> {
    await this.deferStuck();
    const room = this.concurrency - this.total;
    if (room <= 0) return;
    const rows = await this.claim(room, [...this.started].map(([agent, starts]) => [agent, starts.length]));
    const giveBack: string[] = [];
    for (const row of rows) {
      const starts = this.started.get(row.agentId) ?? [];
      if (starts.length >= this.perEndpoint || this.total >= this.concurrency) {
        giveBack.push(row.webhookId);
        continue;
      }
      const start = performance.now();
      this.started.set(row.agentId, [...starts, start]);
      this.total++;
      // The place is the endpoint's while the request is on the wire; the record then commits in
      // the recorder's next batch (the row stays claimed until it has).
      const run: Promise<void> = signAndSend(this.deps, row, row.url, row.secret ? secretsInForce({ ...row, secret: row.secret }, this.deps.now()) : [])
        .finally(() => this.release(row.agentId, start))
        .then((r) => this.recorder.add({ row, r }), (err) => this.deps.logger.error({ err, webhookId: row.webhookId }, 'webhook attempt failed unexpectedly; it is made again when its claim lapses'))
        .catch((err) => this.deps.logger.error({ err, webhookId: row.webhookId }, 'webhook attempt could not be recorded; it is made again when its claim lapses'))
        .finally(() => this.attempts.delete(run));
      this.attempts.add(run);
    }
    if (giveBack.length > 0) await this.deps.db.updateTable('deliveries').set({ claimedUntil: null }).where('webhookId', 'in', giveBack).execute();
  }

  /**
   * An endpoint is stuck when every one of its places has been taken for `STUCK_MS` (a dead or very
   * slow receiver). Its other due deliveries then wait — their due time moves to when its attempts
   * will have timed out, the time they had is kept — so that they are not read again by every
   * claim: a dead endpoint's backlog costs the others nothing. The first attempt of it that ends
   * gives them their due time back. At most once per `STUCK_MS` per endpoint.
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
        next_attempt_at = now() + make_interval(secs => ${this.deps.config.WEBHOOK_TIMEOUT_MS / 1000})
      where agent_id = any(${stuck}::uuid[]) and status = 'pending' and next_attempt_at <= now()
        and (claimed_until is null or claimed_until < now())`.execute(this.deps.db);
  }

  /** An attempt's request ended: its endpoint's place and the dispatcher's are free again. */
  private release(agentId: string, start: number): void {
    this.total--;
    const starts = (this.started.get(agentId) ?? []).filter((s) => s !== start);
    const left = starts.length;
    if (left > 0) this.started.set(agentId, starts);
    else this.started.delete(agentId);
    if (this.deferred.delete(agentId)) {
      // A place of the stuck endpoint is free: what waits for it is due again as it was.
      void this.deps.db.updateTable('deliveries').set({ nextAttemptAt: sql`deferred_from`, deferredFrom: null })
        .where('agentId', '=', agentId).where('status', '=', 'pending').where('deferredFrom', 'is not', null).execute()
        .then(() => this.kick(), (err) => this.deps.logger.warn({ err, agentId }, 'could not give back the due times of a stuck endpoint\'s deliveries; the next attempt of it does'));
    }
    // Under load a claim waits until enough places are free: one claim per many attempts.
    if (this.concurrency - this.total >= Math.min(CLAIM_MIN_ROOM, this.concurrency) || left === 0) this.kick();
  }

  /**
   * Claims due deliveries, at most `perEndpoint` of each agent, oldest due first. The claim is an
   * UPDATE whose condition is checked again on the row it locks, so two dispatchers never hold one.
   */
  private async claim(limit: number, inFlight: [agent: string, attempts: number][]): Promise<Claimed[]> {
    const busy = inFlight.filter(([, n]) => n >= this.perEndpoint).map(([agent]) => agent);
    const result = await sql<Claimed>`
      update deliveries d set claimed_until = now() + make_interval(secs => ${this.leaseMs / 1000})
      where d.webhook_id in (
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
        limit ${limit}
      )
      and d.status = 'pending' and (d.claimed_until is null or d.claimed_until < now())
      returning d.*,
        (select url from endpoints e where e.agent_id = d.agent_id) as url,
        (select s.secret from secrets s where s.agent_id = d.agent_id) as secret,
        (select s.previous_secret from secrets s where s.agent_id = d.agent_id) as previous_secret,
        (select s.previous_expires_at from secrets s where s.agent_id = d.agent_id) as previous_expires_at`.execute(this.deps.db);
    return result.rows;
  }

}

/** A claimed delivery with where it goes now and its agent's secrets. */
type Claimed = DeliveryRow & { url: string | null } & { [K in 'secret' | 'previousSecret' | 'previousExpiresAt']: Database['secrets'][K] | null };

/** How long all of an endpoint's places must have been taken for it to count as stuck. */
const STUCK_MS = 1000;

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
 * Attempts and the deliveries' next states, written together in one database transaction for a
 * batch of attempts (group commit: one round of statements for many attempts). Each is recorded only
 * by the holder of the attempt (`attempt_count` unchanged since the claim), so an attempt made twice
 * after a lapsed claim is logged once.
 */
async function recordAll(deps: WebhookDeps, batch: { row: Attempted; r: Outcome }[]): Promise<Map<string, DeliveryRow['status']>> {
  const now = deps.now();
  const values = batch.map(({ row, r }) => {
    const n = nextState(deps, row, r, now);
    return sql`(${row.webhookId}::text, ${row.attemptCount}::int, ${n.status}::text, ${n.attemptsLeft}::int, ${n.nextAttemptAt}::timestamptz)`;
  });
  return deps.db.transaction().execute(async (trx) => {
    const updated = await sql<{ webhookId: string; status: DeliveryRow['status'] }>`
      update deliveries d set status = v.status, attempt_count = v.seen + 1, attempts_left = v.left_after,
        next_attempt_at = v.next_at, deferred_from = null, claimed_until = null, updated_at = ${now}
      from (values ${sql.join(values)}) as v(webhook_id, seen, status, left_after, next_at)
      where d.webhook_id = v.webhook_id and d.attempt_count = v.seen
      returning d.webhook_id, d.status`.execute(trx);
    const done = new Map(updated.rows.map((u) => [u.webhookId, u.status]));
    const attempts = batch.filter(({ row }) => done.has(row.webhookId)).map(({ row, r }) => ({
      webhookId: row.webhookId, attempt: row.attemptCount + 1, at: new Date(now.getTime() - r.latencyMs), url: r.url, address: r.address,
      statusCode: r.statusCode, latencyMs: r.latencyMs, errorClass: r.errorClass, error: r.error, responseExcerpt: r.responseExcerpt,
    }));
    if (attempts.length > 0) await trx.insertInto('attempts').values(attempts).execute();
    return done;
  });
}

/** One attempt's record, on its own (the test route answers with it). */
export async function recordAttempt(deps: WebhookDeps, row: Attempted, r: Outcome): Promise<DeliveryRow['status'] | null> {
  return (await recordAll(deps, [{ row, r }])).get(row.webhookId) ?? null;
}

/** Attempts' records are written in batches of up to 64, an attempt waiting at most 3 ms. */
const RECORD_BATCH = { max: 64, waitMs: 3 };
