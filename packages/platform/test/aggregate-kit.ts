import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { isAppError, type IdempotencyContext, type RpcReply } from '@aex/contracts';
import {
  AggregateRunner, connectServiceDb, IdempotencyRecords, toRpcReply, Transactor,
  type Bus, type HandlerContext, type HandOffTarget, type OutboxRow, type SagaSignals, type ServiceDb, type Stoppable,
} from '../src/index.js';
import { createTestBus, createTestDatabaseFrom, testLogger, type TestDatabase } from '../src/testing/index.js';
import { countedDb, type CountedDb } from './counted-db.js';
import { counterAggregate, migrations, type Counter, type CounterCommand, type CounterTypes, type Db } from './counter-aggregate.js';

// What the aggregate runner's test files share: the counter's schema on a database of the file's
// own (cloned from a template), the runner's transactions on one counted connection of the service's
// kind, a relay stand-in keeping what it is handed, Idempotency-Key records whose claims have a
// counted connection of their own, and — when asked for — a JetStream namespace of each test's own.

const SCHEMA = 'runnertest';
const TEMPLATE_KEY = `platform_runner_${createHash('sha256').update(String(migrations['0001']!.up)).digest('hex').slice(0, 16)}`;
export const logger = testLogger();

export interface RunnerTest {
  database: TestDatabase;
  /** The service's own pools: a test acting as another replica writes through them. */
  service: ServiceDb<Db>;
  /** The runner's connection, its round trips and statements counted. */
  counted: CountedDb<Db>;
  /** The connection of the Idempotency-Key claims (a keyed request's transaction), counted too. */
  claims: CountedDb<Db>;
  /** What the relay was handed after each commit (this test's). */
  relay: HandOffTarget & { rows: OutboxRow[] };
  /** The service's transactions, on `counted`, handing off to `relay`. */
  tx: Transactor<Db>;
  records: IdempotencyRecords;
  /** A new namespace for each test; none unless asked for. */
  bus: Bus;
  /** Stopped after each test. */
  stoppables: Stoppable[];
}

/** A runner of a new counter aggregate (its own memory and log) over the test's transactions. */
export function counterRunner(t: RunnerTest, opts: { signals?: SagaSignals<Counter>; sagaWaitMs?: number; now?: () => Date } = {}) {
  const aggregate = counterAggregate();
  const runner = new AggregateRunner<CounterTypes>(aggregate, { tx: t.tx, now: opts.now ?? (() => new Date()), sagaWaitMs: opts.sagaWaitMs ?? 5_000, ...(opts.signals && { signals: opts.signals }) });
  return { aggregate, runner };
}

/** A request as `serveOperations` runs it: under its Idempotency-Key when it has one, an AppError answered as its envelope. */
export function requested(t: RunnerTest, runner: AggregateRunner<CounterTypes>, id: string, command: CounterCommand, key?: IdempotencyContext): Promise<RpcReply> {
  return t.records.run(key, randomUUID(), async (effect) => {
    const ctx: HandlerContext = { requestId: randomUUID(), principal: null, admin: false, signed: false, logger, effect, keyed: key !== undefined, replyBudgetBytes: 1_000_000 };
    try {
      return toRpcReply(await runner.request(ctx, id, command));
    } catch (err) {
      if (isAppError(err)) return { ok: false, status: err.status, errors: err.entries };
      throw err;
    }
  });
}

export const keyOf = (): IdempotencyContext => ({ key: randomUUID(), scope: 'agent:a', fingerprint: 'fp' });

/** A counter written as another replica would, outside the runner: id, value 2, version 1, no round. */
export async function existing(t: RunnerTest, over: Partial<Counter> = {}): Promise<Counter> {
  const row: Counter = { id: randomUUID(), value: 2, version: 1, round: 'none', label: 'a counter', ...over };
  await t.service.db.insertInto('counters').values(row).execute();
  return row;
}

/** A counter as the replica remembers it. */
export const known = ({ label: _label, ...rest }: Counter) => rest;

/** The counter as it is now. */
export const counterOf = (t: RunnerTest, id: string) => t.service.db.selectFrom('counters').selectAll().where('id', '=', id).executeTakeFirst();
/** The messages in the outbox, by type and data, in the order written. */
export const outboxOf = async (t: RunnerTest) => (await t.service.db.selectFrom('outbox').select(['type', 'payload']).orderBy('seq').execute()).map((r) => ({ type: r.type, data: (r.payload as { data: unknown }).data }));
/** The timers set, by kind and key. */
export const timersOf = async (t: RunnerTest) => (await t.service.db.selectFrom('timers').select(['kind', 'key']).orderBy('key').execute());

/** Registers the file's hooks; read the fields inside tests. */
export function runnerTest(opts: { bus: boolean }): RunnerTest {
  const t = { stoppables: [] as Stoppable[] } as RunnerTest;
  let dispose: (() => Promise<void>) | undefined;
  const stopAll = async () => {
    for (const s of t.stoppables.splice(0)) await s.stop();
  };
  beforeAll(async () => {
    t.database = await createTestDatabaseFrom({ key: TEMPLATE_KEY, build: async (url) => (await connectServiceDb({ url, schema: SCHEMA, migrations })).close() });
    t.service = await connectServiceDb<Db>({ url: t.database.url, schema: SCHEMA, migrations });
    t.counted = await countedDb<Db>({ url: t.database.url, schema: SCHEMA, role: t.service.role });
    t.claims = await countedDb<Db>({ url: t.database.url, schema: SCHEMA, role: t.service.role });
  });
  afterAll(async () => {
    await stopAll();
    await dispose?.();
    await t.counted?.close();
    await t.claims?.close();
    await t.service?.close();
    await t.database?.drop();
  });
  beforeEach(async () => {
    await stopAll();
    if (opts.bus) {
      await dispose?.();
      ({ bus: t.bus, dispose } = await createTestBus('jetstream'));
    }
    for (const table of ['counters', 'outbox', 'timers', 'processedMessages', 'idempotencyKeys'] as const) await t.service.db.deleteFrom(table).execute();
    const rows: OutboxRow[] = [];
    t.relay = { running: true, rows, handOff: (handed) => void rows.push(...handed) };
    t.tx = new Transactor(t.counted.db, t.relay);
    t.records = new IdempotencyRecords({ tx: t.tx, claims: t.claims.db, ttlMs: 60_000, abandonAfterMs: 30_000, logger });
  });
  return t;
}
