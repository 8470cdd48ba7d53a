import { sql, type Kysely } from 'kysely';
// Frozen: never edit a migration that has shipped; add the next one.
// A stuck endpoint's next deliveries are claimed by agent, oldest (original) due time first: the
// dispatcher's refill reads only that agent's pending rows, in order, through this index.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index deliveries_pending_agent on deliveries (agent_id, (coalesce(deferred_from, next_attempt_at))) where status = 'pending'`.execute(db);
}
