import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import { describe, expect, it } from 'vitest';
import { TimerRunner } from '../src/index.js';
import { counterOf, counterRunner, existing, keyOf, known, logger, outboxOf, requested, runnerTest, timersOf } from './aggregate-kit.js';
import { counted, REMIND, type Db } from './counter-aggregate.js';

// The aggregate runner on real Postgres, with a toy counter (`counter-aggregate.ts`): a request
// decided on the state the replica remembers is written at commit, guarded by the version it was
// decided on; anything else — a row moved on, a refusal or nothing to do on a remembered state — is
// decided again on the row locked. A keyed request decides inside its key's transaction; a step
// `within` another transaction is that transaction's. The saga's side (consumers, waits) is
// `aggregate-sagas.int.test.ts`'s.

const t = runnerTest({ bus: false });
/** `within` takes a `Transaction<unknown>`, which a service's `Transaction<Db>` is not assignable to. */
const untyped = (trx: Transaction<Db>) => trx as unknown as Transaction<unknown>;

describe('a request decided on the remembered state', () => {
  it('writes guarded at commit in one round trip and one statement, having read nothing', async () => {
    const { runner, aggregate } = counterRunner(t);
    const row = await existing(t);
    runner.known.set(row.id, known(row));
    const [trips, statements] = [t.counted.roundTrips(), t.counted.statements.length];
    const reply = await requested(t, runner, row.id, { kind: 'increment', by: 3 });
    expect(reply).toMatchObject({ ok: true, status: 200, data: { id: row.id, value: 5, round: 'none' } });
    expect({ roundTrips: t.counted.roundTrips() - trips, statements: t.counted.statements.length - statements }).toEqual({ roundTrips: 1, statements: 1 });
    expect(aggregate.log).toEqual(['decide increment on 2 v1: changed']);
    // The step, its message and its timer, all with that one statement.
    expect(await counterOf(t, row.id)).toMatchObject({ value: 5, version: 2 });
    expect(await outboxOf(t)).toEqual([{ type: counted.type, data: { id: row.id, value: 5 } }]);
    expect(await timersOf(t)).toEqual([{ kind: REMIND, key: row.id }]);
    expect(t.relay.rows.map((r) => r.envelope.data)).toEqual([{ id: row.id, value: 5 }]);
  });

  it('remembers the state it wrote after the commit, as the aggregate keeps it', async () => {
    const { runner } = counterRunner(t);
    const row = await existing(t);
    runner.known.set(row.id, known(row));
    await requested(t, runner, row.id, { kind: 'increment', by: 3 });
    expect(runner.known.get(row.id)).toEqual({ id: row.id, value: 5, version: 2, round: 'none' });
  });

  it('decides again on the row locked when the row moved on: the guard writes nothing, its transaction is undone', async () => {
    const { runner, aggregate } = counterRunner(t);
    const row = await existing(t);
    runner.known.set(row.id, known(row));
    // Another replica moved the row on since this one remembered it.
    await t.service.db.updateTable('counters').set({ value: 10, version: 7 }).where('id', '=', row.id).execute();
    const reply = await requested(t, runner, row.id, { kind: 'increment', by: 3 });
    expect(reply).toMatchObject({ status: 200, data: { value: 13 } });
    expect(aggregate.log).toEqual(['decide increment on 2 v1: changed', 'lock', 'decide increment on 10 v7: changed']);
    // Nothing of the first decision (the value 5): one message, one timer, one hand-off, all of the second.
    expect(await outboxOf(t)).toEqual([{ type: counted.type, data: { id: row.id, value: 13 } }]);
    expect(await timersOf(t)).toEqual([{ kind: REMIND, key: row.id }]);
    expect(t.relay.rows.map((r) => r.envelope.data)).toEqual([{ id: row.id, value: 13 }]);
    expect(await counterOf(t, row.id)).toMatchObject({ value: 13, version: 8 });
    expect(runner.known.get(row.id)).toMatchObject({ value: 13, version: 8 });
  });

  it('decides a refusal again on the row locked, which may allow it', async () => {
    const { runner, aggregate } = counterRunner(t);
    const row = await existing(t, { value: 3 });
    runner.known.set(row.id, known(row));
    await t.service.db.updateTable('counters').set({ value: 4, version: 2 }).where('id', '=', row.id).execute();
    const reply = await requested(t, runner, row.id, { kind: 'incrementIfEven', by: 2 });
    expect(reply).toMatchObject({ status: 200, data: { value: 6 } });
    expect(aggregate.log).toEqual(['decide incrementIfEven on 3 v1: refused', 'lock', 'decide incrementIfEven on 4 v2: changed']);
  });

  it('decides a command that changes nothing again on the row locked, and writes nothing', async () => {
    const { runner, aggregate } = counterRunner(t);
    const row = await existing(t);
    runner.known.set(row.id, known(row));
    const reply = await requested(t, runner, row.id, { kind: 'touch' });
    expect(reply).toMatchObject({ status: 200, data: { value: 2 } });
    expect(aggregate.log).toEqual(['decide touch on 2 v1: unchanged', 'lock', 'decide touch on 2 v1: unchanged']);
    expect({ row: await counterOf(t, row.id), outbox: await outboxOf(t), handed: t.relay.rows }).toEqual({ row, outbox: [], handed: [] });
  });
});

