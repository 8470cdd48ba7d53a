import type { Kysely } from 'kysely';
import { outsideTrace, type Logger, type Stoppable } from '@aex/platform';
import type { Database } from '../db/schema.js';

/** How long stored discovery queries (D8.5) are kept. */
export const QUERY_RETENTION_MS = 30 * 86_400_000;

/** Deletes stored discovery queries older than `before`; returns how many. */
export async function pruneDiscoveryQueries(db: Kysely<Database>, before: Date): Promise<number> {
  const r = await db.deleteFrom('discoveryQueries').where('createdAt', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Prunes stored queries past the retention every `everyMs` (every replica may; the delete is idempotent). */
export function startQueryRetention(db: Kysely<Database>, logger: Logger, now: () => Date, everyMs = 3_600_000): Stoppable {
  let running: Promise<unknown> = Promise.resolve();
  const timer = outsideTrace(() => setInterval(() => {
    running = pruneDiscoveryQueries(db, new Date(now().getTime() - QUERY_RETENTION_MS))
      .then((n) => n > 0 && logger.info({ deleted: n }, 'old discovery queries pruned'))
      .catch((err: unknown) => logger.warn({ err }, 'pruning discovery queries failed'));
  }, everyMs));
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
