import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { HAND_OFF_LEASE_MS, OutboxRelay, Transactor, type Bus } from '../src/index.js';
import { eventually, testLogger } from '../src/testing/index.js';
import { messagingTest, pinged } from './messaging-kit.js';

// The transactional outbox on real Postgres and JetStream: the relay's drains (the safety net) and
// its hand-off of a transaction's rows right after the commit (the usual way).

const t = messagingTest({ bus: true });
const logger = testLogger();
/** Transactions whose rows no relay takes at their commit: they wait for a drain. */
const forDrain = () => new Transactor(t.db, null);

describe('outbox relay', () => {
  it('publishes only what committed, with Nats-Msg-Id = the message id', async () => {
    const got = await t.collect(`relay-${randomUUID().slice(0, 8)}`);
    const { id: committed } = await forDrain().run(async (_trx, work) => work.enqueue(pinged, { value: 1 }));
    await forDrain().run(async (_trx, work) => {
      work.enqueue(pinged, { value: 2 });
      throw new Error('rolled back');
    }).catch(() => undefined);
    const relay = new OutboxRelay(t.db, t.bus, logger);
    expect(await relay.drain()).toBe(1);
    await eventually(async () => got.length === 1);
    expect(got[0]!.data).toMatchObject({ id: committed, type: 'test.pinged', data: { value: 1 } });
    expect(got[0]!.headers['Nats-Msg-Id'] ?? got[0]!.headers['nats-msg-id']).toBe(committed);
    // Published, so removed: the table holds only what is still on its way.
    expect(await t.outboxRow(committed)).toBeUndefined();
  });

  it('re-publishing after a crash between publish and removal is dropped as a duplicate', async () => {
    const got = await t.collect(`dup-${randomUUID().slice(0, 8)}`);
    const { id } = await forDrain().run(async (_trx, work) => work.enqueue(pinged, { value: 3 }));
    const { seq: _seq, ...written } = (await t.outboxRow(id))!;
    const relay = new OutboxRelay(t.db, t.bus, logger);
    await relay.drain();
    // Simulate the crash: the row is still in the database, unpublished, and its claim has lapsed.
    await t.db.insertInto('outbox').values({ ...written, headers: JSON.stringify(written.headers) as never, payload: JSON.stringify(written.payload), claimedUntil: new Date(Date.now() - 1) }).execute();
    expect(await relay.drain()).toBe(1);
    // A later message, published after the repeat: the repeat, had the stream kept it, comes before it.
    const later = await forDrain().run(async (_trx, work) => work.enqueue(pinged, { value: 30 }));
    await relay.drain();
    await eventually(async () => got.some((m) => (m.data as { id: string }).id === later.id));
    expect(got.map((m) => (m.data as { id: string }).id)).toEqual([id, later.id]);
  });

  it('publishes in the order the rows were written, within one transaction too', async () => {
    const got = await t.collect(`order-${randomUUID().slice(0, 8)}`);
    await forDrain().run(async (_trx, work) => {
      for (let i = 0; i < 150; i++) work.enqueue(pinged, { value: i });
    });
    expect(await new OutboxRelay(t.db, t.bus, logger).drain()).toBe(150);
    await eventually(async () => got.length === 150, 10_000);
    expect(got.map((m) => (m.data as { data: { value: number } }).data.value)).toEqual(Array.from({ length: 150 }, (_, i) => i));
  });

  it('leaves a batch claimed by a relay that died to its lease, then publishes it', async () => {
    const got = await t.collect(`lease-${randomUUID().slice(0, 8)}`);
    const { id } = await forDrain().run(async (_trx, work) => work.enqueue(pinged, { value: 4 }));
    // The dead relay's claim: taken, never published nor marked.
    await t.db.updateTable('outbox').set({ claimedUntil: new Date(Date.now() + 60_000) }).where('id', '=', id).execute();
    const relay = new OutboxRelay(t.db, t.bus, logger);
    expect(await relay.drain()).toBe(0);
    // The lease runs out (the database's clock decides: moved by moving the lease into the past).
    await t.db.updateTable('outbox').set({ claimedUntil: new Date(Date.now() - 1) }).where('id', '=', id).execute();
    expect(await relay.drain()).toBe(1);
    await eventually(async () => got.length === 1);
    expect(await t.outboxRow(id)).toBeUndefined();
  });

  it('holds no lock on the outbox while it publishes: the rows can be read and claimed around it', async () => {
    await forDrain().run(async (_trx, work) => work.enqueue(pinged, { value: 5 }));
    let locked: boolean | null = null;
    const slow: Bus = Object.create(t.bus, {
      publish: {
        value: async (...args: Parameters<Bus['publish']>) => {
          // While JetStream is being called, another session finds no row locked.
          const r = await sql<{ id: string }>`select id from outbox where published_at is null for update nowait`.execute(t.db).then(
            (rows) => (rows.rows.length === 1 ? false : null),
            (err: { code?: string }) => (err.code === '55P03' ? true : null), // lock_not_available
          );
          locked = r;
          return t.bus.publish(...args);
        },
      },
    });
    expect(await new OutboxRelay(t.db, slow, logger).drain()).toBe(1);
    expect(locked).toBe(false);
  });

  it('gives back what JetStream refused, so the next drain sends it at once', async () => {
    const got = await t.collect(`refused-${randomUUID().slice(0, 8)}`);
    const { id } = await forDrain().run(async (_trx, work) => work.enqueue(pinged, { value: 6 }));
    const failing: Bus = Object.create(t.bus, { publish: { value: async () => { throw new Error('jetstream down'); } } });
    await expect(new OutboxRelay(t.db, failing, logger).drain()).rejects.toThrow('jetstream down');
    expect(await t.db.selectFrom('outbox').select(['publishedAt', 'claimedUntil']).where('id', '=', id).executeTakeFirstOrThrow()).toEqual({ publishedAt: null, claimedUntil: null });
    expect(await new OutboxRelay(t.db, t.bus, logger).drain()).toBe(1);
    await expect.poll(() => got.map((m) => (m.data as { id: string }).id), { timeout: 5_000 }).toEqual([id]);
  });

  it('lets two relays drain side by side without publishing anything twice (SKIP LOCKED)', async () => {
    const got = await t.collect(`pair-${randomUUID().slice(0, 8)}`);
    await forDrain().run(async (_trx, work) => {
      for (let i = 0; i < 250; i++) work.enqueue(pinged, { value: i });
    });
    const [a, b] = [new OutboxRelay(t.db, t.bus, logger), new OutboxRelay(t.db, t.bus, logger)];
    const [na, nb] = await Promise.all([a.drain(), b.drain()]);
    expect(na + nb).toBe(250);
    await eventually(async () => got.length === 250, 10_000);
    expect(new Set(got.map((m) => (m.data as { id: string }).id)).size).toBe(250);
  });

  it('clears rows an earlier version marked published instead of removing them, and publishes none of them', async () => {
    const got = await t.collect(`legacy-${randomUUID().slice(0, 8)}`);
    const { id: marked } = await forDrain().run(async (_trx, work) => work.enqueue(pinged, { value: 7 }));
    await t.db.updateTable('outbox').set({ publishedAt: new Date() }).where('id', '=', marked).execute();
    const { id: waiting } = await forDrain().run(async (_trx, work) => work.enqueue(pinged, { value: 8 }));
    expect(await new OutboxRelay(t.db, t.bus, logger).drain()).toBe(1);
    await eventually(async () => got.length === 1);
    expect(got.map((m) => (m.data as { id: string }).id)).toEqual([waiting]);
    expect(await t.db.selectFrom('outbox').select('id').execute()).toEqual([]);
  });

  it('runs by itself once started and publishes what a unit of work hands it', async () => {
    const got = await t.collect(`auto-${randomUUID().slice(0, 8)}`);
    const relay = new OutboxRelay(t.db, t.bus, logger, 50);
    relay.start();
    t.stoppables.push(relay);
    const { id } = await new Transactor(t.db, relay).run(async (_trx, work) => work.enqueue(pinged, { value: 9 }));
    await expect.poll(() => got.map((m) => (m.data as { id: string }).id), { timeout: 5_000 }).toEqual([id]);
  });
});

