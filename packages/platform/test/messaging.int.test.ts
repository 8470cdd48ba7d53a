import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Migration } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AppError, subjects, Type, type MessageDef } from '@aex/contracts';
import {
  ack,
  connectServiceDb,
  consumeIdempotently,
  createPlatformTablesV1,
  createPlatformTablesV3,
  createPlatformTablesV4,
  createPlatformTablesV5,
  HAND_OFF_LEASE_MS,
  inTransaction,
  AlreadyApplied,
  OutboxRelay,
  PROCESSED_RETENTION_MS,
  pruneProcessedMessages,
  STREAM_MAX_AGE_MS,
  TimerRunner,
  type Bus,
  type BusMessage,
  type PlatformTables,
  type Stoppable,
} from '../src/index.js';
import { createTestBus, createTestDatabase, eventually, testLogger, type TestDatabase } from '../src/testing/index.js';

// The transactional outbox, idempotent consumers and durable timers on real Postgres and JetStream.

interface Db extends PlatformTables {
  effects: { messageId: string; value: number };
}

const migrations: Record<string, Migration> = {
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

const Pinged = Type.Object({ value: Type.Integer() }, { additionalProperties: false });
const pinged: MessageDef<typeof Pinged> = { kind: 'event', owner: 'identity', type: 'test.pinged', data: Pinged };

let database: TestDatabase;
let db: Kysely<Db>;
let closeDb: () => Promise<void>;
let bus: Bus;
let dispose: () => Promise<void>;
const logger = testLogger();
const stoppables: Stoppable[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  ({ db, close: closeDb } = await connectServiceDb<Db>({ url: database.url, schema: 'msgtest', migrations }));
});
afterAll(async () => {
  for (const s of stoppables.splice(0)) await s.stop();
  await dispose?.();
  await closeDb();
  await database.drop();
});
beforeEach(async () => {
  for (const s of stoppables.splice(0)) await s.stop();
  // A fresh namespace per test: its streams hold only this test's messages.
  await dispose?.();
  ({ bus, dispose } = await createTestBus('jetstream'));
  await db.deleteFrom('outbox').execute();
  await db.deleteFrom('effects').execute();
  await db.deleteFrom('processedMessages').execute();
  await db.deleteFrom('timers').execute();
});

async function collect(durable: string): Promise<BusMessage[]> {
  const got: BusMessage[] = [];
  stoppables.push(await bus.consume({ stream: 'events', durable, filter: subjects.event(bus.namespace, pinged.type), handler: async (m) => (got.push(m), ack()) }));
  return got;
}

/** The row `id` of the outbox, or undefined once it is gone (a published row is removed). */
const outboxRow = (id: string) => db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirst();

/** `bus` with every publish recorded (what a relay sent, whether or not its rows are still in the table). */
function recording(): { bus: Bus; published: unknown[] } {
  const published: unknown[] = [];
  return { published, bus: Object.create(bus, { publish: { value: (...args: Parameters<Bus['publish']>) => (published.push(args[1]), bus.publish(...args)) } }) as Bus };
}

