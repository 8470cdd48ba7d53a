import type { Kysely } from 'kysely';

// Frozen. D17.1–D17.3: a metered purchase holds the price of `max_units` and pays for the units its
// delivery reports; `units` stays null until then. Null `max_units`: a purchase of a known size.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('max_units', 'integer').alterColumn('units', (c) => c.dropNotNull()).execute();
}
