import { sql, type Kysely } from 'kysely';

// Frozen. The owner agent's views of its account (docs/console.md): the purchases of the account's
// agents, and their sales — for which a transaction now keeps its provider's account (null on
// transactions made before). Both listed newest first; the columns never change, so a status change
// stays heap-only.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('provider_account_id', 'uuid').execute();
  await sql`create index transactions_consumer_account on transactions (consumer_account_id, created_at desc, id desc)`.execute(db);
  await sql`create index transactions_provider_account on transactions (provider_account_id, created_at desc, id desc) where provider_account_id is not null`.execute(db);
}
