import { sql, type Generated, type Kysely } from 'kysely';

/**
 * Frozen migration (never edit; add a v2): the tables every service's messaging needs — the
 * transactional outbox, the processed-message ids of idempotent consumers, and durable timers.
 * Each service's first migration calls it, so the tables live in that service's own schema.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function createPlatformTablesV1(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('outbox')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('event', 'command')`))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('headers', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('published_at', 'timestamptz')
    .execute();
  await sql`create index outbox_unpublished on outbox (created_at) where published_at is null`.execute(db);

  await db.schema
    .createTable('processed_messages')
    .addColumn('consumer', 'text', (c) => c.notNull())
    .addColumn('message_id', 'uuid', (c) => c.notNull())
    .addColumn('processed_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('processed_messages_pk', ['consumer', 'message_id'])
    .execute();

  await db.schema
    .createTable('timers')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('fire_at', 'timestamptz', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('fired_at', 'timestamptz')
    .addUniqueConstraint('timers_kind_key', ['kind', 'key'])
    .execute();
  await sql`create index timers_due on timers (fire_at) where fired_at is null`.execute(db);
}

/**
 * Frozen migration (never edit; add a v3): the Idempotency-Key records of D5.5. A row is written in
 * the same transaction as the effect it guards, so it exists exactly when the effect does. `reply`
 * is the first answer, encrypted with a key derived from the Idempotency-Key itself (the store never
 * holds a readable answer: sign-up answers carry an API key); `key_hash` names the (scope, key) pair.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function createPlatformTablesV2(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('key_hash', 'text', (c) => c.primaryKey())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('reply', 'bytea')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`create index idempotency_keys_expiry on idempotency_keys (expires_at)`.execute(db);
}

/**
 * Frozen migration (never edit; add a v4): outbox rows are claimed for a short lease instead of
 * being locked while they are published, so no row lock is held across the call to JetStream and a
 * relay takes a batch in one statement and marks it in another (docs/performance.md).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function createPlatformTablesV3(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('outbox').addColumn('claimed_until', 'timestamptz').execute();
  // The order rows were written in, also within one transaction (where created_at is the same).
  await db.schema.alterTable('outbox').addColumn('seq', 'bigserial').execute();
  await sql`drop index outbox_unpublished`.execute(db);
  await sql`create index outbox_unpublished on outbox (seq) where published_at is null`.execute(db);
}

/**
 * Frozen migration (never edit; add a v5): the processed-message ids indexed by when they were
 * recorded, so that the ids too old to be delivered again are deleted reading only the oldest part of
 * the table (`pruneProcessedMessages`). A BRIN index: rows are appended in time order, so it is a few
 * pages, and an insert into a block range not yet summarized costs nothing (a B-tree would
 * add an index entry to every message a consumer takes).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function createPlatformTablesV4(db: Kysely<any>): Promise<void> {
  await sql`create index processed_messages_age on processed_messages using brin (processed_at)`.execute(db);
}

/**
 * Frozen migration (never edit; add a v6): `require_written(n, what)`, which a unit of work's
 * statement calls on the rows its write at commit (`writeAtCommit`) wrote: none raises SQLSTATE
 * AX001, so the statement fails, the `COMMIT` sent with it is skipped, and the transaction is undone.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function createPlatformTablesV5(db: Kysely<any>): Promise<void> {
  await sql`
    create function require_written(n bigint, what text) returns bigint language plpgsql immutable as $$
    begin
      if n = 0 then
        raise exception 'nothing written at commit by %', what using errcode = 'AX001';
      end if;
      return n;
    end $$`.execute(db);
}

/** Kysely table types of the platform tables, for services' Database interfaces. */
export interface PlatformTables {
  outbox: {
    id: string;
    kind: 'event' | 'command';
    type: string;
    payload: unknown;
    headers: Record<string, string>;
    createdAt: Generated<Date>;
    publishedAt: Date | null;
    claimedUntil: Generated<Date | null>;
    seq: Generated<string>;
  };
  processedMessages: { consumer: string; messageId: string; processedAt: Generated<Date> };
  idempotencyKeys: {
    keyHash: string;
    fingerprint: string;
    reply: Buffer | null;
    createdAt: Generated<Date>;
    expiresAt: Date;
  };
  timers: {
    id: string;
    kind: string;
    key: string;
    fireAt: Date;
    payload: unknown;
    attempts: Generated<number>;
    lastError: string | null;
    firedAt: Date | null;
  };
}