describe('outbox relay', () => {
  it('publishes only what committed, with Nats-Msg-Id = the message id', async () => {
    const got = await collect(`relay-${randomUUID().slice(0, 8)}`);
    const { id: committed } = await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 1 }));
    await inTransaction(db, async (_trx, work) => {
      work.enqueue(pinged, { value: 2 });
      throw new Error('rolled back');
    }).catch(() => undefined);
    const relay = new OutboxRelay(db, bus, logger);
    expect(await relay.drain()).toBe(1);
    await eventually(async () => got.length === 1);
    expect(got[0]!.data).toMatchObject({ id: committed, type: 'test.pinged', data: { value: 1 } });
    expect(got[0]!.headers['Nats-Msg-Id'] ?? got[0]!.headers['nats-msg-id']).toBe(committed);
    // Published, so removed: the table holds only what is still on its way.
    expect(await outboxRow(committed)).toBeUndefined();
  });

  it('re-publishing after a crash between publish and removal is dropped as a duplicate', async () => {
    const got = await collect(`dup-${randomUUID().slice(0, 8)}`);
    const { id } = await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 3 }));
    const { seq: _seq, ...written } = (await outboxRow(id))!;
    const relay = new OutboxRelay(db, bus, logger);
    await relay.drain();
    // Simulate the crash: the row is still in the database, unpublished, and its claim has lapsed.
    await db.insertInto('outbox').values({ ...written, headers: JSON.stringify(written.headers) as never, payload: JSON.stringify(written.payload), claimedUntil: new Date(Date.now() - 1) }).execute();
    expect(await relay.drain()).toBe(1);
    // A later message, published after the repeat: the repeat, had the stream kept it, comes before it.
    const later = await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 30 }));
    await relay.drain();
    await eventually(async () => got.some((m) => (m.data as { id: string }).id === later.id));
    expect(got.map((m) => (m.data as { id: string }).id)).toEqual([id, later.id]);
  });

  it('publishes in the order the rows were written, within one transaction too', async () => {
    const got = await collect(`order-${randomUUID().slice(0, 8)}`);
    await inTransaction(db, async (trx, work) => {
      for (let i = 0; i < 150; i++) work.enqueue(pinged, { value: i });
    });
    expect(await new OutboxRelay(db, bus, logger).drain()).toBe(150);
    await eventually(async () => got.length === 150, 10_000);
    expect(got.map((m) => (m.data as { data: { value: number } }).data.value)).toEqual(Array.from({ length: 150 }, (_, i) => i));
  });

  it('leaves a batch claimed by a relay that died to its lease, then publishes it', async () => {
    const got = await collect(`lease-${randomUUID().slice(0, 8)}`);
    const { id } = await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 4 }));
    // The dead relay's claim: taken, never published nor marked.
    await db.updateTable('outbox').set({ claimedUntil: new Date(Date.now() + 60_000) }).where('id', '=', id).execute();
    const relay = new OutboxRelay(db, bus, logger);
    expect(await relay.drain()).toBe(0);
    // The lease runs out (the database's clock decides: moved by moving the lease into the past).
    await db.updateTable('outbox').set({ claimedUntil: new Date(Date.now() - 1) }).where('id', '=', id).execute();
    expect(await relay.drain()).toBe(1);
    await eventually(async () => got.length === 1);
    expect(await outboxRow(id)).toBeUndefined();
  });

  it('holds no lock on the outbox while it publishes: the rows can be read and claimed around it', async () => {
    await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 5 }));
    let locked: boolean | null = null;
    const slow: Bus = Object.create(bus, {
      publish: {
        value: async (...args: Parameters<Bus['publish']>) => {
          // While JetStream is being called, another session finds no row locked.
          const r = await sql<{ id: string }>`select id from outbox where published_at is null for update nowait`.execute(db).then(
            (rows) => (rows.rows.length === 1 ? false : null),
            (err: { code?: string }) => (err.code === '55P03' ? true : null), // lock_not_available
          );
          locked = r;
          return bus.publish(...args);
        },
      },
    });
    expect(await new OutboxRelay(db, slow, logger).drain()).toBe(1);
    expect(locked).toBe(false);
  });

  it('gives back what JetStream refused, so the next drain sends it at once', async () => {
    const got = await collect(`refused-${randomUUID().slice(0, 8)}`);
    const { id } = await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 6 }));
    const failing: Bus = Object.create(bus, { publish: { value: async () => { throw new Error('jetstream down'); } } });
    await expect(new OutboxRelay(db, failing, logger).drain()).rejects.toThrow('jetstream down');
    expect(await db.selectFrom('outbox').select(['publishedAt', 'claimedUntil']).where('id', '=', id).executeTakeFirstOrThrow()).toEqual({ publishedAt: null, claimedUntil: null });
    expect(await new OutboxRelay(db, bus, logger).drain()).toBe(1);
    await eventually(async () => got.length === 1);
  });

  it('lets two relays drain side by side without publishing anything twice (SKIP LOCKED)', async () => {
    const got = await collect(`pair-${randomUUID().slice(0, 8)}`);
    await inTransaction(db, async (trx, work) => {
      for (let i = 0; i < 250; i++) work.enqueue(pinged, { value: i });
    });
    const [a, b] = [new OutboxRelay(db, bus, logger), new OutboxRelay(db, bus, logger)];
    const [na, nb] = await Promise.all([a.drain(), b.drain()]);
    expect(na + nb).toBe(250);
    await eventually(async () => got.length === 250, 10_000);
    expect(new Set(got.map((m) => (m.data as { id: string }).id)).size).toBe(250);
  });

  it('clears rows an earlier version marked published instead of removing them, and publishes none of them', async () => {
    const got = await collect(`legacy-${randomUUID().slice(0, 8)}`);
    const { id: marked } = await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 7 }));
    await db.updateTable('outbox').set({ publishedAt: new Date() }).where('id', '=', marked).execute();
    const { id: waiting } = await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 8 }));
    expect(await new OutboxRelay(db, bus, logger).drain()).toBe(1);
    await eventually(async () => got.length === 1);
    expect(got.map((m) => (m.data as { id: string }).id)).toEqual([waiting]);
    expect(await db.selectFrom('outbox').select('id').execute()).toEqual([]);
  });

  it('runs by itself once started and publishes what a unit of work hands it', async () => {
    const got = await collect(`auto-${randomUUID().slice(0, 8)}`);
    const relay = new OutboxRelay(db, bus, logger, 50);
    relay.start();
    stoppables.push(relay);
    await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 9 }));
    await eventually(async () => got.length === 1);
  });
});

