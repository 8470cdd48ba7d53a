import { sql } from 'kysely';
import { outsideTrace, type Stoppable } from '@aex/platform';
import type { WebhookDeps } from './context.js';
import type { DeliveryRow } from './db/schema.js';
import { afterFailure } from './domain/schedule.js';
import { signatureHeader } from './domain/signing.js';
import { secretsInForce } from './endpoints.js';
import type { AttemptResult } from './sender.js';

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
  private readonly inFlight = new Map<string, number>();
  private total = 0;
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private readonly attempts = new Set<Promise<void>>();
  private readonly concurrency: number;
  private readonly perEndpoint: number;
  private readonly leaseMs: number;

  constructor(private readonly deps: WebhookDeps, opts: DispatcherOptions = {}) {
    this.concurrency = opts.concurrency ?? 64;
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
  }

  private async drain(): Promise<void> {
    const room = this.concurrency - this.total;
    if (room <= 0) return;
    const busy = [...this.inFlight].filter(([, n]) => n >= this.perEndpoint).map(([agent]) => agent);
    const rows = await this.claim(room, busy);
    const release: string[] = [];
    for (const row of rows) {
      const n = this.inFlight.get(row.agentId) ?? 0;
      if (n >= this.perEndpoint || this.total >= this.concurrency) {
        release.push(row.webhookId);
        continue;
      }
      this.inFlight.set(row.agentId, n + 1);
      this.total++;
      const run: Promise<void> = this.attempt(row)
        .catch((err) => this.deps.logger.error({ err, webhookId: row.webhookId }, 'webhook attempt could not be recorded; it is made again when its claim lapses'))
        .finally(() => {
          this.attempts.delete(run);
          this.total--;
          const left = (this.inFlight.get(row.agentId) ?? 1) - 1;
          if (left > 0) this.inFlight.set(row.agentId, left);
          else this.inFlight.delete(row.agentId);
          this.kick();
        });
      this.attempts.add(run);
    }
    if (release.length > 0) await this.deps.db.updateTable('deliveries').set({ claimedUntil: null }).where('webhookId', 'in', release).execute();
  }

  /**
   * Claims due deliveries, at most `perEndpoint` of each agent, oldest due first. The claim is an
   * UPDATE whose condition is checked again on the row it locks, so two dispatchers never hold one.
   */
  private async claim(limit: number, busy: string[]): Promise<DeliveryRow[]> {
    const result = await sql<DeliveryRow>`
      update deliveries d set claimed_until = now() + make_interval(secs => ${this.leaseMs / 1000})
      where d.webhook_id in (
        select c.webhook_id from (
          select webhook_id, next_attempt_at, row_number() over (partition by agent_id order by next_attempt_at) as place
          from deliveries
          where status = 'pending' and next_attempt_at <= now()
            and (claimed_until is null or claimed_until < now())
            and agent_id <> all(${busy}::uuid[])
        ) c
        where c.place <= ${this.perEndpoint}
        order by c.next_attempt_at
        limit ${limit}
      )
      and d.status = 'pending' and (d.claimed_until is null or d.claimed_until < now())
      returning d.*`.execute(this.deps.db);
    return result.rows;
  }

  /** One attempt of a claimed delivery, and its record. */
  private async attempt(row: DeliveryRow): Promise<void> {
    const result = await sendOnce(this.deps, row);
    await recordAttempt(this.deps, row, result);
  }
}

/** Signs and sends one attempt of a delivery to the agent's URL as it is now. */
export async function sendOnce(deps: WebhookDeps, row: Pick<DeliveryRow, 'webhookId' | 'agentId' | 'body'>, urlNow?: string): Promise<AttemptResult & { url: string | null }> {
  const [endpoint, secret] = await Promise.all([
    urlNow ? { url: urlNow } : deps.db.selectFrom('endpoints').select('url').where('agentId', '=', row.agentId).executeTakeFirst(),
    deps.db.selectFrom('secrets').selectAll().where('agentId', '=', row.agentId).executeTakeFirst(),
  ]);
  const url = endpoint?.url ?? null;
  if (!url || !secret) {
    return { url, ok: false, address: null, statusCode: null, latencyMs: 0, errorClass: 'no_endpoint', error: 'the agent has no webhook URL now', responseExcerpt: null };
  }
  const now = deps.now();
  const timestamp = Math.floor(now.getTime() / 1000);
  const headers = {
    'webhook-id': row.webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secretsInForce(secret, now), row.webhookId, timestamp, row.body),
  };
  return { url, ...(await deps.sender.post(url, headers, row.body)) };
}

/**
 * The attempt and the delivery's next state in one database transaction: delivered, due again after
 * the schedule's delay, or dead after the last allowed failure (D14.4). Recorded only by the holder
 * of the attempt (`attempt_count` unchanged since the claim), so an attempt made twice after a lapsed
 * claim is logged once.
 */
export async function recordAttempt(deps: WebhookDeps, row: Pick<DeliveryRow, 'webhookId' | 'attemptCount' | 'attemptsLeft'>, r: AttemptResult & { url: string | null }): Promise<DeliveryRow['status'] | null> {
  const now = deps.now();
  const attempt = row.attemptCount + 1;
  const next = r.ok ? { status: 'delivered' as const, nextAttemptAt: null } : afterFailure(deps.delays, row.attemptsLeft - 1, now);
  return deps.db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('deliveries')
      .set({
        status: next.status,
        attemptCount: attempt,
        attemptsLeft: r.ok ? row.attemptsLeft : row.attemptsLeft - 1,
        nextAttemptAt: next.status === 'pending' ? next.nextAttemptAt : null,
        claimedUntil: null,
        updatedAt: now,
      })
      .where('webhookId', '=', row.webhookId)
      .where('attemptCount', '=', row.attemptCount)
      .returning('status')
      .executeTakeFirst();
    if (!updated) return null;
    await trx.insertInto('attempts').values({
      webhookId: row.webhookId, attempt, at: new Date(now.getTime() - r.latencyMs), url: r.url, address: r.address, statusCode: r.statusCode, latencyMs: r.latencyMs,
      errorClass: r.errorClass, error: r.error, responseExcerpt: r.responseExcerpt,
    }).execute();
    return updated.status;
  });
}
