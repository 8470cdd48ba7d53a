import type { Kysely } from 'kysely';

// Frozen. D17.5–D17.7: a prepaid session's hold (`session`) is paid out call by call: each call's
// capture recorded once (`hold_captures`, by the call's transaction id), the hold keeping what its
// captures took in all, so that a return gives back only the rest.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('holds')
    .addColumn('session', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('captured_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('captured_fee_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createTable('hold_captures')
    .addColumn('transaction_id', 'uuid', (c) => c.primaryKey())
    .addColumn('hold_id', 'uuid', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint', (c) => c.notNull())
    .addColumn('fee_cents', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('hold_captures_hold').on('hold_captures').column('hold_id').execute();
}
