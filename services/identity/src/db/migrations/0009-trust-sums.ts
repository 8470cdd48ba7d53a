import { sql, type Kysely } from 'kysely';

// Frozen. D15.2, Each agent's sums over its trust outcomes (Σ value × halfWeights and
// Σ halfWeights) kept on its score row, so an outcome costs one row's update instead of a scan of
// every outcome the agent ever had. The sums are kept by the database for every insert of an
// outcome (outcomes are never changed or deleted), whoever writes it — also a replica of an older
// version during a rolling upgrade — with the score row locked, as the outcome's consumer locks it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  // No outcome is recorded between the sums' backfill and the trigger that keeps them.
  await sql`lock table trust_outcomes in share row exclusive mode`.execute(db);
  await db.schema
    .alterTable('trust_scores')
    .addColumn('weighted_value', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('half_weights', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`
    update trust_scores s set weighted_value = o.weighted_value, half_weights = o.half_weights
    from (select agent_id, sum(value * half_weights) as weighted_value, sum(half_weights) as half_weights from trust_outcomes group by agent_id) o
    where s.agent_id = o.agent_id`.execute(db);
  await sql`
    create function trust_outcome_counted() returns trigger language plpgsql set search_path from current as $$
    begin
      update trust_scores set weighted_value = weighted_value + new.value * new.half_weights, half_weights = half_weights + new.half_weights
      where agent_id = new.agent_id;
      return null;
    end $$`.execute(db);
  await sql`create trigger trust_outcomes_counted after insert on trust_outcomes for each row execute function trust_outcome_counted()`.execute(db);
}
