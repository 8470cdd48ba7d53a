import { sql, type Kysely } from 'kysely';

// Frozen. D9.6: each party's transactions still in progress, indexed apart from its
// history, so that counting them at every creation reads the (at most a hundred) in progress rather
// than every transaction the agent ever took part in. The predicate is the one the count writes
// (`ACTIVE` in rules.ts, the terminal statuses of the spec); the planner uses these indexes only
// when the query's condition is this very text.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index transactions_active_consumer on transactions (consumer_agent_id) where status not in ('settled', 'cancelled', 'expired', 'failed')`.execute(db);
  await sql`create index transactions_active_provider on transactions (provider_agent_id) where status not in ('settled', 'cancelled', 'expired', 'failed')`.execute(db);
}
