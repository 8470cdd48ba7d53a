import { sql, type Kysely } from 'kysely';

// Frozen. D23.1: the names of what was bought and from whom, kept on each purchase and prepaid
// session as they were when it was made (a person reads names, not ids). Those made before are
// filled in by the backfill (purchases/names.ts); an index finds those still without.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('service_name', 'text').addColumn('provider_name', 'text').execute();
  await sql`create index transactions_unnamed on transactions (service_id) where service_name is null`.execute(db);
  await db.schema.alterTable('sessions').addColumn('service_name', 'text').addColumn('provider_name', 'text').execute();
  await sql`create index sessions_unnamed on sessions (service_id) where service_name is null`.execute(db);
}
