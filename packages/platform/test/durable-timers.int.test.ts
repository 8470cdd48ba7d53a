import { sql, type Transaction } from 'kysely';
import { describe, expect, it } from 'vitest';
import { connectServiceDb, TimerRunner, Transactor } from '../src/index.js';
import { eventually, TestClock, testLogger } from '../src/testing/index.js';
import { handOffs, messagingTest, migrations, pinged, SCHEMA, type Db } from './messaging-kit.js';

// Durable timers on real Postgres: set and dropped by a unit of work with its messages, fired by
// runners side by side, each in the transaction that removes it.

const t = messagingTest({ bus: false });
const logger = testLogger();
/** The service's transactions, with no relay. */
const tx = () => new Transactor(t.db, null);

describe('durable timers', () => {
  it('fires a due timer exactly once across two runners, in the transaction that removes it', async () => {
    const fired: string[] = [];
    const handler = async (trx: Transaction<Db>, timer: { key: string }) => {
      fired.push(timer.key);
      await trx.insertInto('effects').values({ messageId: timer.key, value: 1 }).execute();
    };
    await tx().run(async (_trx, work) => {
      for (let i = 0; i < 20; i++) work.schedule({ kind: 'test', key: `k${i}`, fireAt: new Date(Date.now() - 1000) });
      work.schedule({ kind: 'test', key: 'later', fireAt: new Date(Date.now() + 3_600_000) });
    });
    const a = new TimerRunner(tx(), { test: handler }, logger);
    const b = new TimerRunner(tx(), { test: handler }, logger);
    const [fa, fb] = await Promise.all([a.fireDue(), b.fireDue()]);
    expect(fa + fb).toBe(20);
    expect(new Set(fired).size).toBe(20);
    expect(fired).not.toContain('later');
    // Fired, so gone: only the timer not yet due is left.
    expect(await t.db.selectFrom('timers').select('key').execute()).toEqual([{ key: 'later' }]);
  });

  it('clears the timers an earlier version kept once fired, without firing them', async () => {
    await tx().run(async (_trx, work) => {
      work.schedule({ kind: 'test', key: 'kept', fireAt: new Date(Date.now() - 60_000) });
      work.schedule({ kind: 'test', key: 'due', fireAt: new Date(Date.now() - 1000) });
    });
    await t.db.updateTable('timers').set({ firedAt: new Date() }).where('key', '=', 'kept').execute();
    const fired: string[] = [];
    expect(await new TimerRunner(tx(), { test: async (_trx, timer) => void fired.push(timer.key) }, logger).fireDue()).toBe(1);
    expect(fired).toEqual(['due']);
    expect(await t.db.selectFrom('timers').select('key').execute()).toEqual([]);
  });

  it('reschedules a failing timer with backoff and records the error; the effect is rolled back', async () => {
    await tx().run(async (_trx, work) => work.schedule({ kind: 'flaky', key: 'x', fireAt: new Date(Date.now() - 1000) }));
    const runner = new TimerRunner(tx(), {
      flaky: async (trx) => {
        await trx.insertInto('effects').values({ messageId: 'x', value: 1 }).execute();
        throw new Error('downstream unavailable');
      },
    }, logger);
    expect(await runner.fireDue()).toBe(0);
    const row = await t.db.selectFrom('timers').selectAll().where('key', '=', 'x').executeTakeFirstOrThrow();
    expect(row).toMatchObject({ attempts: 1, lastError: 'downstream unavailable', firedAt: null });
    expect(row.fireAt.getTime()).toBeGreaterThan(Date.now());
    expect(await t.db.selectFrom('effects').selectAll().execute()).toEqual([]);
  });

  it('cancels a pending timer and reschedules by kind and key', async () => {
    await tx().run(async (_trx, work) => {
      work.schedule({ kind: 'test', key: 'gone', fireAt: new Date(Date.now() - 1000) });
      work.schedule({ kind: 'test', key: 'moved', fireAt: new Date(Date.now() - 1000) });
      work.cancelTimers('test', 'gone');
      work.schedule({ kind: 'test', key: 'moved', fireAt: new Date(Date.now() + 60_000) });
    });
    const fired: string[] = [];
    const runner = new TimerRunner(tx(), { test: async (_trx, timer) => void fired.push(timer.key) }, logger);
    expect(await runner.fireDue()).toBe(0);
    expect(await runner.fireDue(new Date(Date.now() + 120_000))).toBe(1);
    expect(fired).toEqual(['moved']);
  });
});

