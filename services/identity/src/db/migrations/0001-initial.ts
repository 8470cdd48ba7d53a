import { sql, type Kysely } from 'kysely';
import { createPlatformTablesV1 } from '@aex/platform';

// Frozen: never edit a migration that has shipped; add the next one.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await createPlatformTablesV1(db);

  await db.schema
    .createTable('accounts')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('account_type', 'text', (c) => c.notNull().check(sql`account_type in ('individual', 'organization')`))
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_normalized', 'text', (c) => c.notNull().unique())
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('verification_status', 'text', (c) => c.notNull().defaultTo('unverified'))
    .addColumn('default_delegation', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('agents')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('account_id', 'uuid', (c) => c.notNull().references('accounts.id'))
    .addColumn('is_owner', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('agent_type', 'text', (c) => c.notNull().check(sql`agent_type in ('persistent', 'ephemeral', 'platform_managed')`))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('active', 'deactivated', 'expired')`))
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('capabilities', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('signing_key_public', 'text')
    .addColumn('webhook_url', 'text')
    .addColumn('delegation', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('parent_agent_id', 'uuid', (c) => c.references('agents.id'))
    .addColumn('expires_at', 'timestamptz')
    .addColumn('wallet_opened_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`create index agents_account on agents (account_id)`.execute(db);
  await sql`create unique index agents_one_owner on agents (account_id) where is_owner`.execute(db);

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('agent_id', 'uuid', (c) => c.notNull().references('agents.id'))
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('key_prefix', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  // Spec: each agent has one active key.
  await sql`create unique index api_keys_one_active on api_keys (agent_id) where revoked_at is null`.execute(db);

  await db.schema
    .createTable('signing_keys')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('agent_id', 'uuid', (c) => c.notNull().references('agents.id'))
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await sql`create index signing_keys_agent on signing_keys (agent_id, created_at)`.execute(db);
  await sql`create unique index signing_keys_one_current on signing_keys (agent_id) where revoked_at is null`.execute(db);

  await db.schema
    .createTable('trust_scores')
    .addColumn('agent_id', 'uuid', (c) => c.primaryKey().references('agents.id'))
    .addColumn('score', 'integer', (c) => c.notNull().defaultTo(50).check(sql`score between 0 and 100`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
}
