import type { Kysely } from 'kysely';

// Frozen. D12.8: a hold settled with a partial refund keeps the part returned to the consumer.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('holds').addColumn('refund_cents', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
}
