import { sql, type Kysely } from 'kysely';
import { subjects } from '@aex/contracts';
import type { Bus } from '../bus/types.js';
import { outsideTrace } from '../bus/tracing.js';
import type { PlatformTables } from '../db/platform-tables.js';
import type { Logger } from '../logger.js';
import { PRUNE_EVERY_MS, pruneProcessedMessages } from './processed-messages.js';
import type { HandOffTarget, OutboxRow } from './unit-of-work.js';
import { exchangeMetrics, metrics, serviceOf } from '../metrics.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * How long handed-off rows gather before one statement removes them, published (a statement per few
 * rows was a tenth of a lifecycle's statements). Far inside the hand-off's lease (`HAND_OFF_LEASE_MS`), so no drain takes a
 * row waiting for its removal; a crash in this time only has the rows published again after their
 * lease, which JetStream drops as duplicates of their message ids.
 */
const REMOVE_GATHER_MS = 1_000;

/**
 * Publishes committed outbox rows, two ways:
 * - **Hand-off** (the usual way): a unit of work's rows (`UnitOfWork`) were written already claimed
 *   while this relay runs; right after the commit the relay publishes them and removes them, the
 *   rows of many hand-offs in one statement. A saga's hop thus costs one publish, not a claim round.
 * - **Drain** (the safety net): a relay claims a batch of unclaimed rows (or rows whose claim lapsed)
 *   for a short lease in one statement (FOR UPDATE SKIP LOCKED inside it, so replicas relay side by
 *   side), publishes it with no database lock held, and removes what JetStream acknowledged in a
 *   second statement. It runs every `pollMs`, and at once after a hand-off JetStream did not take.
 * A crash before the removal leaves the rows claimed until the lease ends; they are then published
 * again, which JetStream drops as a duplicate (same msg id inside its window) and consumers drop by
 * processed id after it.
 *
 * Published rows are deleted, not kept: JetStream holds the messages (7 days), the table
 * holds only what is still on its way, and a removal writes no new row version and no index entry,
 * where marking a row published wrote both. Rows an earlier version marked (`published_at`) are
 * cleared by `drain`.
 */
export class OutboxRelay implements HandOffTarget {
  private timer: NodeJS.Timeout | undefined;
  /** Whether hand-offs are taken and drains run (between `start` and `stop`). */
  running = false;
  private draining: Promise<void> | null = null;
  private again = false;
  private lastCleanup = 0;
  private lastPrune = 0;
  private pruning: Promise<void> | null = null;
  private readonly handingOff = new Set<Promise<void>>();
  private toRemove: string[] = [];
  private removing: Promise<void> | null = null;
  private removeTimer: NodeJS.Timeout | undefined;
  private removeGathered: (() => void) | undefined;
  private uncollect: (() => void) | undefined;
  private readonly published = exchangeMetrics.eventsPublished();

  constructor(
    private readonly db: AnyDb,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly pollMs = 1_000,
    private readonly leaseMs = 5_000,
  ) {}

  start(): void {
    this.running = true;
    this.schedule(0);
    // What waits in the outbox, read when scraped: a relay falling behind shows as a growing age.
    const service = serviceOf(this.logger);
    const [pending, oldest] = [exchangeMetrics.outboxPending(), exchangeMetrics.outboxOldest()];
    this.uncollect = metrics.collect(async () => {
      const { rows: [r] } = await sql<{ n: number; age: number }>`
        select count(*)::int as n, coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as age from outbox where published_at is null`.execute(this.db);
      pending.set({ service }, r!.n);
      oldest.set({ service }, Math.max(0, r!.age));
    });
  }

  /** Counts what JetStream acknowledged, by message type. */
  private count(rows: { type: string }[], sent: PromiseSettledResult<unknown>[]): void {
    rows.forEach((row, i) => {
      if (sent[i]!.status === 'fulfilled') this.published.inc({ type: row.type });
    });
  }

  private drainSoon(): void {
    if (!this.running) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    // Not through a timer: the drain starts in this turn, so a hop of a saga waits for no clock.
    clearTimeout(this.timer);
    void this.tick();
  }

  /** Publishes a unit of work's rows after its commit (`UnitOfWork.committed`). */
  handOff(rows: OutboxRow[]): void {
    // A commit that ends after `stop` began: its rows are published by a drain once their lease passes.
    if (!this.running) return;
    const sending = this.publishHandedOff(rows).catch((err) => this.logger.warn({ err }, 'outbox hand-off failed; the relay publishes the rows after their lease'));
    this.handingOff.add(sending);
    void sending.finally(() => this.handingOff.delete(sending));
  }

