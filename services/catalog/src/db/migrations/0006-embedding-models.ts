import { sql, type Kysely } from 'kysely';

// Frozen: never edit a migration that has shipped; add the next one.
// D22.1: sentence embeddings are kept per service *and model*, so that the vectors of two models
// coexist while the catalog re-embeds itself for a new one; `embedding_models` (one row) says which
// model's vectors discovery compares (`serving`) and which one is being prepared (`next`).
// services.embedding and services.embedding_model are copied here and no longer read; they stay so
// that catalogs of the previous version, still running while an upgrade rolls out, keep working.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('service_embeddings')
    .addColumn('service_id', 'uuid', (c) => c.notNull().references('services.id'))
    .addColumn('model', 'text', (c) => c.notNull())
    // Float32 values, little-endian, of a unit vector.
    .addColumn('embedding', 'bytea', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('service_embeddings_pk', ['service_id', 'model'])
    .execute();
  await sql`create index service_embeddings_by_model on service_embeddings (model, service_id)`.execute(db);

  await db.schema
    .createTable('embedding_models')
    .addColumn('id', 'boolean', (c) => c.primaryKey().defaultTo(true).check(sql`id`))
    .addColumn('serving', 'text')
    // The embeddings endpoint (base URL, without credentials) of an openai model; null for builtin.
    .addColumn('serving_endpoint', 'text')
    .addColumn('next', 'text')
    .addColumn('next_endpoint', 'text')
    // The replica re-embedding the catalog for `next`, and until when its claim holds.
    .addColumn('lease_owner', 'uuid')
    .addColumn('lease_until', 'timestamptz')
    .addColumn('changed_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('embedding_models_next_differs', sql`next is null or next <> serving`)
    .execute();
  await sql`insert into service_embeddings (service_id, model, embedding)
    select id, embedding_model, embedding from services where embedding is not null and embedding_model is not null`.execute(db);
  await sql`insert into embedding_models (serving)
    select (select embedding_model from services where embedding_model is not null group by embedding_model order by count(*) desc, embedding_model limit 1)`.execute(db);
}
