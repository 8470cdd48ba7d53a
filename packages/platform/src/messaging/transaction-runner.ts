import type { Kysely, Transaction } from 'kysely';
import { GuardFoundNothing, UnitOfWork, type GuardedWrite, type HandOffTarget } from './unit-of-work.js';

/** Postgres's SQLSTATE for a deadlock victim. */
const DEADLOCK_DETECTED = '40P01';
/**
 * `require_written` (platform-tables.ts): a write at commit found part of what it must write left
 * out (a write of money whose update skipped a wallet it had locked), so the statement failed and
 * nothing of it committed.
 */
const WRITE_INCOMPLETE = 'AX001';
const MAX_DEADLOCK_RETRIES = 3;

/** A transaction's work with its unit of work (`UnitOfWork`). */
export type TransactionWork<DB, T> = (trx: Transaction<DB>, work: UnitOfWork) => Promise<T>;

/**
 * What a transaction's work gives the commit: its value, and the step's guarded write for the last
 * statement (null when it wrote what it had to as it went).
 */
export interface WorkWithWrite<T, R> {
  value: T;
  write: GuardedWrite<R> | null;
}

/** A transaction whose guarded write wrote: the work's value and the rows the write returned. */
export type Written<T, R> = { written: true; value: T; rows: R[] } | { written: false };

/**
 * A service's database transactions (docs/messaging.md): each runs its work with a unit of
 * work (`UnitOfWork`) whose messages, timers and consumed-message record are written by one statement
 * sent with the `COMMIT`, then handed to `relay` (the relay serving this database) and followed by
 * the work's after-commit callbacks. Every service transaction that publishes, sets timers or
 * consumes a message runs through here (or through a keyed request's `ctx.effect`).
 */
export class Transactor<DB> {
  constructor(readonly db: Kysely<DB>, readonly relay: HandOffTarget | null) {}

  /**
   * Runs `fn` in one transaction and commits it. When Postgres chose the transaction as a deadlock's
   * victim and rolled it back, nothing of it happened: `fn` runs again in a new one, deciding on what
   * the other left (D9.14: the loser of a race is answered as the state it finds, not with a 500).
   */
  async run<T>(fn: TransactionWork<DB, T>): Promise<T> {
    for (let deadlocks = 0; ; deadlocks++) {
      try {
        return await this.once(async (trx, work) => {
          const value = await fn(trx, work);
          await work.flush({ last: true });
          return value;
        });
      } catch (err) {
        if ((err as { code?: string }).code !== DEADLOCK_DETECTED || deadlocks >= MAX_DEADLOCK_RETRIES) throw err;
      }
    }
  }

  /**
   * Runs `fn` in one transaction whose last statement, sent with the `COMMIT`, carries the guarded
   * write `fn` gives: one round trip for a step whose other writes are messages and timers. When the
   * write's guard wrote nothing, so did that statement (`GuardedWrite`: `fn` writes nothing before
   * it), and the transaction kept nothing: the answer is `{ written: false }`, and the caller decides
   * again on what it reads now. A deadlock's victim, undone, is answered so too, and so is a write
   * that found part of itself left out (`WRITE_INCOMPLETE`), undone.
   */
  async runWriting<T, R>(fn: TransactionWork<DB, WorkWithWrite<T, R>>): Promise<Written<T, R>> {
    try {
      return await this.once(async (trx, work) => {
        const { value, write } = await fn(trx, work);
        const rows = await work.flush<R>({ last: true, ...(write && { write }) });
        return { written: true as const, value, rows };
      });
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (err instanceof GuardFoundNothing || code === DEADLOCK_DETECTED || code === WRITE_INCOMPLETE) return { written: false };
      throw err;
    }
  }

  private async once<T>(fn: TransactionWork<DB, T>): Promise<T> {
    let work: UnitOfWork | undefined;
    const result = await this.db.transaction().execute(async (trx) => {
      work = new UnitOfWork(trx, this.relay);
      return fn(trx, work);
    });
    work!.committed();
    return result;
  }
}
