import { sql, type Kysely } from 'kysely';

// Frozen. D6.8 / D13.2 child agents: a child's wallet knows its parent's and when it was closed (its
// agent expired); `child_allocations` keeps the one decision on each spawn's budget.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('wallets')
    .addColumn('parent_wallet_id', 'uuid', (c) => c.references('wallets.id'))
    .addColumn('closed_at', 'timestamptz')
    .execute();
  await db.schema
    .createTable('child_allocations')
    .addColumn('child_agent_id', 'uuid', (c) => c.primaryKey())
    .addColumn('parent_wallet_id', 'uuid', (c) => c.references('wallets.id'))
    .addColumn('budget_cents', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('funded', 'refused')`))
    .addColumn('refusal', 'text')
    .addColumn('available_cents', 'bigint', (c) => c.notNull())
    .addColumn('decided_at', 'timestamptz', (c) => c.notNull())
    .execute();
}
