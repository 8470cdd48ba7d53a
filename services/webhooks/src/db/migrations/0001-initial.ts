import { sql, type Kysely } from 'kysely';
import { createPlatformTablesV1, createPlatformTablesV2, createPlatformTablesV3 } from '@aex/platform';

// Frozen: never edit a migration that has shipped; add the next one.
// The webhook dispatcher's schema (D14): its replica of agents' webhook URLs, the agents' signing
// secrets, one delivery per event and agent, and every attempt of each.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await createPlatformTablesV1(db);
  await createPlatformTablesV2(db);
  await createPlatformTablesV3(db);

  await db.schema
    .createTable('endpoints')
    .addColumn('agent_id', 'uuid', (c) => c.primaryKey())
    .addColumn('account_id', 'uuid', (c) => c.notNull())
    .addColumn('url', 'text')
    .addColumn('source_at', 'timestamptz', (c) => c.notNull())
    .execute();

  // A signing secret must be recoverable to sign with (an HMAC key, like any Standard Webhooks
  // sender's): it is stored as issued, in this schema only, readable by this service's role alone.
  await db.schema
    .createTable('secrets')
    .addColumn('agent_id', 'uuid', (c) => c.primaryKey())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_expires_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('deliveries')
    .addColumn('webhook_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'uuid', (c) => c.notNull())
    .addColumn('event_id', 'uuid', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'delivered', 'dead')`))
    .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('attempts_left', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'timestamptz')
    // While its endpoint is stuck (every place taken for a while), a due delivery waits: its due
    // time is kept here and given back when one of the endpoint's attempts ends.
    .addColumn('deferred_from', 'timestamptz')
    .addColumn('claimed_until', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
  // A redelivered event never makes a second delivery to one agent.
  await sql`create unique index deliveries_event_agent on deliveries (event_id, agent_id)`.execute(db);
  await sql`create index deliveries_due on deliveries (next_attempt_at) where status = 'pending'`.execute(db);
  await sql`create index deliveries_agent on deliveries (agent_id, created_at desc)`.execute(db);
  await sql`create index deliveries_dead on deliveries (updated_at desc) where status = 'dead'`.execute(db);

  await db.schema
    .createTable('attempts')
    .addColumn('webhook_id', 'text', (c) => c.notNull().references('deliveries.webhook_id'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addColumn('url', 'text')
    .addColumn('address', 'text')
    .addColumn('status_code', 'integer')
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('error_class', 'text')
    .addColumn('error', 'text')
    .addColumn('response_excerpt', 'text')
    .addPrimaryKeyConstraint('attempts_pk', ['webhook_id', 'attempt'])
    .execute();
}
