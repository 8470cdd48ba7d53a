import { sql, type Kysely } from 'kysely';

// Frozen. D6.8 child agents: the budget the spawn asked for (what the wallet saga moves), whether the
// child starts from its parent's rules, the index the expiry sweep reads, and the refusals of
// spawns whose children were deleted (what the waiting spawn request answers with).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('agents')
    .addColumn('spawn_budget_cents', 'bigint')
    .addColumn('inherit_delegation', 'boolean', (c) => c.notNull().defaultTo(true))
    .execute();
  await sql`create index agents_children_due on agents (expires_at) where parent_agent_id is not null and status <> 'expired'`.execute(db);
  await db.schema
    .createTable('spawn_refusals')
    .addColumn('child_agent_id', 'uuid', (c) => c.primaryKey())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('available_cents', 'bigint', (c) => c.notNull())
    .addColumn('required_cents', 'bigint', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`create index agents_parent on agents (parent_agent_id) where parent_agent_id is not null`.execute(db);
}