describe('consumed-message ids kept while their message can come again', () => {
  const recordedAgo = (ms: number) => db.insertInto('processedMessages').values({ consumer: 'pruned', messageId: randomUUID(), processedAt: new Date(Date.now() - ms) }).execute();

  it('deletes the ids recorded longer ago than a stream keeps a message (and a day), in batches, and keeps the rest', async () => {
    expect(PROCESSED_RETENTION_MS).toBe(STREAM_MAX_AGE_MS + 86_400_000);
    for (let i = 0; i < 5; i++) await recordedAgo(PROCESSED_RETENTION_MS + 3_600_000);
    await recordedAgo(STREAM_MAX_AGE_MS);
    await recordedAgo(PROCESSED_RETENTION_MS - 60_000);
    await recordedAgo(0);
    expect(await pruneProcessedMessages(db, { batch: 2 })).toBe(5);
    expect(await db.selectFrom('processedMessages').select('consumer').execute()).toHaveLength(3);
    expect(await pruneProcessedMessages(db)).toBe(0);
  });

  it('stops after the batches it was given, the rest left for its next round', async () => {
    for (let i = 0; i < 5; i++) await recordedAgo(PROCESSED_RETENTION_MS + 3_600_000);
    expect(await pruneProcessedMessages(db, { batch: 2, maxBatches: 1 })).toBe(2);
    expect(await db.selectFrom('processedMessages').select('consumer').execute()).toHaveLength(3);
  });

  it('is done by each service’s relay: its first drain prunes', async () => {
    await recordedAgo(PROCESSED_RETENTION_MS + 3_600_000);
    await recordedAgo(0);
    const relay = new OutboxRelay(db, bus, logger, 3_600_000);
    relay.start();
    stoppables.push(relay);
    await relay.drain();
    await eventually(async () => (await db.selectFrom('processedMessages').select('consumer').execute()).length === 1);
  });

  it('finds them through a BRIN index of the time they were recorded', async () => {
    const index = await sql<{ indexdef: string }>`select indexdef from pg_indexes where schemaname = 'msgtest' and indexname = 'processed_messages_age'`.execute(db);
    expect(index.rows[0]?.indexdef).toMatch(/USING brin \(processed_at\)/);
  });
});

