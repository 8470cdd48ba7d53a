import { sql, type Kysely } from 'kysely';
import { STREAM_MAX_AGE_MS } from '../bus/types.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** The message a unit of work consumes was applied before (its processed id exists). */
export class AlreadyApplied extends Error {
  constructor(readonly consumer: string, readonly messageId: string) {
    super(`message ${messageId} already applied by ${consumer}`);
  }
}

/**
 * How long a consumed message's id is kept: a message is delivered again only while its
 * stream still holds it (`STREAM_MAX_AGE_MS`), and it was published before its id was recorded, so an
 * id recorded longer ago than that cannot be needed; a day more for clocks. Kept forever, the ids grew
 * by about ten rows per purchase.
 */
export const PROCESSED_RETENTION_MS = STREAM_MAX_AGE_MS + 86_400_000;
/** How often each relay prunes them: ten minutes of ids at 100 purchases a second is some 60 statements. */
export const PRUNE_EVERY_MS = 600_000;

/**
 * Deletes the consumed-message ids older than `PROCESSED_RETENTION_MS`, a batch per statement (a long
 * backlog after an upgrade is not one huge transaction), at most `maxBatches` of them and while
 * `going()` says so; how many. Every replica's relay prunes: each batch skips the rows another is
 * deleting, so they share the work instead of waiting for each other's locks.
 */
export async function pruneProcessedMessages(db: AnyDb, opts: { batch?: number; maxBatches?: number; going?: () => boolean } = {}): Promise<number> {
  const batch = opts.batch ?? 10_000;
  let total = 0;
  for (let i = 0; i < (opts.maxBatches ?? 1_000) && (opts.going?.() ?? true); i++) {
    const r = await sql`delete from processed_messages where ctid in (
      select ctid from processed_messages where processed_at < now() - make_interval(secs => ${PROCESSED_RETENTION_MS / 1000}) limit ${batch} for update skip locked)`.execute(db);
    const n = Number(r.numAffectedRows ?? 0);
    total += n;
    if (n < batch) break;
  }
  return total;
}

