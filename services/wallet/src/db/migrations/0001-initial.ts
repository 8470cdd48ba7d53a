import { sql, type Kysely } from 'kysely';
import { createPlatformTablesV1 } from '@aex/platform';

// Frozen: never edit a migration that has shipped; add the next one.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await createPlatformTablesV1(db);

  await db.schema
    .createTable('wallets')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('agent', 'platform')`))
    .addColumn('agent_id', 'uuid', (c) => c.unique())
    .addColumn('account_id', 'uuid')
    .addColumn('balance_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('held_cents', 'bigint', (c) => c.notNull().defaultTo(0).check(sql`held_cents >= 0`))
    .addColumn('lifetime_earned_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('lifetime_spent_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addCheckConstraint('wallets_available_not_negative', sql`balance_cents - held_cents >= 0`)
    .addCheckConstraint('wallets_agent_has_owner', sql`(kind = 'platform') = (agent_id is null)`)
    .execute();
  await sql`create unique index wallets_one_platform on wallets (kind) where kind = 'platform'`.execute(db);

  await db.schema
    .createTable('ledger_entries')
    .addColumn('seq', 'bigserial', (c) => c.primaryKey())
    .addColumn('id', 'uuid', (c) => c.notNull().unique())
    .addColumn('wallet_id', 'uuid', (c) => c.notNull().references('wallets.id'))
    .addColumn('operation_id', 'text', (c) => c.notNull())
    .addColumn('transaction_id', 'uuid')
    .addColumn('tx_type', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint', (c) => c.notNull().check(sql`amount_cents <> 0`))
    .addColumn('balance_after_cents', 'bigint', (c) => c.notNull())
    .addColumn('available_after_cents', 'bigint', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  // Every movement carries an operation id; repeating an operation is a no-op (docs/payments.md "How money moves").
  await sql`create unique index ledger_entries_operation on ledger_entries (operation_id, wallet_id, tx_type)`.execute(db);
  await sql`create index ledger_entries_wallet on ledger_entries (wallet_id, seq)`.execute(db);
  // Append-only: entries are never changed or removed.
  await sql`create function ledger_entries_append_only() returns trigger language plpgsql as $$
    begin raise exception 'ledger entries are append-only'; end $$`.execute(db);
  await sql`create trigger ledger_entries_no_change before update or delete on ledger_entries
    for each row execute function ledger_entries_append_only()`.execute(db);

  await db.schema
    .createTable('funding_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('wallet_id', 'uuid', (c) => c.notNull().references('wallets.id'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint', (c) => c.notNull().check(sql`amount_cents > 0`))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'paid', 'expired')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('paid_at', 'timestamptz')
    .execute();

  await db.schema
    .createTable('payouts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('wallet_id', 'uuid', (c) => c.notNull().references('wallets.id'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint', (c) => c.notNull().check(sql`amount_cents > 0`))
    .addColumn('estimated_arrival', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();

  // D13.3: the platform revenue wallet that receives fees.
  await sql`insert into wallets (id, kind, created_at, updated_at) values (gen_random_uuid(), 'platform', now(), now())`.execute(db);
}
