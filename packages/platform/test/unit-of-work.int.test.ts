import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlreadyApplied, executeWrite, Transactor, type GuardedWrite } from '../src/index.js';
import { eventually } from '../src/testing/index.js';
import { countedDb, type CountedDb } from './counted-db.js';
import { handOffs, messagingTest, pinged, SCHEMA, type Db } from './messaging-kit.js';

// A transaction's unit of work on real Postgres: what it keeps (messages, timers, the consumed
// message's record, a step's guarded write) is written by one statement sent with the COMMIT, handed
// to the relay after it, and undone with it. The relay is a stand-in that keeps what it is handed.

const t = messagingTest({ bus: false });
let counted: CountedDb<Db>;
beforeAll(async () => {
  counted = await countedDb<Db>({ url: t.database.url, schema: SCHEMA, role: t.service.role });
});
afterAll(() => counted?.close());

const valueOf = async (messageId: string) => (await t.db.selectFrom('effects').select('value').where('messageId', '=', messageId).executeTakeFirst())?.value;
const outbox = () => t.db.selectFrom('outbox').select(['id', 'claimedUntil']).execute();
const timerKeys = async () => (await t.db.selectFrom('timers').select('key').orderBy('key').execute()).map((r) => r.key);
const records = async () => (await t.db.selectFrom('processedMessages').select('messageId').execute()).map((r) => r.messageId);
/** Sets `value` of the effect row `messageId` only if it still has `expected`: an optimistic step's write. */
const setIf = (trx: Kysely<Db>, messageId: string, expected: number, value: number) =>
  trx.updateTable('effects').set({ value }).where('messageId', '=', messageId).where('value', '=', expected).returning(['messageId', 'value']);
const guarded = (trx: Kysely<Db>, messageId: string, expected: number, value: number): GuardedWrite<{ messageId: string; value: number }> =>
  ({ parts: [['set', setIf(trx, messageId, expected, value)]], guard: 'set' });

describe('a unit of work', () => {
  it('writes its messages, timers and record only with the commit, then hands the rows to the relay and runs its callbacks', async () => {
    const relay = handOffs();
    const messageId = randomUUID();
    const ran: string[] = [];
    const sent = await new Transactor(t.db, relay).run(async (trx, work) => {
      const envelope = work.enqueue(pinged, { value: 1 });
      work.schedule({ kind: 'test', key: 'a', fireAt: new Date(Date.now() + 60_000) });
      work.consumed('writer', messageId);
      work.afterCommit(() => ran.push('after commit'));
      expect(await trx.selectFrom('outbox').select('id').execute()).toEqual([]);
      expect(await trx.selectFrom('timers').select('key').execute()).toEqual([]);
      expect(ran).toEqual([]);
      return envelope;
    });
    expect(relay.rows.map((r) => r.id)).toEqual([sent.id]);
    expect(ran).toEqual(['after commit']);
    // Claimed for the hand-off: no drain takes them meanwhile.
    expect((await outbox()).map((r) => [r.id, r.claimedUntil !== null])).toEqual([[sent.id, true]]);
    expect(await timerKeys()).toEqual(['a']);
    expect(await records()).toEqual([messageId]);
  });

  it('costs one round trip for all it keeps, BEGIN and COMMIT included', async () => {
    const before = counted.roundTrips();
    await new Transactor(counted.db, null).run(async (_trx, work) => {
      work.enqueueMany(pinged, [{ value: 1 }, { value: 2 }]);
      work.schedule({ kind: 'test', key: 'one', fireAt: new Date(Date.now() + 60_000) });
      work.cancelTimers(['test', 'other'], 'gone');
      work.consumed('writer', randomUUID());
    });
    expect(counted.roundTrips() - before).toBe(1);
    expect((await outbox()).length).toBe(2);
  });

  it('leaves its rows unclaimed for the drains when the relay did not run as the work began', async () => {
    const relay = { ...handOffs(), running: false };
    await new Transactor(t.db, relay).run(async (_trx, work) => void work.enqueue(pinged, { value: 1 }));
    expect(relay.rows).toEqual([]);
    expect((await outbox()).map((r) => r.claimedUntil)).toEqual([null]);
  });

  it('keeps, hands off and runs nothing of a transaction that rolled back', async () => {
    const relay = handOffs();
    const ran: string[] = [];
    await expect(new Transactor(t.db, relay).run(async (_trx, work) => {
      work.enqueue(pinged, { value: 1 });
      work.schedule({ kind: 'test', key: 'never', fireAt: new Date() });
      work.afterCommit(() => ran.push('after commit'));
      throw new Error('rolled back');
    })).rejects.toThrow('rolled back');
    expect({ handed: relay.rows, ran, outbox: await outbox(), timers: await timerKeys() }).toEqual({ handed: [], ran: [], outbox: [], timers: [] });
  });

  it('forgets what it kept when told to discard it (its transaction rolled back to a savepoint)', async () => {
    const relay = handOffs();
    const ran: string[] = [];
    await new Transactor(t.db, relay).run(async (_trx, work) => {
      work.enqueue(pinged, { value: 1 });
      work.schedule({ kind: 'test', key: 'discarded', fireAt: new Date() });
      work.consumed('writer', randomUUID());
      work.afterCommit(() => ran.push('discarded'));
      work.discard();
      work.enqueue(pinged, { value: 2 });
      work.afterCommit(() => ran.push('kept'));
    });
    expect(relay.rows.map((r) => r.envelope.data)).toEqual([{ value: 2 }]);
    expect({ ran, timers: await timerKeys(), records: await records() }).toEqual({ ran: ['kept'], timers: [], records: [] });
  });

  it('refuses a message applied before with AlreadyApplied, everything of its transaction undone', async () => {
    const messageId = randomUUID();
    await t.db.insertInto('processedMessages').values({ consumer: 'writer', messageId }).execute();
    await expect(new Transactor(t.db, null).run(async (trx, work) => {
      await trx.insertInto('effects').values({ messageId: 'undone', value: 1 }).execute();
      work.enqueue(pinged, { value: 1 });
      work.consumed('writer', messageId);
    })).rejects.toBeInstanceOf(AlreadyApplied);
    expect({ effect: await valueOf('undone'), outbox: await outbox() }).toEqual({ effect: undefined, outbox: [] });
  });
});

