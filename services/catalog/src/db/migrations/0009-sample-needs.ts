import { sql, type Kysely } from 'kysely';

// Frozen: a contract's sample needs (D22.5), short phrases its provider says the service answers.
// They join the description in the search text (text_c), so the stemmed document needs no change;
// services stored before have none.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('services').addColumn('sample_needs', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`)).execute();
}
