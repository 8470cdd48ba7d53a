import type { Kysely } from 'kysely';
import { createPlatformTablesV2 } from '@aex/platform';

// Frozen: D5.5 Idempotency-Key records, written with the effects they guard.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await createPlatformTablesV2(db);
}