describe('outbox hand-off', () => {
  /** A relay whose drain only runs when asked (its poll an hour away). */
  const handingRelay = (over: Bus = bus) => {
    const relay = new OutboxRelay(db, over, logger, 3_600_000);
    relay.start();
    stoppables.push(relay);
    return relay;
  };
  const rowOf = async (id: string) => (await outboxRow(id))!;

  it('publishes a tracked transaction’s rows right after its commit, in order, and removes them, with no drain', async () => {
    const got = await collect(`handoff-${randomUUID().slice(0, 8)}`);
    const relay = handingRelay();
    const ids = await inTransaction(db, async (trx, work) => {
      const sent = [];
      for (let i = 0; i < 5; i++) sent.push((work.enqueue(pinged, { value: i })).id);
      // Written only by the flush before the commit: nothing of it is in the table yet.
      expect(await trx.selectFrom('outbox').select('id').where('id', 'in', sent).execute()).toEqual([]);
      return sent;
    });
    await eventually(async () => got.length === 5);
    expect(got.map((m) => (m.data as { id: string }).id)).toEqual(ids);
    await eventually(async () => (await outboxRow(ids[4]!)) === undefined);
    // Nothing was left for a drain.
    expect(await db.selectFrom('outbox').select('id').execute()).toEqual([]);
    expect(await relay.drain()).toBe(0);
  });

  it('writes the rows claimed for the hand-off, so a drain leaves them until their lease has passed', async () => {
    const relay = handingRelay();
    let id = '';
    await inTransaction(db, async (trx, work) => {
      id = (work.enqueue(pinged, { value: 1 })).id;
      // The relay stops before the commit (a crash between commit and publish, as far as the row goes).
      await relay.stop();
    });
    const row = await rowOf(id);
    expect(row.publishedAt).toBeNull();
    expect(row.claimedUntil!.getTime() - Date.now()).toBeGreaterThan(HAND_OFF_LEASE_MS - 2_000);
    const got = await collect(`lapsed-${randomUUID().slice(0, 8)}`);
    const other = new OutboxRelay(db, bus, logger);
    expect(await other.drain()).toBe(0);
    await db.updateTable('outbox').set({ claimedUntil: new Date(Date.now() - 1) }).where('id', '=', id).execute();
    expect(await other.drain()).toBe(1);
    await eventually(async () => got.length === 1);
  });

  it('publishes nothing of a transaction that rolled back', async () => {
    const got = await collect(`handoff-rb-${randomUUID().slice(0, 8)}`);
    handingRelay();
    await inTransaction(db, async (trx, work) => {
      work.enqueue(pinged, { value: 1 });
      throw new Error('rolled back');
    }).catch(() => undefined);
    const { id } = await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 2 }));
    const later = await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 3 }));
    await eventually(async () => got.some((m) => (m.data as { id: string }).id === later.id));
    expect(got.map((m) => (m.data as { id: string }).id)).toEqual([id, later.id]);
    // The rolled-back row was never written: the table holds the committed ones or, once published, nothing.
    expect(await db.selectFrom('outbox').select('id').where('id', 'not in', [id, later.id]).execute()).toEqual([]);
  });

  it('gives rows JetStream refused back to the drain at once', async () => {
    const got = await collect(`handoff-refused-${randomUUID().slice(0, 8)}`);
    let refuse = true;
    const flaky: Bus = Object.create(bus, {
      publish: { value: async (...args: Parameters<Bus['publish']>) => (refuse ? Promise.reject(new Error('jetstream down')) : bus.publish(...args)) },
    });
    const relay = handingRelay(flaky);
    const { id } = await inTransaction(db, async (_trx, work) => work.enqueue(pinged, { value: 3 }));
    await eventually(async () => (await rowOf(id)).claimedUntil === null);
    refuse = false;
    // The drain the refusal asked for may have run while JetStream still refused: one more is enough.
    await relay.drain();
    await eventually(async () => got.length === 1);
    await eventually(async () => (await outboxRow(id)) === undefined);
  });
});

describe('a consumer’s record and messages in one statement', () => {
  it('rolls back the effect of a message applied before, and acknowledges a repetition its handler refuses', async () => {
    const sending = recording();
    const relay = new OutboxRelay(db, sending.bus, logger, 3_600_000);
    relay.start();
    stoppables.push(relay);
    const durable = `once-${randomUUID().slice(0, 8)}`;
    let calls = 0;
    const applied: number[] = [];
    const errors: unknown[] = [];
    const watched = Object.assign(Object.create(logger) as typeof logger, { error: (...args: unknown[]) => void errors.push(args) });
    stoppables.push(await consumeIdempotently({
      bus, db, logger: watched, durable, def: pinged,
      handle: async (trx, data, work, env) => {
        calls++;
        await trx.insertInto('effects').values({ messageId: env.id, value: data.value }).execute();
        // A handler that refuses the state its own first application made.
        if ((await trx.selectFrom('effects').select('value').where('messageId', '=', env.id).execute()).length > 1) throw new AppError('INVALID_STATE', 'already done');
        if (data.value < 100) work.enqueue(pinged, { value: data.value + 100 });
      },
      afterCommit: (data) => void applied.push(data.value),
    }));
    const id = randomUUID();
    const envelope = { id, type: pinged.type, occurredAt: new Date().toISOString(), data: { value: 5 } };
    await bus.publish(subjects.event(bus.namespace, pinged.type), envelope, { msgId: id });
    // Applied, and its own message (105) sent and applied in turn.
    await eventually(async () => applied.length === 2);
    // The same message again (another stream id): its handler runs and refuses, all of it rolled back.
    await bus.publish(subjects.event(bus.namespace, pinged.type), envelope, { msgId: randomUUID() });
    await eventually(async () => calls >= 3);
    // A retry of the refusal would come from the server's redelivery timer, which no event stands for: waited out.
    await new Promise((r) => setTimeout(r, 400));
    expect(applied.sort((a, b) => a - b)).toEqual([5, 105]);
    expect(await db.selectFrom('effects').select('value').where('messageId', '=', id).execute()).toEqual([{ value: 5 }]);
    expect(await db.selectFrom('processedMessages').select('consumer').where('messageId', '=', id).execute()).toEqual([{ consumer: durable }]);
    // One message sent by the first application only, and no error logged as a rejection.
    expect(sending.published.filter((e) => (e as { data: { value: number } }).data.value === 105)).toHaveLength(1);
    expect(calls).toBe(3);
    expect(errors).toEqual([]);
  });
});

