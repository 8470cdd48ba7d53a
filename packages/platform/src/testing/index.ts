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