describe('a request decided on a fresh read', () => {
  it('answers its refusal as final, having written nothing', async () => {
    const { runner, aggregate } = counterRunner(t);
    const row = await existing(t, { value: 3 });
    const [trips, statements] = [t.counted.roundTrips(), t.counted.statements.length];
    const reply = await requested(t, runner, row.id, { kind: 'incrementIfEven', by: 2 });
    expect(reply).toMatchObject({ ok: false, status: 409, errors: [{ code: 'INVALID_STATE', message: 'The value is odd.' }] });
    expect(aggregate.log).toEqual(['read', 'decide incrementIfEven on 3 v1: refused']);
    // The read only: the transaction sent nothing.
    expect({ roundTrips: t.counted.roundTrips() - trips, statements: t.counted.statements.length - statements }).toEqual({ roundTrips: 1, statements: 1 });
    expect({ row: await counterOf(t, row.id), outbox: await outboxOf(t), timers: await timersOf(t) }).toEqual({ row, outbox: [], timers: [] });
  });

  it('sends nothing but the read for a command that changes nothing', async () => {
    const { runner, aggregate } = counterRunner(t);
    const row = await existing(t);
    const trips = t.counted.roundTrips();
    expect(await requested(t, runner, row.id, { kind: 'touch' })).toMatchObject({ status: 200, data: { value: 2 } });
    expect(aggregate.log).toEqual(['read', 'decide touch on 2 v1: unchanged']);
    expect(t.counted.roundTrips() - trips).toBe(1);
    expect({ row: await counterOf(t, row.id), outbox: await outboxOf(t) }).toEqual({ row, outbox: [] });
  });

  it('writes a change guarded at commit, in the round trip after the read', async () => {
    const { runner, aggregate } = counterRunner(t);
    const row = await existing(t);
    const trips = t.counted.roundTrips();
    expect(await requested(t, runner, row.id, { kind: 'increment', by: 1 })).toMatchObject({ status: 200, data: { value: 3 } });
    expect(aggregate.log).toEqual(['read', 'decide increment on 2 v1: changed']);
    expect(t.counted.roundTrips() - trips).toBe(2);
  });

  it('creates an aggregate with an insert at commit', async () => {
    const { runner } = counterRunner(t);
    const id = randomUUID();
    const reply = await requested(t, runner, id, { kind: 'create', id, start: 7, label: 'new' });
    expect(reply).toMatchObject({ status: 200, data: { id, value: 7, round: 'none' } });
    expect(await counterOf(t, id)).toEqual({ id, value: 7, version: 1, round: 'none', label: 'new' });
    expect(runner.known.get(id)).toEqual({ id, value: 7, version: 1, round: 'none' });
  });

  it('decides a creation again on the row locked when another made the aggregate meanwhile: the insert wrote nothing', async () => {
    const { runner, aggregate } = counterRunner(t);
    const id = randomUUID();
    // Another replica creates it between this one's read and its commit.
    aggregate.meanwhile.push(() => existing(t, { id, value: 40 }));
    const reply = await requested(t, runner, id, { kind: 'create', id, start: 7, label: 'late' });
    expect(reply).toMatchObject({ status: 409, errors: [{ message: 'The counter exists.' }] });
    expect(aggregate.log).toEqual(['read', 'decide create on none: changed', 'lock', 'decide create on 40 v1: refused']);
    expect({ row: await counterOf(t, id), outbox: await outboxOf(t) }).toEqual({ row: expect.objectContaining({ value: 40, label: 'a counter' }), outbox: [] });
  });
});

