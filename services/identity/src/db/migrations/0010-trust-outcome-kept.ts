import { sql, type Kysely } from 'kysely';

// Frozen. D15.2, An outcome kept and its agent's sums read back in one statement. A
// statement cannot read what its own insert's trigger (migration 0009) wrote, nor what another
// transaction committed while that trigger waited for the score row's lock: its snapshot is older.
// A volatile function's statements each take a snapshot of their own, so the read made after the
// insert sees the sums with this outcome and every outcome committed before the lock was granted;
// the row stays locked until the commit. No row when the agent has no score row.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function trust_outcome_kept(
      p_transaction_id uuid, p_agent_id uuid, p_outcome text, p_quality_score integer, p_late boolean,
      p_value integer, p_half_weights integer, p_ended_at timestamptz
    ) returns table (kept boolean, score integer, weighted_value bigint, half_weights bigint)
    language plpgsql volatile set search_path from current as $$
    begin
      insert into trust_outcomes (transaction_id, agent_id, outcome, quality_score, late, value, half_weights, ended_at)
      values (p_transaction_id, p_agent_id, p_outcome, p_quality_score, p_late, p_value, p_half_weights, p_ended_at)
      on conflict (transaction_id) do nothing;
      kept := found;
      return query select kept, s.score, s.weighted_value, s.half_weights from trust_scores s where s.agent_id = p_agent_id;
    end $$`.execute(db);
}