describe('a step’s write at commit', () => {
  /** A running relay (a tracked transaction needs one); what it published. */
  const started = () => {
    const sending = recording();
    const relay = new OutboxRelay(db, sending.bus, logger, 3_600_000);
    relay.start();
    stoppables.push(relay);
    return sending.published as Array<{ id: string }>;
  };
  /** The messages were written once: one handed off, and nothing else in the table. */
  const writtenOnce = async (published: Array<{ id: string }>) => {
    await eventually(async () => published.length === 1);
    expect(await db.selectFrom('outbox').select('id').where('id', '!=', published[0]!.id).execute()).toEqual([]);
  };
  /** Sets `value` of the effect row `messageId` only if it still has `expected`: an optimistic step's write. */
  const setIf = (trx: Kysely<Db>, messageId: string, expected: number, value: number) =>
    trx.updateTable('effects').set({ value }).where('messageId', '=', messageId).where('value', '=', expected).returning(['messageId', 'value']);

  it('makes the write in the statement with the messages, the timers and the record, before the commit', async () => {
    const published = started();
    await db.insertInto('effects').values({ messageId: 'a', value: 1 }).execute();
    const written: unknown[] = [];
    const atCommit = await inTransaction(db, async (trx, work) => {
      const deferred = work.writeAtCommit<{ messageId: string; value: number }>({ parts: [['set', setIf(trx, 'a', 1, 2)]], guard: 'set', written: (rows) => written.push(...rows) });
      work.enqueue(pinged, { value: 2 });
      work.schedule({ kind: 'test', key: 'a', fireAt: new Date(Date.now() + 60_000) });
      // Nothing written yet: the write waits for the statement before the commit.
      expect(await trx.selectFrom('effects').select('value').where('messageId', '=', 'a').executeTakeFirstOrThrow()).toEqual({ value: 1 });
      return deferred;
    });
    expect(atCommit).toBe(true);
    expect(written).toEqual([expect.objectContaining({ messageId: 'a', value: 2 })]);
    expect(await db.selectFrom('effects').select('value').where('messageId', '=', 'a').executeTakeFirstOrThrow()).toEqual({ value: 2 });
    await writtenOnce(published);
    expect(await db.selectFrom('timers').select('key').execute()).toEqual([{ key: 'a' }]);
  });

  const B_MESSAGE = randomUUID();
  const C_MESSAGE = randomUUID();

  it('undoes everything when the write finds nothing to write, and runs the step again with its writes made at once', async () => {
    const published = started();
    await db.insertInto('effects').values({ messageId: 'b', value: 7 }).execute();
    const attempts: boolean[] = [];
    const value = await inTransaction(db, async (trx, work) => {
      work.consumed('writer', B_MESSAGE);
      work.enqueue(pinged, { value: 3 });
      work.schedule({ kind: 'test', key: 'b', fireAt: new Date(Date.now() + 60_000) });
      // The step remembered 1, but the row is at 7 now: the first attempt writes nothing.
      const deferred = work.writeAtCommit({ parts: [['set', setIf(trx, 'b', 1, 2)]], guard: 'set' });
      attempts.push(deferred);
      if (deferred) return 'at commit';
      const now = await trx.selectFrom('effects').select('value').where('messageId', '=', 'b').forUpdate().executeTakeFirstOrThrow();
      await setIf(trx, 'b', now.value, now.value + 1).execute();
      return 'again';
    });
    expect({ attempts, value }).toEqual({ attempts: [true, false], value: 'again' });
    expect(await db.selectFrom('effects').select('value').where('messageId', '=', 'b').executeTakeFirstOrThrow()).toEqual({ value: 8 });
    // Once each, from the second attempt.
    await writtenOnce(published);
    expect(await db.selectFrom('timers').select('key').execute()).toEqual([{ key: 'b' }]);
    expect(await db.selectFrom('processedMessages').select('messageId').execute()).toEqual([{ messageId: B_MESSAGE }]);
  });

  it('still refuses a message applied before, with the write at commit undone', async () => {
    started();
    await db.insertInto('effects').values({ messageId: 'c', value: 1 }).execute();
    await db.insertInto('processedMessages').values({ consumer: 'writer', messageId: C_MESSAGE }).execute();
    await expect(inTransaction(db, async (trx, work) => {
      work.writeAtCommit({ parts: [['set', setIf(trx, 'c', 1, 2)]], guard: 'set' });
      work.consumed('writer', C_MESSAGE);
    })).rejects.toBeInstanceOf(AlreadyApplied);
    expect(await db.selectFrom('effects').select('value').where('messageId', '=', 'c').executeTakeFirstOrThrow()).toEqual({ value: 1 });
  });
});

