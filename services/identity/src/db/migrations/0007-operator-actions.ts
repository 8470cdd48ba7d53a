import { sql, type Kysely } from 'kysely';

// Frozen. D15.3: the operator's audit log — every operator action, by whichever service took it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('operator_actions')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('service', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text')
    .addColumn('target_id', 'text')
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('details', 'jsonb', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`create index operator_actions_at on operator_actions (at desc, id desc)`.execute(db);
}