  private async publishHandedOff(rows: OutboxRow[]): Promise<void> {
    // Sent in order, their acknowledgements awaited together.
    const sent = await Promise.allSettled(rows.map((row) => this.bus.publish(this.subjectOf(row), row.envelope, { msgId: row.id, headers: row.headers })));
    this.count(rows, sent);
    this.toRemove.push(...rows.filter((_, i) => sent[i]!.status === 'fulfilled').map((r) => r.id));
    void this.removePublished();
    const failed = rows.filter((_, i) => sent[i]!.status === 'rejected').map((r) => r.id);
    if (failed.length === 0) return;
    // Given back at once, for the next drain rather than after the lease.
    this.logger.warn({ err: (sent.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason, rows: failed.length }, 'outbox hand-off not acknowledged; left to the relay');
    await sql`update outbox set claimed_until = null where id = any(${failed}::uuid[])`.execute(this.db);
    this.drainSoon();
  }

  /** Removes handed-off rows once published, as many as have gathered in one statement, one statement at a time. */
  private removePublished(): Promise<void> {
    if (this.removing) return this.removing;
    this.removing = (async () => {
      // A moment for the hand-offs of other commits to join: one statement removes them all. `stop` cuts it short.
      await new Promise<void>((resolve) => {
        this.removeGathered = resolve;
        this.removeTimer = setTimeout(resolve, this.running ? REMOVE_GATHER_MS : 0);
      });
      while (this.toRemove.length > 0) {
        const ids = this.toRemove.splice(0, 1_000);
        // A failed removal only means the rows are published again after their lease (dropped as duplicates).
        await sql`delete from outbox where id = any(${ids}::uuid[])`.execute(this.db)
          .catch((err) => this.logger.warn({ err, rows: ids.length }, 'outbox rows published but not removed; they are sent again after their lease'));
      }
    })().finally(() => {
      this.removing = null;
      if (this.toRemove.length > 0) void this.removePublished();
    });
    return this.removing;
  }

  private subjectOf(row: { kind: 'event' | 'command'; type: string }): string {
    return row.kind === 'event' ? subjects.event(this.bus.namespace, row.type) : subjects.command(this.bus.namespace, row.type);
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = outsideTrace(() => setTimeout(() => void this.tick(), ms));
  }

  private async tick(): Promise<void> {
    if (!this.running || this.draining) return;
    this.draining = outsideTrace(() => this.drain())
      .then(() => undefined)
      .catch((err) => this.logger.warn({ err }, 'outbox relay failed; retrying'))
      .finally(() => {
        this.draining = null;
        if (this.running) this.schedule(this.again ? 0 : this.pollMs);
        this.again = false;
      });
    await this.draining;
  }

  /** Publishes everything pending; returns how many were published. */
  async drain(): Promise<number> {
    const db = this.db as Kysely<PlatformTables>;
    let total = 0;
    for (;;) {
      const claimed = await sql<{ id: string; kind: 'event' | 'command'; type: string; payload: unknown; headers: Record<string, string>; seq: string }>`
        update outbox set claimed_until = now() + make_interval(secs => ${this.leaseMs / 1000})
        where id in (
          select id from outbox
          where published_at is null and (claimed_until is null or claimed_until < now())
          order by seq limit 100
          for update skip locked)
        returning id, kind, type, payload, headers, seq`.execute(db);
      // In the order they were written (RETURNING keeps none).
      const rows = claimed.rows.sort((a, b) => Number(a.seq) - Number(b.seq));
      if (rows.length === 0) break;
      // Sent in order, their acknowledgements awaited together: one round trip to JetStream, not one per row.
      const sent = await Promise.allSettled(rows.map((row) => this.bus.publish(this.subjectOf(row), row.payload, { msgId: row.id, headers: row.headers })));
      this.count(rows, sent);
      const published = rows.filter((_, i) => sent[i]!.status === 'fulfilled').map((r) => r.id);
      const failed = rows.filter((_, i) => sent[i]!.status === 'rejected').map((r) => r.id);
      if (published.length > 0) await sql`delete from outbox where id = any(${published}::uuid[])`.execute(db);
      if (failed.length > 0) {
        // Given back at once, to be tried again by the next drain rather than after the lease.
        await sql`update outbox set claimed_until = null where id = any(${failed}::uuid[])`.execute(db);
        throw (sent.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason;
      }
      total += rows.length;
      if (rows.length < 100) break;
    }
    if (Date.now() - this.lastCleanup > 60_000) {
      // Rows an earlier version marked published instead of removing them (a rolling upgrade's old
      // replicas too). The table holds only what is on its way, so this reads little.
      this.lastCleanup = Date.now();
      await db.deleteFrom('outbox').where('publishedAt', 'is not', null).execute();
    }
    if (!this.pruning && Date.now() - this.lastPrune > PRUNE_EVERY_MS) {
      // The service's consumed-message ids too old to be needed (each service's relay, its own
      // schema), beside the drains rather than in their way: a backlog takes many statements.
      this.lastPrune = Date.now();
      this.pruning = pruneProcessedMessages(db, { going: () => this.running })
        .then(() => undefined, (err: unknown) => this.logger.warn({ err }, 'consumed-message ids not pruned; trying again later'))
        .finally(() => (this.pruning = null));
    }
    return total;
  }

  async stop(): Promise<void> {
    this.running = false;
    this.uncollect?.();
    clearTimeout(this.timer);
    await Promise.all(this.handingOff);
    clearTimeout(this.removeTimer);
    this.removeGathered?.();
    await this.removing;
    await this.pruning;
    await this.draining;
  }
}
