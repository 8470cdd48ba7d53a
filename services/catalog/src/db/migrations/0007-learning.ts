import { sql, type Kysely } from 'kysely';

// Frozen. D22.2: what discovery learns from purchases. One row per purchase that came from a
// discover and ended (the latest outcome of it): the service bought, the buyer's account (buyers
// are counted by account, so one account's agents count once), the need it was found with and that
// need's sentence embedding with its model's name (embedded again when the model changes). A
// purchase judged worthless is kept inert, with why (`ignored_reason`), and never loaded for
// ranking. `written_xid` feeds each replica's in-memory copy, like the services' change feed.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('learning_evidence')
    .addColumn('transaction_id', 'uuid', (c) => c.primaryKey())
    .addColumn('service_id', 'uuid', (c) => c.notNull())
    .addColumn('consumer_agent_id', 'uuid', (c) => c.notNull())
    .addColumn('buyer_account_id', 'uuid', (c) => c.notNull())
    .addColumn('query_id', 'uuid', (c) => c.notNull())
    .addColumn('need', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('quality_score', 'integer')
    .addColumn('ended_at', 'timestamptz', (c) => c.notNull())
    .addColumn('ignored_reason', 'text')
    .addColumn('need_embedding', 'bytea')
    .addColumn('embedding_model', 'text')
    .addColumn('written_xid', sql`xid8`, (c) => c.notNull().defaultTo(sql`pg_current_xact_id()`))
    .execute();
  await sql`create index learning_evidence_service on learning_evidence (service_id, (ignored_reason is null), ended_at desc, transaction_id desc)`.execute(db);
  await sql`create index learning_evidence_written_xid on learning_evidence (written_xid)`.execute(db);
  await sql`create trigger learning_evidence_written_xid before update on learning_evidence for each row execute function stamp_written_xid()`.execute(db);
}