describe('idempotent consumer', () => {
  const publish = (id: string, data: unknown) => bus.publish(subjects.event(bus.namespace, pinged.type), { id, type: pinged.type, occurredAt: new Date().toISOString(), data }, { msgId: id });

  it('applies a message once even when it is delivered twice under different stream ids', async () => {
    stoppables.push(
      // One at a time, in stream order: once a later message is applied, the repeat has been handled.
      await consumeIdempotently({ bus, db, logger, concurrency: 1, durable: `eff-${randomUUID().slice(0, 8)}`, def: pinged, handle: async (trx, data, work, env) => void (await trx.insertInto('effects').values({ messageId: env.id, value: data.value }).execute()) }),
    );
    const id = randomUUID();
    await publish(id, { value: 7 });
    // Outside the JetStream dedupe window (another msg id), the consumer's processed id still catches it.
    await bus.publish(subjects.event(bus.namespace, pinged.type), { id, type: pinged.type, occurredAt: new Date().toISOString(), data: { value: 7 } }, { msgId: randomUUID() });
    const later = randomUUID();
    await publish(later, { value: 8 });
    await eventually(async () => (await db.selectFrom('processedMessages').selectAll().where('messageId', '=', later).execute()).length === 1);
    expect(await db.selectFrom('effects').selectAll().orderBy('value').execute()).toEqual([{ messageId: id, value: 7 }, { messageId: later, value: 8 }]);
  });

  it('terminates a message that breaks its contract instead of retrying it', async () => {
    let calls = 0;
    stoppables.push(await consumeIdempotently({ bus, db, logger, durable: `bad-${randomUUID().slice(0, 8)}`, def: pinged, handle: async () => void calls++ }));
    await publish(randomUUID(), { value: 'not a number' });
    await bus.publish(subjects.event(bus.namespace, pinged.type), { not: 'an envelope' }, { msgId: randomUUID() });
    const good = randomUUID();
    await publish(good, { value: 1 });
    await eventually(async () => calls === 1);
    // A redelivery of the broken messages would come from the server's timer, which no event stands for: waited out.
    await new Promise((r) => setTimeout(r, 400));
    expect(calls).toBe(1);
  });

  it('retries a failing handler and leaves no partial effect; an AppError is final', async () => {
    let attempts = 0;
    stoppables.push(
      await consumeIdempotently({
        bus, db, logger,
        durable: `retry-${randomUUID().slice(0, 8)}`,
        def: pinged,
        handle: async (trx, data, work, env) => {
          attempts++;
          await trx.insertInto('effects').values({ messageId: env.id, value: data.value }).execute();
          if (data.value === 13) throw new AppError('INVALID_STATE', 'never valid');
          if (attempts < 3) throw new Error('transient');
        },
      }),
    );
    const id = randomUUID();
    await publish(id, { value: 1 });
    await eventually(async () => (await db.selectFrom('effects').selectAll().execute()).length === 1, 10_000);
    expect(attempts).toBe(3);
    const before = attempts;
    await publish(randomUUID(), { value: 13 });
    await eventually(async () => attempts === before + 1);
    // A retry of the final refusal would come from the server's redelivery timer, which no event stands for: waited out.
    await new Promise((r) => setTimeout(r, 800));
    expect(attempts).toBe(before + 1);
    expect(await db.selectFrom('effects').select('value').execute()).toEqual([{ value: 1 }]);
  });
});

