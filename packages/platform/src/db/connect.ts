import pg from 'pg';
import { CamelCasePlugin, Kysely, Migrator, sql, type Migration } from 'kysely';
import type { Logger } from '../logger.js';
import { ServiceDialect } from './driver.js';
import { PreparingClient } from './prepared.js';

// int8 (bigint) columns hold cents: parse them to numbers, refusing anything beyond the safe range
// (money is integers, never silently rounded).
pg.types.setTypeParser(20, (value: string) => {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error(`int8 value ${value} exceeds the safe integer range`);
  return n;
});

export interface ServiceDbOptions {
  url: string;
  /** The service's schema, also the suffix of its role `aex_<schema>`. */
  schema: string;
  migrations: Record<string, Migration>;
  logger?: Logger;
  poolSize?: number;
  /**
   * Postgres extensions the service needs (e.g. `pg_trgm`). Created in the service's schema when the
   * connecting user may; a deployment whose DBA installed them elsewhere finds them through `public`.
   */
  extensions?: string[];
  /** Statements prepared once per connection (`PreparingClient`); default true (D16 `DATABASE_PREPARED_STATEMENTS`). */
  preparedStatements?: boolean;
}

export interface ServiceDb<DB> {
  db: Kysely<DB>;
  /**
   * A second, small pool for the transactions that hold an Idempotency-Key claim while their request
   * runs (D5.5, `idempotency/records.ts`). Kept apart so that claims can never take every connection
   * of `db` and leave their own handlers waiting for one.
   */
  claims: Kysely<DB>;
  schema: string;
  role: string;
  close(): Promise<void>;
}

const IDENT = /^[a-z][a-z0-9_]{0,40}$/;

/**
 * Connects a service to its own schema (docs/architecture.md "Layout of a service"). When the connecting user may
 * create roles (local stack, tests), the role `aex_<schema>` is created, owns the schema and is the
 * role every pooled connection runs as: it has no rights on other services' schemas, so a stray
 * cross-schema query fails. Otherwise (a deployment giving each service its own login), the login
 * itself is the service's role. Migrations run at start under a lock, in the service's schema.
 */
export async function connectServiceDb<DB>(opts: ServiceDbOptions): Promise<ServiceDb<DB>> {
  if (!IDENT.test(opts.schema)) throw new Error(`invalid schema name ${opts.schema}`);
  for (const ext of opts.extensions ?? []) if (!IDENT.test(ext)) throw new Error(`invalid extension name ${ext}`);
  const role = await provisionSchema(opts.url, opts.schema, opts.extensions ?? []);
  const searchPath = opts.extensions?.length ? `${opts.schema},public` : opts.schema;
  const options = [`-c search_path=${searchPath}`, role ? `-c role=${role}` : ''].filter(Boolean).join(' ');
  const Client = opts.preparedStatements === false ? pg.Client : PreparingClient;
  const db = kyselyOn<DB>(opts, new pg.Pool({ Client, connectionString: opts.url, max: opts.poolSize ?? 10, options, application_name: `aex-${opts.schema}` }));
  // A claim left open by a handler that hangs is ended by Postgres itself after this long.
  const claimOptions = `${options} -c idle_in_transaction_session_timeout=${CLAIM_IDLE_LIMIT_MS}`;
  const claims = kyselyOn<DB>(opts, new pg.Pool({ Client, connectionString: opts.url, max: 5, options: claimOptions, application_name: `aex-${opts.schema}-keyed` }));
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => opts.migrations },
    migrationTableSchema: opts.schema,
  });
  const { error, results } = await migrator.migrateToLatest();
  for (const r of results ?? []) opts.logger?.info({ migration: r.migrationName, status: r.status }, 'migration');
  if (error) {
    await Promise.all([db.destroy(), claims.destroy()]);
    throw error instanceof Error ? error : new Error(String(error));
  }
  return { db, claims, schema: opts.schema, role: role ?? 'login', close: async () => void (await Promise.all([db.destroy(), claims.destroy()])) };
}

/** Postgres ends a keyed request's transaction left idle this long (a hung handler; normal ones take ms). */
export const CLAIM_IDLE_LIMIT_MS = 120_000;

function kyselyOn<DB>(opts: ServiceDbOptions, pool: pg.Pool): Kysely<DB> {
  // The pool replaces the client; log what happened without dumping the client object.
  pool.on('error', (err: Error & { code?: string }) => opts.logger?.warn({ code: err.code, reason: err.message }, 'idle Postgres connection closed'));
  // A connection lost while checked out (a Postgres restart, an ended session) emits 'error' with no
  // listener, which would end the process; the loss reaches its holder as the failure of its next query.
  pool.on('connect', (client) => client.on('error', (err: Error & { code?: string }) => opts.logger?.debug({ code: err.code, reason: err.message }, 'Postgres connection lost')));
  // Column names only: the keys inside JSON values (an agent's input and output, a contract's
  // schemas, metadata) are the agents' own and come back as they were written.
  return new Kysely<DB>({ dialect: new ServiceDialect(pool), plugins: [new CamelCasePlugin({ maintainNestedObjectKeys: true })] });
}

async function provisionSchema(url: string, schema: string, extensions: string[]): Promise<string | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ can: boolean }>(
      'select (rolsuper or rolcreaterole) as can from pg_roles where rolname = current_user',
    );
    if (!rows[0]?.can) {
      await client.query(`create schema if not exists ${schema}`);
      await createExtensions(client, schema, extensions);
      return null;
    }
    const role = `aex_${schema}`;
    // Roles are cluster-wide and tests create databases in parallel: tolerate a concurrent create.
    await client.query(`do $$ begin create role ${role} nologin; exception when duplicate_object or unique_violation then null; end $$`);
    await client.query(`grant ${role} to current_user`).catch(() => undefined);
    await client.query(`do $$ begin create schema if not exists ${schema} authorization ${role}; exception when duplicate_schema or unique_violation then null; end $$`);
    await client.query(`alter schema ${schema} owner to ${role}`);
    await client.query(`revoke all on schema public from ${role}`).catch(() => undefined);
    await createExtensions(client, schema, extensions);
    return role;
  } finally {
    await client.end();
  }
}

export { sql };

async function createExtensions(client: pg.Client, schema: string, extensions: string[]): Promise<void> {
  for (const ext of extensions) {
    const { rows } = await client.query('select 1 from pg_extension where extname = $1', [ext]);
    if (rows.length > 0) continue;
    try {
      // Tests create databases in parallel, each with its own extensions: tolerate a concurrent create.
      await client.query(`do $$ begin create extension if not exists ${ext} with schema ${schema}; exception when unique_violation or duplicate_object then null; end $$`);
    } catch (err) {
      throw new Error(`The Postgres extension ${ext} is missing and could not be created (${(err as Error).message}); ask the database owner to run: CREATE EXTENSION ${ext};`);
    }
  }
}
