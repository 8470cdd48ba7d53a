import { sql, type Kysely } from 'kysely';

// Frozen. A signing key belongs to one agent for good: the first agent that registered it (D3.2), so
// no agent can claim another's public key and be credited with its signatures. Existing keys go to
// the agent that registered them first.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('signing_key_owners')
    .addColumn('public_key', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'uuid', (c) => c.notNull().references('agents.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`insert into signing_key_owners (public_key, agent_id, created_at)
    select distinct on (public_key) public_key, agent_id, created_at from signing_keys order by public_key, created_at, id`.execute(db);
}