describe('durable timers', () => {
  it('fires a due timer exactly once across two runners, in the transaction that removes it', async () => {
    const fired: string[] = [];
    const handler = async (trx: unknown, t: { key: string }) => {
      fired.push(t.key);
      await (trx as Kysely<Db>).insertInto('effects').values({ messageId: t.key, value: 1 }).execute();
    };
    await inTransaction(db, async (trx, work) => {
      for (let i = 0; i < 20; i++) work.schedule({ kind: 'test', key: `k${i}`, fireAt: new Date(Date.now() - 1000) });
      work.schedule({ kind: 'test', key: 'later', fireAt: new Date(Date.now() + 3_600_000) });
    });
    const a = new TimerRunner(db, { test: handler }, logger);
    const b = new TimerRunner(db, { test: handler }, logger);
    const [fa, fb] = await Promise.all([a.fireDue(), b.fireDue()]);
    expect(fa + fb).toBe(20);
    expect(new Set(fired).size).toBe(20);
    expect(fired).not.toContain('later');
    // Fired, so gone: only the timer not yet due is left.
    expect(await db.selectFrom('timers').select('key').execute()).toEqual([{ key: 'later' }]);
  });

  it('clears the timers an earlier version kept once fired, without firing them', async () => {
    await inTransaction(db, async (trx, work) => {
      work.schedule({ kind: 'test', key: 'kept', fireAt: new Date(Date.now() - 60_000) });
      work.schedule({ kind: 'test', key: 'due', fireAt: new Date(Date.now() - 1000) });
    });
    await db.updateTable('timers').set({ firedAt: new Date() }).where('key', '=', 'kept').execute();
    const fired: string[] = [];
    expect(await new TimerRunner(db, { test: async (_trx, t) => void fired.push(t.key) }, logger).fireDue()).toBe(1);
    expect(fired).toEqual(['due']);
    expect(await db.selectFrom('timers').select('key').execute()).toEqual([]);
  });

  it('reschedules a failing timer with backoff and records the error; the effect is rolled back', async () => {
    await inTransaction(db, async (_trx, work) => work.schedule({ kind: 'flaky', key: 'x', fireAt: new Date(Date.now() - 1000) }));
    const runner = new TimerRunner(db, {
      flaky: async (trx) => {
        await (trx as unknown as Kysely<Db>).insertInto('effects').values({ messageId: 'x', value: 1 }).execute();
        throw new Error('downstream unavailable');
      },
    }, logger);
    expect(await runner.fireDue()).toBe(0);
    const t = await db.selectFrom('timers').selectAll().where('key', '=', 'x').executeTakeFirstOrThrow();
    expect(t).toMatchObject({ attempts: 1, lastError: 'downstream unavailable', firedAt: null });
    expect(t.fireAt.getTime()).toBeGreaterThan(Date.now());
    expect(await db.selectFrom('effects').selectAll().execute()).toEqual([]);
  });

  it('cancels a pending timer and reschedules by kind and key', async () => {
    await inTransaction(db, async (trx, work) => {
      work.schedule({ kind: 'test', key: 'gone', fireAt: new Date(Date.now() - 1000) });
      work.schedule({ kind: 'test', key: 'moved', fireAt: new Date(Date.now() - 1000) });
      work.cancelTimers('test', 'gone');
      work.schedule({ kind: 'test', key: 'moved', fireAt: new Date(Date.now() + 60_000) });
    });
    const fired: string[] = [];
    const runner = new TimerRunner(db, { test: async (_trx, t) => void fired.push(t.key) }, logger);
    expect(await runner.fireDue()).toBe(0);
    expect(await runner.fireDue(new Date(Date.now() + 120_000))).toBe(1);
    expect(fired).toEqual(['moved']);
  });
});