describe('timers set by a unit of work', () => {
  it('writes the timer changes with the messages just before the commit, the last change of each kind and key counting', async () => {
    const past = new Date(Date.now() - 1000);
    const later = new Date(Date.now() + 3_600_000);
    await tx().run(async (_trx, work) => work.schedule({ kind: 'test', key: 'old', fireAt: past }));
    await tx().run(async (trx, work) => {
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
    const rows = await t.db.selectFrom('timers').select(['kind', 'key', 'payload', 'fireAt', 'firedAt']).orderBy('key').execute();
    expect(rows).toEqual([
      { kind: 'test', key: 'a', payload: { n: 1 }, fireAt: later, firedAt: null },
      { kind: 'test', key: 'old', payload: { again: true }, fireAt: later, firedAt: null },
    ]);
  });

  it('cancels through the (kind, key) index, however many entries deleted timers left in the due index', async () => {
    // One connection, so that its statistics can be flushed and read back in order.
    const one = await connectServiceDb<Db>({ url: t.database.url, schema: SCHEMA, migrations, poolSize: 1 });
    const oneTx = new Transactor(one.db, null);
    try {
      const later = new Date(Date.now() + 3_600_000);
      // Hundreds of timers scheduled and cancelled: dead entries, until a vacuum, in both indexes.
      await oneTx.run(async (_trx, work) => {
        for (let i = 0; i < 300; i++) work.schedule({ kind: 'test', key: `dead-${i}`, fireAt: later });
      });
      await one.db.deleteFrom('timers').where('key', 'like', 'dead-%').execute();
      await oneTx.run(async (_trx, work) => work.schedule({ kind: 'test', key: 'target', fireAt: later }));
      const reads = async () => {
        await sql`select pg_stat_force_next_flush()`.execute(one.db);
        const { rows } = await sql<{ name: string; n: string }>`select indexrelname as name, idx_tup_read as n from pg_stat_user_indexes where schemaname = ${SCHEMA} and relname = 'timers'`.execute(one.db);
        return Object.fromEntries(rows.map((r) => [r.name, Number(r.n)]));
      };
      const before = await reads();
      await oneTx.run(async (_trx, work) => {
        work.cancelTimers(['test', 'other'], 'target');
        work.enqueue(pinged, { value: 1 });
      });
      await oneTx.run(async (_trx, work) => work.cancelTimers('test', 'dead-1'));
      const after = await reads();
      expect(after['timers_due']! - before['timers_due']!).toBe(0);
      expect(after['timers_kind_key']! - before['timers_kind_key']!).toBeLessThan(10);
      expect(await one.db.selectFrom('timers').select('key').where('key', '=', 'target').execute()).toEqual([]);
    } finally {
      await one.close();
    }
  });

  it('rolls timer changes back with the transaction, and lets a timer’s handler schedule its own kind and key again', async () => {
    await tx().run(async (_trx, work) => {
      work.schedule({ kind: 'test', key: 'never', fireAt: new Date() });
      throw new Error('rolled back');
    }).catch(() => undefined);
    expect(await t.db.selectFrom('timers').select('key').execute()).toEqual([]);
    await tx().run(async (_trx, work) => work.schedule({ kind: 'again', key: 'k', fireAt: new Date(Date.now() - 1000) }));
    const next = new Date(Date.now() + 3_600_000);
    const runner = new TimerRunner(tx(), { again: async (_trx, timer, work) => work.schedule({ kind: 'again', key: timer.key, fireAt: next }) }, logger);
    expect(await runner.fireDue()).toBe(1);
    expect(await t.db.selectFrom('timers').select(['fireAt', 'firedAt']).execute()).toEqual([{ fireAt: next, firedAt: null }]);
  });
});

describe('a timer’s transaction', () => {
  it('hands the messages its handler enqueues to the relay once the timer’s removal commits, and nothing of a handler that failed', async () => {
    const relay = handOffs();
    await tx().run(async (_trx, work) => {
      work.schedule({ kind: 'announce', key: 'ok', fireAt: new Date(Date.now() - 1000) });
      work.schedule({ kind: 'announce', key: 'fails', fireAt: new Date(Date.now() - 1000) });
    });
    const committed: string[] = [];
    const runner = new TimerRunner(new Transactor(t.db, relay), {
      announce: async (_trx, timer, work) => {
        work.enqueue(pinged, { value: timer.key === 'ok' ? 1 : 2 });
        work.afterCommit(() => committed.push(timer.key));
        if (timer.key === 'fails') throw new Error('downstream unavailable');
      },
    }, logger);
    expect(await runner.fireDue()).toBe(1);
    expect(relay.rows.map((r) => r.envelope.data)).toEqual([{ value: 1 }]);
    expect(committed).toEqual(['ok']);
    expect(await t.db.selectFrom('timers').select('key').execute()).toEqual([{ key: 'fails' }]);
  });

  it('fires by the service’s clock once started: a timer comes due when the clock is moved past it', async () => {
    const clock = new TestClock();
    const fired: string[] = [];
    await tx().run(async (_trx, work) => work.schedule({ kind: 'test', key: 'in-an-hour', fireAt: new Date(clock.now().getTime() + 3_600_000) }));
    const runner = new TimerRunner(tx(), { test: async (_trx, timer) => void fired.push(timer.key) }, logger, { pollMs: 20, now: clock.now });
    runner.start();
    t.stoppables.push(runner);
    expect(await runner.fireDue(clock.now())).toBe(0);
    clock.advance(3_600_000);
    await eventually(async () => fired.length === 1);
    expect(fired).toEqual(['in-an-hour']);
  });
});
