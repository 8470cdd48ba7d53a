import type { Kysely } from 'kysely';
import { createPlatformTablesV4 } from '@aex/platform';

// Frozen: consumed-message ids indexed by age (BRIN), so those too old to be delivered
// again are deleted without reading the whole table (pruneProcessedMessages).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await createPlatformTablesV4(db);
}
