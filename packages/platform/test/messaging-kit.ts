import { createHash, randomUUID } from 'node:crypto';
import type { Kysely, Migration, Selectable } from 'kysely';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { subjects, Type, type MessageDef } from '@aex/contracts';
import {
  ack, connectServiceDb, createPlatformTablesV1, createPlatformTablesV3, createPlatformTablesV4, createPlatformTablesV5,
  type Bus, type BusMessage, type HandOffTarget, type OutboxRow, type PlatformTables, type ServiceDb, type Stoppable,
} from '../src/index.js';
import { createTestBus, createTestDatabaseFrom, type TestDatabase } from '../src/testing/index.js';

// What the messaging test files share (relay, consumers, timers, unit of work, schema): a service
// schema with the platform tables and an `effects` table of its own, on a database of the file's own
// cloned from a template, and a JetStream namespace of the test's own.

export interface Db extends PlatformTables {
  effects: { messageId: string; value: number };
}

export const SCHEMA = 'msgtest';

export const migrations: Record<string, Migration> = {
  '0001': {
    async up(db) {
      await createPlatformTablesV1(db);
      await createPlatformTablesV3(db);
      await createPlatformTablesV4(db);
      await createPlatformTablesV5(db);
      await db.schema.createTable('effects').addColumn('message_id', 'text', (c) => c.notNull()).addColumn('value', 'integer', (c) => c.notNull()).execute();
    },
  },
};

/** The migrations' code names the template: changed migrations, a new template. */
const TEMPLATE_KEY = `platform_msg_${createHash('sha256').update(String(migrations['0001']!.up)).digest('hex').slice(0, 16)}`;

const Pinged = Type.Object({ value: Type.Integer() }, { additionalProperties: false });
export const pinged: MessageDef<typeof Pinged> = { kind: 'event', owner: 'identity', type: 'test.pinged', data: Pinged };

/** A hand-off target that only keeps what it was handed (the relay's part is tested on its own). */
export function handOffs(): HandOffTarget & { rows: OutboxRow[] } {
  const rows: OutboxRow[] = [];
  return { running: true, rows, handOff: (handed) => void rows.push(...handed) };
}

export interface MessagingTest {
  database: TestDatabase;
  service: ServiceDb<Db>;
  db: Kysely<Db>;
  /** A new namespace for each test (its streams hold only that test's messages); none unless asked for. */
  bus: Bus;
  /** Stopped after each test. */
  stoppables: Stoppable[];
  /** The messages of `pinged` a new durable consumer receives, as they come. */
  collect(durable?: string): Promise<BusMessage[]>;
  /** The outbox row `id`, or undefined once it is gone (a published row is removed). */
  outboxRow(id: string): Promise<Selectable<Db['outbox']> | undefined>;
  /** `bus` with every publish recorded (what a relay sent, whether or not its rows are still in the table). */
  recording(): { bus: Bus; published: unknown[] };
}

/**
 * Registers the file's hooks: its database before all, a fresh namespace (with `bus`) and empty
 * tables before each test, everything stopped and dropped after. Read the fields inside tests.
 */
export function messagingTest(opts: { bus: boolean }): MessagingTest {
  let dispose: (() => Promise<void>) | undefined;
  const t = {
    stoppables: [] as Stoppable[],
    async collect(durable = `collect-${randomUUID().slice(0, 8)}`) {
      const got: BusMessage[] = [];
      t.stoppables.push(await t.bus.consume({ stream: 'events', durable, filter: subjects.event(t.bus.namespace, pinged.type), handler: async (m) => (got.push(m), ack()) }));
      return got;
    },
    outboxRow: (id: string) => t.db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirst(),
    recording() {
      const published: unknown[] = [];
      const bus = t.bus;
      return { published, bus: Object.create(bus, { publish: { value: (...args: Parameters<Bus['publish']>) => (published.push(args[1]), bus.publish(...args)) } }) as Bus };
    },
  } as MessagingTest;
  const stopAll = async () => {
    for (const s of t.stoppables.splice(0)) await s.stop();
  };
  beforeAll(async () => {
    t.database = await createTestDatabaseFrom({ key: TEMPLATE_KEY, build: async (url) => (await connectServiceDb({ url, schema: SCHEMA, migrations })).close() });
    t.service = await connectServiceDb<Db>({ url: t.database.url, schema: SCHEMA, migrations });
    t.db = t.service.db;
  });
  afterAll(async () => {
    await stopAll();
    await dispose?.();
    await t.service?.close();
    await t.database?.drop();
  });
  beforeEach(async () => {
    await stopAll();
    if (opts.bus) {
      await dispose?.();
      ({ bus: t.bus, dispose } = await createTestBus('jetstream'));
    }
    for (const table of ['outbox', 'effects', 'processedMessages', 'timers'] as const) await t.db.deleteFrom(table).execute();
  });
  return t;
}
