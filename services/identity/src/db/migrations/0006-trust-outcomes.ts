import { sql, type Kysely } from 'kysely';

// Frozen. D15.2: the inputs of every agent's trust score, one row per transaction it provided that
// ended with an outcome, so each score can be recomputed and explained.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('trust_outcomes')
    .addColumn('transaction_id', 'uuid', (c) => c.primaryKey())
    .addColumn('agent_id', 'uuid', (c) => c.notNull().references('agents.id'))
    .addColumn('outcome', 'text', (c) => c.notNull().check(sql`outcome in ('settled', 'failed', 'expired', 'dispute_lost')`))
    .addColumn('quality_score', 'integer')
    .addColumn('late', 'boolean', (c) => c.notNull())
    .addColumn('value', 'integer', (c) => c.notNull().check(sql`value between 0 and 100`))
    .addColumn('half_weights', 'integer', (c) => c.notNull().check(sql`half_weights in (1, 2)`))
    .addColumn('ended_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`create index trust_outcomes_agent on trust_outcomes (agent_id)`.execute(db);
}