describe('a keyed request', () => {
  it('decides and writes in its key’s transaction, at once and guarded, before the key’s answer; a repeat replays the answer without deciding', async () => {
    const { runner, aggregate } = counterRunner(t);
    const row = await existing(t);
    runner.known.set(row.id, known(row));
    const key = keyOf();
    const [from, claimedFrom] = [t.counted.statements.length, t.claims.statements.length];
    const reply = await requested(t, runner, row.id, { kind: 'increment', by: 3 }, key);
    expect(reply).toMatchObject({ ok: true, status: 200, data: { value: 5 } });
    expect(aggregate.log).toEqual(['decide increment on 2 v1: changed']);
    // In the claim's transaction: the guarded write as a statement of its own, then the messages
    // and timer, then the key's answer, then the commit.
    const claimed = t.claims.statements.slice(claimedFrom);
    const step = claimed.findIndex((s) => /^with "counter" as \(update "counters" .* and "version" = \$4 returning \*\) select \* from "counter"$/.test(s));
    expect(step).toBeGreaterThan(0);
    expect(claimed.slice(step + 1)).toEqual([
      expect.stringMatching(/^with written as \(\s+insert into outbox .* scheduled as \(\s+insert into timers /s),
      expect.stringMatching(/^update "idempotency_keys" set "reply"/),
      'commit',
    ]);
    // The runner's own connection only stored the request's final answer over the effect's (200 over 202).
    expect(t.counted.statements.slice(from)).toEqual([expect.stringMatching(/^update "idempotency_keys" set "reply"/)]);
    expect(await requested(t, runner, row.id, { kind: 'increment', by: 3 }, key)).toMatchObject({ status: 200, data: { value: 5 }, replayed: true });
    expect(aggregate.log).toHaveLength(1);
    expect(await counterOf(t, row.id)).toMatchObject({ value: 5, version: 2 });
    expect(await outboxOf(t)).toEqual([{ type: counted.type, data: { id: row.id, value: 5 } }]);
    expect(runner.known.get(row.id)).toMatchObject({ value: 5, version: 2 });
  });

  it('decides again on the row locked, in the key’s transaction, when its guarded write found the row moved on', async () => {
    const { runner, aggregate } = counterRunner(t);
    const row = await existing(t);
    runner.known.set(row.id, known(row));
    await t.service.db.updateTable('counters').set({ value: 10, version: 7 }).where('id', '=', row.id).execute();
    const reply = await requested(t, runner, row.id, { kind: 'increment', by: 3 }, keyOf());
    expect(reply).toMatchObject({ status: 200, data: { value: 13 } });
    expect(aggregate.log).toEqual(['decide increment on 2 v1: changed', 'lock', 'decide increment on 10 v7: changed']);
    expect(await outboxOf(t)).toEqual([{ type: counted.type, data: { id: row.id, value: 13 } }]);
    expect(t.relay.rows).toHaveLength(1);
  });

  it('stores its refusal as the key’s answer, nothing written', async () => {
    const { runner } = counterRunner(t);
    const row = await existing(t, { value: 3 });
    const key = keyOf();
    expect(await requested(t, runner, row.id, { kind: 'incrementIfEven', by: 2 }, key)).toMatchObject({ status: 409 });
    // The value is even now, but the key's answer is the refusal.
    await t.service.db.updateTable('counters').set({ value: 4, version: 2 }).where('id', '=', row.id).execute();
    expect(await requested(t, runner, row.id, { kind: 'incrementIfEven', by: 2 }, key)).toMatchObject({ status: 409, replayed: true });
    expect({ value: (await counterOf(t, row.id))?.value, outbox: await outboxOf(t) }).toEqual({ value: 4, outbox: [] });
  });
});

describe('a step within another transaction', () => {
  it('decides on the row locked and writes at once, with the other transaction’s writes; remembered once that commits', async () => {
    const { runner, aggregate } = counterRunner(t);
    const row = await existing(t);
    const other = await existing(t, { value: 100 });
    const stepped = await t.tx.run(async (trx, work) => {
      await trx.updateTable('counters').set({ label: 'touched by the other step' }).where('id', '=', other.id).execute();
      const result = await runner.within(untyped(trx), work, row.id, { kind: 'increment', by: 1 });
      expect(runner.known.get(row.id)).toBeUndefined();
      return result;
    });
    expect(stepped).toMatchObject({ state: { value: 3, version: 2 }, decision: { kind: 'changed' } });
    expect(aggregate.log).toEqual(['lock', 'decide increment on 2 v1: changed']);
    expect(runner.known.get(row.id)).toMatchObject({ value: 3, version: 2 });
    expect((await counterOf(t, other.id))?.label).toBe('touched by the other step');
    expect(t.relay.rows.map((r) => r.envelope.data)).toEqual([{ id: row.id, value: 3 }]);
  });

  it('is undone with the transaction it was taken in, and remembered nowhere', async () => {
    const { runner } = counterRunner(t);
    const row = await existing(t);
    await expect(t.tx.run(async (trx, work) => {
      await runner.within(untyped(trx), work, row.id, { kind: 'increment', by: 1 });
      throw new Error('the other step failed');
    })).rejects.toThrow('the other step failed');
    expect({ row: await counterOf(t, row.id), known: runner.known.get(row.id), outbox: await outboxOf(t) }).toEqual({ row, known: undefined, outbox: [] });
  });

  it('answers undefined for no such aggregate, and throws a refusal', async () => {
    const { runner } = counterRunner(t);
    const odd = await existing(t, { value: 3 });
    await t.tx.run(async (trx, work) => expect(await runner.within(untyped(trx), work, randomUUID(), { kind: 'touch' })).toBeUndefined());
    await expect(t.tx.run((trx, work) => runner.within(untyped(trx), work, odd.id, { kind: 'incrementIfEven', by: 1 }))).rejects.toThrow('The value is odd.');
  });

  it('is how a timer steps the aggregate: in the transaction that removes the timer, which the step sets again', async () => {
    const { runner } = counterRunner(t);
    const row = await existing(t);
    runner.known.set(row.id, known(row));
    await requested(t, runner, row.id, { kind: 'increment', by: 1 });
    const timers = new TimerRunner(t.tx, { [REMIND]: async (trx, timer, work) => void (await runner.within(untyped(trx), work, timer.key, { kind: 'increment', by: 10 })) }, logger);
    const due = await t.service.db.selectFrom('timers').select('fireAt').executeTakeFirstOrThrow();
    expect(await timers.fireDue(new Date(due.fireAt.getTime() + 1))).toBe(1);
    expect(await counterOf(t, row.id)).toMatchObject({ value: 13, version: 3 });
    const again = await t.service.db.selectFrom('timers').select(['key', 'fireAt']).execute();
    expect(again).toEqual([{ key: row.id, fireAt: expect.any(Date) }]);
    expect(again[0]!.fireAt.getTime()).toBeGreaterThan(due.fireAt.getTime());
  });
});
