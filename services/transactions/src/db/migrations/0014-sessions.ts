import { sql, type Kysely } from 'kysely';

// Frozen. D17.4–D17.7: prepaid sessions. A session holds one budget (its `hold`, the wallet's keyed
// by the session id) and its calls — transactions with `session_id` — reserve their prices from it
// with no hold of their own. budget = spent + reserved + what remains; returned once it closes. A
// call of a session with `auto_verify` settles on a valid delivery.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('sessions')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('consumer_agent_id', 'uuid', (c) => c.notNull())
    .addColumn('provider_agent_id', 'uuid', (c) => c.notNull())
    .addColumn('consumer_account_id', 'uuid', (c) => c.notNull())
    .addColumn('provider_account_id', 'uuid')
    .addColumn('service_id', 'uuid', (c) => c.notNull())
    .addColumn('service_revision', 'integer', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_reason', 'text')
    .addColumn('budget_cents', 'integer', (c) => c.notNull())
    .addColumn('spent_cents', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('reserved_cents', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('returned_cents', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('calls', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('auto_verify', 'boolean', (c) => c.notNull())
    .addColumn('hold', 'text', (c) => c.notNull())
    .addColumn('approval', 'jsonb')
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('closed_at', 'timestamptz')
    .addCheckConstraint('sessions_money', sql`spent_cents >= 0 and reserved_cents >= 0 and returned_cents >= 0 and spent_cents + reserved_cents + returned_cents <= budget_cents`)
    .execute();
  await sql`create index sessions_consumer on sessions (consumer_agent_id, created_at desc, id desc)`.execute(db);
  await sql`create index sessions_provider on sessions (provider_agent_id, created_at desc, id desc)`.execute(db);
  await db.schema.alterTable('transactions').addColumn('session_id', 'uuid').addColumn('auto_verify', 'boolean', (c) => c.notNull().defaultTo(false)).execute();
  await sql`create index transactions_session on transactions (session_id) where session_id is not null`.execute(db);
}
