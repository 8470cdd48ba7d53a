import type { Kysely } from 'kysely';

// Frozen. D22.2: the queryId of the discover a purchase (or a prepaid session, whose calls carry it)
// came from, told to the catalog when the purchase ends so that discovery learns from it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('query_id', 'uuid').execute();
  await db.schema.alterTable('sessions').addColumn('query_id', 'uuid').execute();
}