describe('timers of a tracked transaction', () => {
  const handingRelay = () => {
    const relay = new OutboxRelay(db, bus, logger, 3_600_000);
    relay.start();
    stoppables.push(relay);
  };

  it('writes the timer changes with the messages just before the commit, the last change of each kind and key counting', async () => {
    handingRelay();
    const past = new Date(Date.now() - 1000);
    const later = new Date(Date.now() + 3_600_000);
    await inTransaction(db, async (_trx, work) => work.schedule({ kind: 'test', key: 'old', fireAt: past }));
    await inTransaction(db, async (trx, work) => {
      work.schedule({ kind: 'test', key: 'a', fireAt: later, payload: { n: 1 } });
      work.schedule({ kind: 'test', key: 'b', fireAt: later });
      work.cancelTimers('test', 'b');
      work.cancelTimers(['test', 'other'], 'old');
      work.schedule({ kind: 'test', key: 'old', fireAt: later, payload: { again: true } });
      work.schedule({ kind: 'other', key: 'c', fireAt: later });
      work.cancelTimers(['other'], 'c');
      work.enqueue(pinged, { value: 1 });
      expect(await trx.selectFrom('timers').select('key').where('key', 'in', ['a', 'b', 'c']).execute()).toEqual([]);
    });
    const rows = await db.selectFrom('timers').select(['kind', 'key', 'payload', 'fireAt', 'firedAt']).orderBy('key').execute();
    expect(rows).toEqual([
      { kind: 'test', key: 'a', payload: { n: 1 }, fireAt: later, firedAt: null },
      { kind: 'test', key: 'old', payload: { again: true }, fireAt: later, firedAt: null },
    ]);
  });

  it('cancels through the (kind, key) index, however many entries deleted timers left in the due index', async () => {
    handingRelay();
    // One connection, so that its statistics can be flushed and read back in order.
    const one = await connectServiceDb<Db>({ url: database.url, schema: 'msgtest', migrations, poolSize: 1 });
    try {
      const later = new Date(Date.now() + 3_600_000);
      // Hundreds of timers scheduled and cancelled: dead entries, until a vacuum, in both indexes.
      await inTransaction(one.db, async (trx, work) => {
        for (let i = 0; i < 300; i++) work.schedule({ kind: 'test', key: `dead-${i}`, fireAt: later });
      });
      await one.db.deleteFrom('timers').where('key', 'like', 'dead-%').execute();
      await inTransaction(one.db, async (_trx, work) => work.schedule({ kind: 'test', key: 'target', fireAt: later }));
      const reads = async () => {
        await sql`select pg_stat_force_next_flush()`.execute(one.db);
        const { rows } = await sql<{ name: string; n: string }>`select indexrelname as name, idx_tup_read as n from pg_stat_user_indexes where schemaname = 'msgtest' and relname = 'timers'`.execute(one.db);
        return Object.fromEntries(rows.map((r) => [r.name, Number(r.n)]));
      };
      const before = await reads();
      await inTransaction(one.db, async (trx, work) => {
        work.cancelTimers(['test', 'other'], 'target');
        work.enqueue(pinged, { value: 1 });
      });
      await inTransaction(one.db, async (_trx, work) => work.cancelTimers('test', 'dead-1'));
      const after = await reads();
      expect(after['timers_due']! - before['timers_due']!).toBe(0);
      expect(after['timers_kind_key']! - before['timers_kind_key']!).toBeLessThan(10);
      expect(await one.db.selectFrom('timers').select('key').where('key', '=', 'target').execute()).toEqual([]);
    } finally {
      await one.close();
    }
  });

  it('rolls timer changes back with the transaction, and lets a timer’s handler schedule its own kind and key again', async () => {
    handingRelay();
    await inTransaction(db, async (trx, work) => {
      work.schedule({ kind: 'test', key: 'never', fireAt: new Date() });
      throw new Error('rolled back');
    }).catch(() => undefined);
    expect(await db.selectFrom('timers').select('key').execute()).toEqual([]);
    await inTransaction(db, async (_trx, work) => work.schedule({ kind: 'again', key: 'k', fireAt: new Date(Date.now() - 1000) }));
    const next = new Date(Date.now() + 3_600_000);
    const runner = new TimerRunner(db, { again: async (_trx, t, work) => work.schedule({ kind: 'again', key: t.key, fireAt: next }) }, logger);
    expect(await runner.fireDue()).toBe(1);
    expect(await db.selectFrom('timers').select(['fireAt', 'firedAt']).execute()).toEqual([{ fireAt: next, firedAt: null }]);
  });
});

describe('per-service schema and role', () => {
  it('runs as its own role that cannot read another service’s schema', async () => {
    const other = await connectServiceDb<Db>({ url: database.url, schema: 'othersvc', migrations });
    try {
      await expect(sql`select count(*) from msgtest.effects`.execute(other.db)).rejects.toThrow(/permission denied/);
      expect(other.role).toBe('aex_othersvc');
    } finally {
      await other.close();
    }
  });

  it('runs migrations once: connecting again applies nothing new', async () => {
    const again = await connectServiceDb<Db>({ url: database.url, schema: 'msgtest', migrations });
    try {
      const rows = await sql<{ name: string }>`select name from msgtest.kysely_migration`.execute(again.db);
      expect(rows.rows.map((r) => r.name)).toEqual(['0001']);
    } finally {
      await again.close();
    }
  });
});