describe('outbox hand-off', () => {
  /** A relay whose drain only runs when asked (its poll an hour away). */
  const handingRelay = (over: Bus = t.bus) => {
    const relay = new OutboxRelay(t.db, over, logger, 3_600_000);
    relay.start();
    t.stoppables.push(relay);
    return relay;
  };
  const rowOf = async (id: string) => (await t.outboxRow(id))!;

  it('publishes a transaction’s rows right after its commit, in order, and removes them, with no drain', async () => {
    const got = await t.collect(`handoff-${randomUUID().slice(0, 8)}`);
    const relay = handingRelay();
    const ids = await new Transactor(t.db, relay).run(async (trx, work) => {
      const sent = [];
      for (let i = 0; i < 5; i++) sent.push((work.enqueue(pinged, { value: i })).id);
      // Written only by the flush before the commit: nothing of it is in the table yet.
      expect(await trx.selectFrom('outbox').select('id').where('id', 'in', sent).execute()).toEqual([]);
      return sent;
    });
    await eventually(async () => got.length === 5);
    expect(got.map((m) => (m.data as { id: string }).id)).toEqual(ids);
    await eventually(async () => (await t.outboxRow(ids[4]!)) === undefined);
    // Nothing was left for a drain.
    expect(await t.db.selectFrom('outbox').select('id').execute()).toEqual([]);
    expect(await relay.drain()).toBe(0);
  });

  it('writes the rows claimed for the hand-off, so a drain leaves them until their lease has passed', async () => {
    const relay = handingRelay();
    let id = '';
    await new Transactor(t.db, relay).run(async (_trx, work) => {
      id = (work.enqueue(pinged, { value: 1 })).id;
      // The relay stops before the commit (a crash between commit and publish, as far as the row goes).
      await relay.stop();
    });
    const row = await rowOf(id);
    expect(row.publishedAt).toBeNull();
    expect(row.claimedUntil!.getTime() - Date.now()).toBeGreaterThan(HAND_OFF_LEASE_MS - 2_000);
    const got = await t.collect(`lapsed-${randomUUID().slice(0, 8)}`);
    const other = new OutboxRelay(t.db, t.bus, logger);
    expect(await other.drain()).toBe(0);
    await t.db.updateTable('outbox').set({ claimedUntil: new Date(Date.now() - 1) }).where('id', '=', id).execute();
    expect(await other.drain()).toBe(1);
    await expect.poll(() => got.map((m) => (m.data as { id: string }).id), { timeout: 5_000 }).toEqual([id]);
  });

  it('publishes nothing of a transaction that rolled back', async () => {
    const got = await t.collect(`handoff-rb-${randomUUID().slice(0, 8)}`);
    const tx = new Transactor(t.db, handingRelay());
    await tx.run(async (_trx, work) => {
      work.enqueue(pinged, { value: 1 });
      throw new Error('rolled back');
    }).catch(() => undefined);
    const { id } = await tx.run(async (_trx, work) => work.enqueue(pinged, { value: 2 }));
    const later = await tx.run(async (_trx, work) => work.enqueue(pinged, { value: 3 }));
    await eventually(async () => got.some((m) => (m.data as { id: string }).id === later.id));
    expect(got.map((m) => (m.data as { id: string }).id)).toEqual([id, later.id]);
    // The rolled-back row was never written: the table holds the committed ones or, once published, nothing.
    expect(await t.db.selectFrom('outbox').select('id').where('id', 'not in', [id, later.id]).execute()).toEqual([]);
  });

  it('gives rows JetStream refused back to the drain at once', async () => {
    const got = await t.collect(`handoff-refused-${randomUUID().slice(0, 8)}`);
    let refuse = true;
    const flaky: Bus = Object.create(t.bus, {
      publish: { value: async (...args: Parameters<Bus['publish']>) => (refuse ? Promise.reject(new Error('jetstream down')) : t.bus.publish(...args)) },
    });
    const relay = handingRelay(flaky);
    const { id } = await new Transactor(t.db, relay).run(async (_trx, work) => work.enqueue(pinged, { value: 3 }));
    await eventually(async () => (await rowOf(id)).claimedUntil === null);
    refuse = false;
    // The drain the refusal asked for may have run while JetStream still refused: one more is enough.
    await relay.drain();
    await expect.poll(() => got.map((m) => (m.data as { id: string }).id), { timeout: 5_000 }).toEqual([id]);
    await expect.poll(() => t.outboxRow(id), { timeout: 5_000 }).toBeUndefined();
  });
});
