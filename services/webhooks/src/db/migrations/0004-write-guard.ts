import type { Kysely } from 'kysely';
import { createPlatformTablesV5 } from '@aex/platform';

// Frozen: require_written(n, what), which a unit of work's statement calls on the rows its write at
// commit wrote: none raises, so the statement fails and its transaction is undone.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await createPlatformTablesV5(db);
}