describe('a deadlock’s victim', () => {
  /**
   * Two transactions taking the rows `left` and `right` in opposite orders: `victim` takes `left`,
   * then waits for `right`, which the other took, and begins waiting first — so it is the one whose
   * deadlock check runs first and ends it (after Postgres's deadlock_timeout, a second). The other
   * then takes `left` and commits.
   */
  async function deadlock(victim: (take: (trx: Transaction<Db>) => Promise<void>) => Promise<unknown>): Promise<unknown> {
    await t.db.insertInto('effects').values([{ messageId: 'left', value: 0 }, { messageId: 'right', value: 0 }]).execute();
    const bump = (trx: Transaction<Db>, id: string) => trx.updateTable('effects').set({ value: sql`value + 1` }).where('messageId', '=', id).execute();
    let leftTaken!: () => void;
    const tookLeft = new Promise<void>((r) => (leftTaken = r));
    let rightTaken!: () => void;
    const tookRight = new Promise<void>((r) => (rightTaken = r));
    let victimPid = 0;
    const waiting = async () => (await sql<{ n: number }>`select count(*)::int as n from pg_locks where pid = ${victimPid} and not granted`.execute(t.db)).rows[0]!.n === 1;
    const other = t.db.transaction().execute(async (trx) => {
      await tookLeft;
      await bump(trx, 'right');
      rightTaken();
      await eventually(waiting);
      await bump(trx, 'left');
    });
    const outcome = await victim(async (trx) => {
      victimPid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!.pid;
      await bump(trx, 'left');
      leftTaken();
      await tookRight;
      await bump(trx, 'right');
    });
    await other;
    return outcome;
  }

  it('runs its work again in a new transaction, which decides on what the other left', async () => {
    let runs = 0;
    await deadlock((take) => new Transactor(t.db, null).run(async (trx) => {
      runs++;
      await take(trx);
    }));
    expect({ runs, left: await valueOf('left'), right: await valueOf('right') }).toEqual({ runs: 2, left: 2, right: 2 });
  });

  it('is answered { written: false } by runWriting, nothing of it kept', async () => {
    const outcome = await deadlock((take) => new Transactor(t.db, null).runWriting(async (trx, work) => {
      work.enqueue(pinged, { value: 1 });
      await take(trx);
      return { value: 'taken', write: null };
    }));
    expect(outcome).toEqual({ written: false });
    expect({ left: await valueOf('left'), right: await valueOf('right'), outbox: await outbox() }).toEqual({ left: 1, right: 1, outbox: [] });
  });
});

