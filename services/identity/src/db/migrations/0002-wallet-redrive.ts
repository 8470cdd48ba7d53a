import { sql, type Kysely } from 'kysely';

// When the openWallet command of an unconfirmed agent was last (re)sent; see wallet-saga.ts.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('agents').addColumn('wallet_requested_at', 'timestamptz').execute();
  await sql`create index agents_wallet_pending on agents (created_at) where wallet_opened_at is null`.execute(db);
}
