import { sql, type Kysely } from 'kysely';

// Frozen: D22.3, whether a provider delivers. The purchases it was paid to deliver, as the
// transactions service's events tell them (each event sets its own columns, so events arriving out
// of order still make one row), and the liveness computed from them, kept on the provider's row so
// that the discovery index (through `written_xid`) and the listing's SQL both rank with it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('provider_purchases')
    .addColumn('transaction_id', 'uuid', (c) => c.primaryKey())
    .addColumn('provider_agent_id', 'uuid', (c) => c.notNull())
    .addColumn('service_id', 'uuid', (c) => c.notNull())
    .addColumn('held_at', 'timestamptz')
    // When the price was held plus the SLA's maxLatencyMs: past it, a purchase not delivered counts against.
    .addColumn('due_at', 'timestamptz')
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('ended_at', 'timestamptz')
    .addColumn('ended_as', 'text', (c) => c.check(sql`ended_as in ('failed', 'expired', 'cancelled')`))
    // The moment the purchase counts from (or would, once overdue): what the window and the sweep read.
    .addColumn('counted_at', 'timestamptz', (c) => c.generatedAlwaysAs(sql`coalesce(delivered_at, ended_at, due_at)`).stored())
    // The transaction that last wrote the row: a sweep also looks at rows committed after its previous one read.
    .addColumn('written_xid', sql`xid8`, (c) => c.notNull().defaultTo(sql`pg_current_xact_id()`))
    .execute();
  await sql`create trigger provider_purchases_written_xid before update on provider_purchases for each row execute function stamp_written_xid()`.execute(db);
  await sql`create index provider_purchases_written_xid on provider_purchases (written_xid)`.execute(db);
  await sql`create index provider_purchases_recent on provider_purchases (provider_agent_id, counted_at desc)`.execute(db);
  await sql`create index provider_purchases_counted on provider_purchases (counted_at)`.execute(db);
  await sql`create index provider_purchases_open_due on provider_purchases (due_at) where delivered_at is null and ended_at is null`.execute(db);

  await db.schema.alterTable('providers')
    .addColumn('liveness', 'double precision', (c) => c.notNull().defaultTo(1).check(sql`liveness between 0 and 1`))
    .addColumn('liveness_state', 'text', (c) => c.notNull().defaultTo('unproven').check(sql`liveness_state in ('delivering', 'unproven', 'stalled')`))
    .addColumn('recent_delivered', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('recent_undelivered', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
