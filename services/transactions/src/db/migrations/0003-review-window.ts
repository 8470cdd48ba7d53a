import type { Kysely } from 'kysely';

// Frozen: D9.7 — when a delivered transaction settles by itself (the review window's end).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('review_ends_at', 'timestamptz').execute();
}
