import { sql, type Kysely } from 'kysely';

// Frozen. D12: disputes — one per transaction at most, with the provider's proposal, the outcome and
// every message of both parties and the operator.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('disputes')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('transaction_id', 'uuid', (c) => c.notNull().unique().references('transactions.id'))
    .addColumn('consumer_agent_id', 'uuid', (c) => c.notNull())
    .addColumn('provider_agent_id', 'uuid', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('evidence', 'jsonb')
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('open', 'proposed', 'escalated', 'resolved')`))
    .addColumn('proposal', 'jsonb')
    .addColumn('outcome', 'text', (c) => c.check(sql`outcome in ('consumer_wins', 'provider_wins', 'partial_refund', 'provider_redo')`))
    .addColumn('refund_cents', 'bigint')
    .addColumn('messages', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('opened_at', 'timestamptz', (c) => c.notNull())
    .addColumn('deadline_at', 'timestamptz', (c) => c.notNull())
    .addColumn('resolved_at', 'timestamptz')
    .addColumn('resolved_by', 'text')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('transactions').addColumn('dispute_id', 'uuid').execute();
}
