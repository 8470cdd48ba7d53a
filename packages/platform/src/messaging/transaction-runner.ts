import type { Kysely, Transaction } from 'kysely';
import { relayServing } from './relay.js';
import { NothingWrittenAtCommit, UnitOfWork } from './unit-of-work.js';

/** Postgres's SQLSTATE for a deadlock victim. */
const DEADLOCK_DETECTED = '40P01';
const MAX_DEADLOCK_RETRIES = 3;

/**
 * Runs `fn` in a database transaction with its unit of work (`UnitOfWork`): what `fn` keeps there is
 * written by one statement with the commit, and its messages are handed to the relay serving `db`
 * right after. Every service transaction that publishes, sets timers or consumes a message runs
 * through here (or through `ctx.effect`). `fn` may run again, in a new transaction:
 * - when its write at commit (`writeAtCommit`) found its row moved on — then with writes made at once,
 *   deciding on what it finds now;
 * - when Postgres chose the transaction as a deadlock's victim and rolled it back: nothing of it
 *   happened, so it decides again on what the other one left (D9.14: the loser of a race is answered
 *   as the state it finds, not with a 500).
 */
export async function inTransaction<DB, T>(db: Kysely<DB>, fn: (trx: Transaction<DB>, work: UnitOfWork) => Promise<T>): Promise<T> {
  for (let deadlocks = 0; ; deadlocks++) {
    try {
      try {
        return await attempt(db, fn, true);
      } catch (err) {
        if (!(err instanceof NothingWrittenAtCommit)) throw err;
        return await attempt(db, fn, false);
      }
    } catch (err) {
      if ((err as { code?: string }).code !== DEADLOCK_DETECTED || deadlocks >= MAX_DEADLOCK_RETRIES) throw err;
    }
  }
}

async function attempt<DB, T>(db: Kysely<DB>, fn: (trx: Transaction<DB>, work: UnitOfWork) => Promise<T>, atCommit: boolean): Promise<T> {
  let work: UnitOfWork | undefined;
  const result = await db.transaction().execute(async (trx) => {
    work = new UnitOfWork(trx, relayServing(db), atCommit);
    const value = await fn(trx, work);
    await work.flush({ last: true });
    return value;
  });
  work!.committed();
  return result;
}
