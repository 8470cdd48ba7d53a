import { sql, type Kysely } from 'kysely';

// Frozen: the holds of transactions (D9, D13). One row per transaction, the single place where the
// wallet decides what happens to its money: placed or refused once, then returned or settled once.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('holds')
    .addColumn('transaction_id', 'uuid', (c) => c.primaryKey())
    .addColumn('wallet_id', 'uuid', (c) => c.references('wallets.id'))
    .addColumn('amount_cents', 'bigint', (c) => c.notNull().check(sql`amount_cents >= 0`))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('held', 'refused', 'returned', 'settled')`))
    .addColumn('refusal', 'text')
    .addColumn('provider_wallet_id', 'uuid', (c) => c.references('wallets.id'))
    .addColumn('fee_cents', 'bigint')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('closed_at', 'timestamptz')
    .execute();
  await sql`create index holds_open on holds (wallet_id) where status = 'held'`.execute(db);
}
