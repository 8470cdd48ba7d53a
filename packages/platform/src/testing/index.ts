import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { NatsBus } from '../bus/nats-bus.js';
import { MemoryBus } from '../bus/memory-bus.js';
import type { Bus } from '../bus/types.js';
import { createLogger } from '../logger.js';

/**
 * Test kit. Tests use the real servers of the machine (Postgres 127.0.0.1:5432, NATS 127.0.0.1:4222)
 * and isolate themselves: each gets its own database and its own NATS namespace (subjects, streams,
 * buckets), because other runs may share the same servers.
 */
export const TEST_ADMIN_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_NATS_URL = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

export const uniqueSuffix = () => randomBytes(5).toString('hex');
export const testNamespace = () => `t${uniqueSuffix()}`;
export const testLogger = () => createLogger('test', (process.env.TEST_LOG_LEVEL as 'silent') ?? 'silent');

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `aex_t_${uniqueSuffix()}`;
  const admin = new pg.Client({ connectionString: TEST_ADMIN_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  return databaseNamed(name);
}

function databaseNamed(name: string): TestDatabase {
  const url = new URL(TEST_ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: TEST_ADMIN_DATABASE_URL });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** What a template database holds: `key` names its contents (a new key, a new template), `build` makes them. */
export interface TemplateSpec {
  key: string;
  /** Migrates the empty database at `url`, and leaves no connection to it open. */
  build(url: string): Promise<void>;
}

const SOURCE_IN_USE = '55006';

/**
 * A database of its own for a test file, cloned from a template built once per `template.key` on this
 * Postgres server (`CREATE DATABASE … TEMPLATE`): every file starts from the migrated schemas without
 * running the migrations again. The first caller builds the template under an advisory lock, so files
 * starting at once build it once; it takes no connections afterwards, so clones are never refused
 * because someone is connected to it.
 */
export async function createTestDatabaseFrom(template: TemplateSpec): Promise<TestDatabase> {
  const source = `aex_tmpl_${template.key}`;
  if (!/^[a-z0-9_]{1,63}$/.test(source)) throw new Error(`invalid template key ${template.key}`);
  const admin = new pg.Client({ connectionString: TEST_ADMIN_DATABASE_URL });
  await admin.connect();
  const exists = async () => (await admin.query('select 1 from pg_database where datname = $1', [source])).rowCount === 1;
  try {
    if (!(await exists())) {
      await admin.query('select pg_advisory_lock(hashtext($1))', [source]);
      try {
        if (!(await exists())) {
          const building = await createTestDatabase();
          try {
            await template.build(building.url);
            await admin.query(`alter database ${building.name} rename to ${source}`);
            await admin.query(`alter database ${source} allow_connections false`);
          } catch (err) {
            await building.drop();
            throw err;
          }
        }
      } finally {
        await admin.query('select pg_advisory_unlock(hashtext($1))', [source]);
      }
    }
  } finally {
    await admin.end();
  }
  const name = `aex_t_${uniqueSuffix()}`;
  for (let attempt = 0; ; attempt++) {
    const c = new pg.Client({ connectionString: TEST_ADMIN_DATABASE_URL });
    await c.connect();
    try {
      await c.query(`create database ${name} template ${source}`);
      break;
    } catch (err) {
      // Another clone of the same template at the same moment: Postgres copies one at a time.
      if ((err as { code?: string }).code !== SOURCE_IN_USE || attempt >= 50) throw err;
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 80));
    } finally {
      await c.end();
    }
  }
  return databaseNamed(name);
}

/**
 * A clock a test moves forward: a service given `now` from it schedules its timers by it and fires them
 * by it, so a test passes a deadline with `advance` instead of sleeping until it comes.
 */
export class TestClock {
  private offsetMs = 0;
  readonly now = (): Date => new Date(Date.now() + this.offsetMs);
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

export type BusKind = 'jetstream' | 'memory';

/** A bus in a fresh namespace; `dispose` removes its streams and the given buckets. */
export async function createTestBus(kind: BusKind, namespace = testNamespace()): Promise<{ bus: Bus; dispose(buckets?: string[]): Promise<void> }> {
  if (kind === 'memory') {
    const bus = new MemoryBus(namespace);
    return { bus, dispose: () => bus.close() };
  }
  const bus = await NatsBus.connect(TEST_NATS_URL, namespace, 'aex-test');
  return {
    bus,
    async dispose(buckets: string[] = []) {
      for (const b of buckets) await bus.deleteBucket(b);
      await bus.destroyNamespace();
      await bus.close();
    },
  };
}

/** Polls until `fn` returns a truthy value or the time runs out. */
export async function eventually<T>(fn: () => Promise<T | null | undefined | false>, timeoutMs = 5000, intervalMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
export { NatsCluster, type ClusterNode } from './nats-cluster.js';
