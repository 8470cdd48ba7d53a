import type { Kysely } from 'kysely';
import { createPlatformTablesV3 } from '@aex/platform';

// Frozen: outbox rows claimed for a lease while they are published, not locked.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await createPlatformTablesV3(db);
}
