import { sql, type Kysely } from 'kysely';
import { createPlatformTablesV1, createPlatformTablesV2 } from '@aex/platform';

// Frozen: never edit a migration that has shipped; add the next one.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await createPlatformTablesV1(db);
  await createPlatformTablesV2(db);

  await db.schema
    .createTable('transactions')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('consumer_agent_id', 'uuid', (c) => c.notNull())
    .addColumn('provider_agent_id', 'uuid', (c) => c.notNull())
    .addColumn('consumer_account_id', 'uuid', (c) => c.notNull())
    .addColumn('service_id', 'uuid', (c) => c.notNull())
    .addColumn('service_revision', 'integer', (c) => c.notNull())
    .addColumn('service_version', 'text', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('pricing', 'jsonb', (c) => c.notNull())
    .addColumn('sla', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_reason', 'text')
    .addColumn('input', 'jsonb', (c) => c.notNull())
    .addColumn('output', 'jsonb')
    .addColumn('units', 'integer', (c) => c.notNull())
    .addColumn('list_price_cents', 'bigint', (c) => c.notNull())
    .addColumn('max_price_cents', 'bigint')
    .addColumn('agreed_price_cents', 'bigint')
    .addColumn('platform_fee_cents', 'bigint')
    .addColumn('hold', 'text', (c) => c.notNull())
    .addColumn('hold_attempt', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('pending_accept_by', 'uuid')
    .addColumn('pending_accept_price_cents', 'bigint')
    .addColumn('pending_accept_message', 'text')
    .addColumn('initiated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('funds_held_at', 'timestamptz')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('settled_at', 'timestamptz')
    .addColumn('quality_score', 'integer')
    .addColumn('notes', 'text')
    .addColumn('delivery_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_delivery_attempts', 'integer', (c) => c.notNull())
    .addColumn('metadata', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
  // Lists newest first per party (D9.13), and the active/daily-spend counts (D9.6, D10.2).
  await sql`create index transactions_consumer on transactions (consumer_agent_id, created_at desc, id desc)`.execute(db);
  await sql`create index transactions_provider on transactions (provider_agent_id, created_at desc, id desc)`.execute(db);
  await sql`create index transactions_spend on transactions (consumer_agent_id, funds_held_at) where funds_held_at is not null`.execute(db);

  await db.schema
    .createTable('negotiation_messages')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('transaction_id', 'uuid', (c) => c.notNull().references('transactions.id'))
    .addColumn('from_agent_id', 'uuid', (c) => c.notNull())
    .addColumn('message_type', 'text', (c) => c.notNull())
    .addColumn('round', 'integer', (c) => c.notNull())
    .addColumn('terms', 'jsonb', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addUniqueConstraint('negotiation_messages_round', ['transaction_id', 'round'])
    .execute();
}
