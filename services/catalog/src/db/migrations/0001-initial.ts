import { sql, type Kysely } from 'kysely';
import { createPlatformTablesV1 } from '@aex/platform';

// Frozen: never edit a migration that has shipped; add the next one.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await createPlatformTablesV1(db);
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_extension where extname = 'pg_trgm'`.execute(db);
  if (!rows[0]?.n) throw new Error('The catalog needs the Postgres extension pg_trgm: CREATE EXTENSION pg_trgm;');

  // Replica of identity's agents as providers (D6.5, D15.2), kept by events. `written_xid` feeds the
  // discovery index's change feed; `source_at` orders events that arrive out of order.
  await db.schema
    .createTable('providers')
    .addColumn('agent_id', 'uuid', (c) => c.primaryKey())
    .addColumn('account_id', 'uuid', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('trust_score', 'integer', (c) => c.notNull().check(sql`trust_score between 0 and 100`))
    .addColumn('source_at', 'timestamptz', (c) => c.notNull())
    .addColumn('trust_at', 'timestamptz', (c) => c.notNull())
    .addColumn('written_xid', sql`xid8`, (c) => c.notNull().defaultTo(sql`pg_current_xact_id()`))
    .execute();
  await sql`create index providers_written_xid on providers (written_xid)`.execute(db);

  await db.schema
    .createTable('services')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('agent_id', 'uuid', (c) => c.notNull().references('providers.agent_id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('subcategory', 'text')
    .addColumn('tags', sql`text[]`, (c) => c.notNull())
    .addColumn('input_schema', 'jsonb', (c) => c.notNull())
    .addColumn('output_schema', 'jsonb', (c) => c.notNull())
    .addColumn('pricing', 'jsonb', (c) => c.notNull())
    .addColumn('sla', 'jsonb', (c) => c.notNull())
    .addColumn('capabilities', 'jsonb', (c) => c.notNull())
    .addColumn('examples', 'jsonb', (c) => c.notNull())
    .addColumn('metadata', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('active', 'paused', 'inactive')`))
    .addColumn('revision', 'integer', (c) => c.notNull())
    // Denormalised for filters and sorts (D7.5, D8.4).
    .addColumn('price_cents', 'integer', (c) => c.notNull())
    .addColumn('budget_floor_cents', 'integer', (c) => c.notNull())
    .addColumn('max_latency_ms', 'integer', (c) => c.notNull())
    // Search text by weight class (see domain/search-text.ts), and the stemmed document made from it.
    .addColumn('text_a', 'text', (c) => c.notNull())
    .addColumn('text_b', 'text', (c) => c.notNull())
    .addColumn('text_c', 'text', (c) => c.notNull())
    .addColumn('text_d', 'text', (c) => c.notNull())
    .addColumn('search_doc', sql`tsvector`, (c) =>
      c.generatedAlwaysAs(sql`setweight(to_tsvector('english'::regconfig, text_a), 'A') || setweight(to_tsvector('english'::regconfig, text_b), 'B') || setweight(to_tsvector('english'::regconfig, text_c), 'C') || setweight(to_tsvector('english'::regconfig, text_d), 'D')`).stored())
    // Related words of the name, tags and category (WordNet), matched at a low weight (D8.2).
    .addColumn('text_e', 'text', (c) => c.notNull())
    .addColumn('expansion_doc', sql`tsvector`, (c) => c.generatedAlwaysAs(sql`to_tsvector('english'::regconfig, text_e)`).stored())
    // Sentence embedding of name, category, tags and description (float32 bytes) and its model (D8.2).
    .addColumn('embedding', 'bytea')
    .addColumn('embedding_model', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('written_xid', sql`xid8`, (c) => c.notNull().defaultTo(sql`pg_current_xact_id()`))
    .execute();
  await sql`create index services_by_agent on services (agent_id, status)`.execute(db);
  await sql`create index services_active_category on services (category) where status = 'active'`.execute(db);
  await sql`create index services_active_created on services (created_at desc, id) where status = 'active'`.execute(db);
  await sql`create index services_tags on services using gin (tags)`.execute(db);
  await sql`create index services_search on services using gin (search_doc)`.execute(db);
  await sql`create index services_written_xid on services (written_xid)`.execute(db);

  // Every write stamps its transaction id: the discovery index re-reads rows written since the oldest
  // transaction that was still open at its previous read, so no commit is ever skipped.
  await sql`create function stamp_written_xid() returns trigger language plpgsql as $$ begin new.written_xid := pg_current_xact_id(); return new; end $$`.execute(db);
  await sql`create trigger services_written_xid before update on services for each row execute function stamp_written_xid()`.execute(db);
  await sql`create trigger providers_written_xid before update on providers for each row execute function stamp_written_xid()`.execute(db);

  // Every revision of a contract, immutable: a transaction keeps the one it was created with (D7.6).
  await db.schema
    .createTable('contract_revisions')
    .addColumn('service_id', 'uuid', (c) => c.notNull().references('services.id'))
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('input_schema', 'jsonb', (c) => c.notNull())
    .addColumn('output_schema', 'jsonb', (c) => c.notNull())
    .addColumn('pricing', 'jsonb', (c) => c.notNull())
    .addColumn('sla', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('contract_revisions_pk', ['service_id', 'revision'])
    .execute();

  // Words seen in service texts, for typo correction (D8.2): the GiST trigram index answers
  // "nearest words first" (`order by word <-> $1`) without a similarity threshold.
  await db.schema.createTable('vocabulary').addColumn('word', 'text', (c) => c.primaryKey()).execute();
  await sql`create index vocabulary_trgm on vocabulary using gist (word gist_trgm_ops)`.execute(db);

  // D8.5 (EXT): every discovery query with its id and what it returned.
  await db.schema
    .createTable('discovery_queries')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('agent_id', 'uuid', (c) => c.notNull())
    .addColumn('request', 'jsonb', (c) => c.notNull())
    .addColumn('total_matches', 'integer', (c) => c.notNull())
    .addColumn('results', 'jsonb', (c) => c.notNull())
    .addColumn('scorer', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`create index discovery_queries_created on discovery_queries (created_at)`.execute(db);
}