describe('a guarded write at commit', () => {
  it('is made by the statement with the messages, the timers and the record, in the COMMIT’s round trip', async () => {
    const relay = handOffs();
    await t.db.insertInto('effects').values({ messageId: 'a', value: 1 }).execute();
    const messageId = randomUUID();
    const before = counted.roundTrips();
    const result = await new Transactor(counted.db, relay).runWriting(async (trx, work) => {
      work.enqueue(pinged, { value: 2 });
      work.schedule({ kind: 'test', key: 'a', fireAt: new Date(Date.now() + 60_000) });
      work.consumed('writer', messageId);
      return { value: 'decided', write: guarded(trx, 'a', 1, 2) };
    });
    expect(counted.roundTrips() - before).toBe(1);
    expect(result).toEqual({ written: true, value: 'decided', rows: [{ messageId: 'a', value: 2 }] });
    expect({ value: await valueOf('a'), handed: relay.rows.length, timers: await timerKeys(), records: await records() })
      .toEqual({ value: 2, handed: 1, timers: ['a'], records: [messageId] });
  });

  it('writes nothing when its guard writes nothing, with no error from Postgres: no message, timer, record, row or callback, in one round trip', async () => {
    const relay = handOffs();
    await t.db.insertInto('effects').values({ messageId: 'g', value: 7 }).execute();
    await t.db.insertInto('timers').values({ id: randomUUID(), kind: 'test', key: 'kept', fireAt: new Date(Date.now() + 60_000) }).execute();
    const ran: string[] = [];
    const before = { roundTrips: counted.roundTrips(), complaints: counted.complaints.length };
    // Many conflicts, each decided on 1 while the row is at 7: every part of the statement is made on the guard's condition.
    for (let i = 0; i < 20; i++) {
      const result = await new Transactor(counted.db, relay).runWriting(async (trx, work) => {
        work.enqueue(pinged, { value: i });
        work.schedule({ kind: 'test', key: `g${i}`, fireAt: new Date(Date.now() + 60_000) });
        work.cancelTimers('test', 'kept');
        work.consumed('writer', randomUUID());
        work.write((written) => sql`insert into effects (message_id, value) select ${`beside ${i}`}, ${i}::integer where ${written}`);
        work.afterCommit(() => ran.push('after commit'));
        return { value: 'decided', write: guarded(trx, 'g', 1, 2) };
      });
      expect(result).toEqual({ written: false });
    }
    expect({ roundTrips: counted.roundTrips() - before.roundTrips, complaints: counted.complaints.slice(before.complaints) }).toEqual({ roundTrips: 20, complaints: [] });
    const effects = await t.db.selectFrom('effects').select('messageId').execute();
    expect({ effects, handed: relay.rows, ran, outbox: await outbox(), timers: await timerKeys(), records: await records() })
      .toEqual({ effects: [{ messageId: 'g' }], handed: [], ran: [], outbox: [], timers: ['kept'], records: [] });
    // The connection does hear an error when there is one.
    await expect(sql`select 1 / 0`.execute(counted.db)).rejects.toThrow('division by zero');
    expect(counted.complaints.slice(before.complaints)).toEqual(['ERROR: division by zero']);
  });

  it('undoes the whole transaction when its guard writes nothing after it wrote: no message, timer, record or callback', async () => {
    const relay = handOffs();
    await t.db.insertInto('effects').values({ messageId: 'b', value: 7 }).execute();
    const ran: string[] = [];
    const complaints = counted.complaints.length;
    // Decided on 1, but the row is at 7 now. Having written, its last statement goes without the
    // COMMIT, and the transaction is rolled back: no error either.
    const result = await new Transactor(counted.db, relay).runWriting(async (trx, work) => {
      await trx.insertInto('effects').values({ messageId: 'written before', value: 1 }).execute();
      work.enqueue(pinged, { value: 3 });
      work.schedule({ kind: 'test', key: 'b', fireAt: new Date(Date.now() + 60_000) });
      work.consumed('writer', randomUUID());
      work.afterCommit(() => ran.push('after commit'));
      return { value: 'decided', write: guarded(trx, 'b', 1, 2) };
    });
    expect(result).toEqual({ written: false });
    expect({ value: await valueOf('b'), before: await valueOf('written before'), handed: relay.rows, ran, outbox: await outbox(), timers: await timerKeys(), records: await records() })
      .toEqual({ value: 7, before: undefined, handed: [], ran: [], outbox: [], timers: [], records: [] });
    expect(counted.complaints.slice(complaints)).toEqual([]);
  });

  it('refuses a message applied before with AlreadyApplied, its guarded write undone', async () => {
    await t.db.insertInto('effects').values({ messageId: 'c', value: 1 }).execute();
    const messageId = randomUUID();
    await t.db.insertInto('processedMessages').values({ consumer: 'writer', messageId }).execute();
    await expect(new Transactor(t.db, null).runWriting(async (trx, work) => {
      work.consumed('writer', messageId);
      return { value: undefined, write: guarded(trx, 'c', 1, 2) };
    })).rejects.toBeInstanceOf(AlreadyApplied);
    expect(await valueOf('c')).toBe(1);
  });

  it('writes its parts in order, each with its parameters, a later part reading the rows of an earlier one', async () => {
    await t.db.insertInto('effects').values({ messageId: 'd', value: 1 }).execute();
    const result = await new Transactor(t.db, null).runWriting(async (trx, work) => {
      work.enqueue(pinged, { value: 4 });
      const copy = CompiledQuery.raw('insert into effects (message_id, value) select message_id || $1, value * $2 from "set" returning message_id, value', ['-copy', 10]);
      return { value: undefined, write: { parts: [['set', setIf(trx, 'd', 1, 3)], ['copy', copy]], guard: 'copy' } as GuardedWrite<{ messageId: string; value: number }> };
    });
    expect(result).toMatchObject({ written: true, rows: [{ messageId: 'd-copy', value: 30 }] });
    expect({ d: await valueOf('d'), copy: await valueOf('d-copy'), outbox: (await outbox()).length }).toEqual({ d: 3, copy: 30, outbox: 1 });
  });

  it('writes none of its other parts, made on its condition, when the guard part writes nothing', async () => {
    await t.db.insertInto('effects').values({ messageId: 'e', value: 5 }).execute();
    const result = await new Transactor(t.db, null).runWriting(async (trx) => {
      const side = CompiledQuery.raw('insert into effects (message_id, value) select $1, 1 where exists (select 1 from "set") returning message_id', ['side']);
      return { value: undefined, write: { parts: [['set', setIf(trx, 'e', 1, 2)], ['side', side]], guard: 'set' } };
    });
    expect(result).toEqual({ written: false });
    expect({ side: await valueOf('side'), e: await valueOf('e') }).toEqual({ side: undefined, e: 5 });
  });

  it('commits as a plain transaction when the work gives no write', async () => {
    const relay = handOffs();
    const result = await new Transactor(t.db, relay).runWriting(async (_trx, work) => {
      work.enqueue(pinged, { value: 5 });
      return { value: 'no write', write: null };
    });
    expect(result).toEqual({ written: true, value: 'no write', rows: [] });
    expect(relay.rows).toHaveLength(1);
  });
});

describe('a guarded write made at once (executeWrite)', () => {
  it('returns the rows its guard wrote, and none when its condition does not hold, the transaction going on', async () => {
    await t.db.insertInto('effects').values({ messageId: 'f', value: 1 }).execute();
    const outcomes = await new Transactor(t.db, null).run(async (trx) => {
      const stale = await executeWrite(trx, guarded(trx, 'f', 9, 10));
      const current = await executeWrite(trx, guarded(trx, 'f', 1, 2));
      return { stale, current };
    });
    expect(outcomes).toEqual({ stale: [], current: [{ messageId: 'f', value: 2 }] });
    expect(await valueOf('f')).toBe(2);
  });
});
