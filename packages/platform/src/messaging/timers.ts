import { sql, type Kysely, type Transaction } from 'kysely';
import type { PlatformTables } from '../db/platform-tables.js';
import type { Logger } from '../logger.js';
import { outsideTrace } from '../bus/tracing.js';
import type { Transactor } from './transaction-runner.js';
import type { UnitOfWork } from './unit-of-work.js';
import { exchangeMetrics, metrics, serviceOf } from '../metrics.js';

/** A timer's handler: runs in the transaction that removes the timer, with its unit of work. */
export type TimerHandler<DB> = (trx: Transaction<DB>, timer: { kind: string; key: string; payload: unknown; fireAt: Date }, work: UnitOfWork) => Promise<void>;

/**
 * Fires due timers (docs/messaging.md "Durable timers"): each is claimed with FOR UPDATE SKIP LOCKED and fired in
 * the same transaction that removes it, so many replicas can run side by side and a crash mid-fire
 * leaves it due. A failing handler is retried with backoff.
 */
export class TimerRunner<DB> {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private busy: Promise<void> | null = null;
  /** Whether the timers an earlier version kept once fired (`fired_at`) were cleared. */
  private clearedFired = false;
  private uncollect: (() => void) | undefined;
  private readonly service: string;
  private readonly fired = exchangeMetrics.timersFired();

  private readonly db: Kysely<DB>;

  constructor(
    private readonly tx: Transactor<DB>,
    private readonly handlers: Record<string, TimerHandler<DB>>,
    private readonly logger: Logger,
    /** `now`: the service's clock, which the timers' `fireAt` came from (default: the database's). */
    private readonly opts: { pollMs?: number; afterFire?: () => void; now?: () => Date } = {},
  ) {
    this.service = serviceOf(logger);
    this.db = tx.db;
  }

  start(): void {
    this.running = true;
    this.loop(0);
    // Timers due and not fired, read when scraped: more than a poll's worth means the runner lags.
    const due = exchangeMetrics.timersDue();
    this.uncollect = metrics.collect(async () => {
      const at = this.opts.now?.() ?? new Date();
      const { rows: [r] } = await sql<{ n: number }>`select count(*)::int as n from timers where fired_at is null and fire_at <= ${at}`.execute(this.db);
      due.set({ service: this.service }, r!.n);
    });
  }

  private loop(ms: number): void {
    clearTimeout(this.timer);
    this.timer = outsideTrace(() => setTimeout(() => {
      this.busy = this.fireDue(this.opts.now?.())
        .then(() => undefined)
        .catch((err) => this.logger.warn({ err }, 'timer run failed'))
        .finally(() => {
          this.busy = null;
          if (this.running) this.loop(this.opts.pollMs ?? 500);
        });
    }, ms));
  }

  /** Fires every due timer; returns how many fired. */
  async fireDue(now?: Date): Promise<number> {
    if (!this.clearedFired) {
      await (this.db as unknown as Kysely<PlatformTables>).deleteFrom('timers').where('firedAt', 'is not', null).execute();
      this.clearedFired = true;
    }
    let fired = 0;
    for (;;) {
      const result = await this.fireOne(now);
      if (result === 'none') break;
      if (result === 'fired') fired++;
    }
    if (fired > 0) this.opts.afterFire?.();
    return fired;
  }

  private async fireOne(now?: Date): Promise<'fired' | 'failed' | 'none'> {
    const db = this.db as unknown as Kysely<PlatformTables>;
    let claimed: { id: string; kind: string } | undefined;
    try {
      const result = await (this.tx as unknown as Transactor<PlatformTables>).run(async (trx, work): Promise<'fired' | 'none'> => {
        const row = await trx
          .selectFrom('timers')
          .selectAll()
          .where('firedAt', 'is', null)
          .where('fireAt', '<=', now ?? sql<Date>`now()`)
          .orderBy('fireAt')
          .limit(1)
          .forUpdate()
          .skipLocked()
          .executeTakeFirst();
        if (!row) return 'none';
        claimed = row;
        const handler = this.handlers[row.kind];
        if (!handler) throw new Error(`no handler for timer kind ${row.kind}`);
        // Removed before its handler runs, in the handler's transaction (a failure puts it back): what
        // the handler does to timers (written before the commit with its messages) comes after, so it
        // may even schedule this kind and key again. A fired timer is deleted, not kept
        // (marked `fired_at`, they stayed for ever); `fired_at` is left to rows of earlier versions.
        await trx.deleteFrom('timers').where('id', '=', row.id).execute();
        await handler(trx as unknown as Transaction<DB>, { kind: row.kind, key: row.key, payload: row.payload, fireAt: row.fireAt }, work);
        return 'fired';
      });
      if (result === 'fired') this.fired.inc({ service: this.service, kind: claimed!.kind });
      return result;
    } catch (err) {
      if (!claimed) throw err;
      this.logger.warn({ err, timer: claimed }, 'timer handler failed; backing off');
      await db
        .updateTable('timers')
        .set({ attempts: sql<number>`attempts + 1`, lastError: String((err as Error).message).slice(0, 1000), fireAt: sql<Date>`now() + least(interval '1 second' * power(2, attempts), interval '5 minutes')` })
        .where('id', '=', claimed.id)
        .execute();
      return 'failed';
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    this.uncollect?.();
    clearTimeout(this.timer);
    await this.busy;
  }
}
