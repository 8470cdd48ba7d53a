import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { subjects, type MessageDef, type MessageEnvelope, type Static } from '@aex/contracts';
import { metrics, SagaSignals, type AggregateRunner } from '../src/index.js';
import { eventually } from '../src/testing/index.js';
import { parseExposition, samplesOf } from '../../../test/prometheus-text.js';
import { counterOf, counterRunner, existing, keyOf, known, logger, requested, runnerTest } from './aggregate-kit.js';
import { bumped, roundAsked, roundClosed, type Counter, type CounterTypes } from './counter-aggregate.js';

// The aggregate runner's side of a saga, on real Postgres and JetStream, with the toy counter
// (`counter-aggregate.ts`): its consumer applies each message once, decided first on the state
// remembered; after each commit the state is remembered and those waiting on it are woken; a request
// whose state is left in flight waits for the saga's step that ends it and is answered as the
// aggregate says.

const t = runnerTest({ bus: true });

/** How many messages the durable consumer counted with `outcome` (applied, repeat, retry, rejected). */
async function processed(durable: string, outcome: string): Promise<number> {
  return samplesOf(parseExposition(await metrics.render()), 'aex_messages_processed_total', { consumer: durable, outcome })[0]?.value ?? 0;
}

async function publish<M extends MessageDef>(def: M, data: Static<M['data']>, envelope?: MessageEnvelope): Promise<MessageEnvelope> {
  const sent = envelope ?? { id: randomUUID(), type: def.type, occurredAt: new Date().toISOString(), data };
  // Another stream id for a repeat: JetStream's own dedupe does not catch it, the consumer's record does.
  await t.bus.publish(subjects.event(t.bus.namespace, def.type), sent, { msgId: envelope ? randomUUID() : sent.id });
  return sent;
}

/** The runner's consumer of the rounds' answers, one message at a time; its durable name. */
async function closingRounds(runner: AggregateRunner<CounterTypes>): Promise<string> {
  const durable = `rounds-${randomUUID().slice(0, 8)}`;
  t.stoppables.push(await runner.consume({ bus: t.bus, logger, durable, def: roundClosed, concurrency: 1, command: (data) => ({ id: data.id, command: { kind: 'closeRound', accepted: data.accepted } }) }));
  return durable;
}

const recordsOf = (messageId: string) => t.service.db.selectFrom('processedMessages').select('consumer').where('messageId', '=', messageId).execute();
/** The request's step committed: the round's question was handed to the relay. */
const asked = (id: string) => eventually(async () => t.relay.rows.some((r) => r.type === roundAsked.type && (r.envelope.data as { id: string }).id === id));

describe('an aggregate’s consumer', () => {
  it('applies a message once: its step and its record commit together, and a repeat is acknowledged as a repeat', async () => {
    const { runner, aggregate } = counterRunner(t);
    const durable = await closingRounds(runner);
    const row = await existing(t, { round: 'open' });
    const sent = await publish(roundClosed, { id: row.id, accepted: true });
    await eventually(async () => (await processed(durable, 'applied')) === 1);
    expect(await counterOf(t, row.id)).toMatchObject({ round: 'accepted', version: 2 });
    expect(runner.known.get(row.id)).toMatchObject({ round: 'accepted', version: 2 });
    await publish(roundClosed, { id: row.id, accepted: true }, sent);
    await eventually(async () => (await processed(durable, 'repeat')) === 1);
    expect(aggregate.log).toEqual([
      'lock', 'decide closeRound on 2 v1: changed',
      // The repeat: nothing to do on the state remembered, so decided again locked; its record was there.
      'decide closeRound on 2 v2: unchanged', 'lock', 'decide closeRound on 2 v2: unchanged',
    ]);
    expect(await recordsOf(sent.id)).toEqual([{ consumer: durable }]);
    expect(await counterOf(t, row.id)).toMatchObject({ round: 'accepted', version: 2 });
  });

  it('writes a message’s step guarded at commit with its record, in one round trip, when the remembered state is current', async () => {
    const { runner, aggregate } = counterRunner(t);
    const durable = await closingRounds(runner);
    const row = await existing(t, { round: 'open' });
    runner.known.set(row.id, known(row));
    const [trips, statements] = [t.counted.roundTrips(), t.counted.statements.length];
    const sent = await publish(roundClosed, { id: row.id, accepted: true });
    await eventually(async () => (await processed(durable, 'applied')) === 1);
    expect({ roundTrips: t.counted.roundTrips() - trips, statements: t.counted.statements.length - statements }).toEqual({ roundTrips: 1, statements: 1 });
    expect(aggregate.log).toEqual(['decide closeRound on 2 v1: changed']);
    expect(await recordsOf(sent.id)).toEqual([{ consumer: durable }]);
    expect(await counterOf(t, row.id)).toMatchObject({ round: 'accepted', version: 2 });
  });

  it('decides a message again on the row locked when its remembered decision changes nothing, and writes its record once', async () => {
    const { runner, aggregate } = counterRunner(t);
    const durable = await closingRounds(runner);
    const row = await existing(t);
    runner.known.set(row.id, known(row));
    // Another replica opened the round: this one remembers none.
    await t.service.db.updateTable('counters').set({ round: 'open', version: 2 }).where('id', '=', row.id).execute();
    const sent = await publish(roundClosed, { id: row.id, accepted: false });
    await eventually(async () => (await processed(durable, 'applied')) === 1);
    expect(aggregate.log).toEqual(['decide closeRound on 2 v1: unchanged', 'lock', 'decide closeRound on 2 v2: changed']);
    expect(await counterOf(t, row.id)).toMatchObject({ round: 'refused', version: 3 });
    expect(await recordsOf(sent.id)).toEqual([{ consumer: durable }]);
  });

  it('decides a message again on the row locked when its remembered decision refuses it, and writes its record once', async () => {
    const { runner, aggregate } = counterRunner(t);
    const durable = `bumps-${randomUUID().slice(0, 8)}`;
    t.stoppables.push(await runner.consume({ bus: t.bus, logger, durable, def: bumped, command: (data) => ({ id: data.id, command: { kind: 'incrementIfEven', by: data.by } }) }));
    const row = await existing(t, { value: 3 });
    runner.known.set(row.id, known(row));
    await t.service.db.updateTable('counters').set({ value: 4, version: 2 }).where('id', '=', row.id).execute();
    const sent = await publish(bumped, { id: row.id, by: 2 });
    await eventually(async () => (await processed(durable, 'applied')) === 1);
    expect(aggregate.log).toEqual(['decide incrementIfEven on 3 v1: refused', 'lock', 'decide incrementIfEven on 4 v2: changed']);
    expect(await counterOf(t, row.id)).toMatchObject({ value: 6, version: 3 });
    expect(await recordsOf(sent.id)).toEqual([{ consumer: durable }]);
  });
});

describe('requests waiting on a saga', () => {
  it('wakes a request waiting on an in-flight state when a consumer’s step ends it, answered as the aggregate says', async () => {
    // Waiters read on their own only every minute: within the test, only a signal can wake one.
    const signals = new SagaSignals<Counter>(60_000);
    const { runner, aggregate } = counterRunner(t, { signals, sagaWaitMs: 20_000 });
    await closingRounds(runner);
    const row = await existing(t);
    const started = Date.now();
    const reply = requested(t, runner, row.id, { kind: 'openRound' });
    await asked(row.id);
    await publish(roundClosed, { id: row.id, accepted: true });
    expect(await reply).toMatchObject({ ok: true, status: 200, data: { id: row.id, round: 'accepted' } });
    expect(Date.now() - started).toBeLessThan(20_000);
    // The consumer decided on the state the request's step left, and the waiter took the state its signal carried.
    expect(aggregate.log).toEqual(['read', 'decide openRound on 2 v1: changed', 'decide closeRound on 2 v2: changed']);
  });

  it('answers 202 with the state still in flight when no step ends it within sagaWaitMs', async () => {
    const { runner } = counterRunner(t, { signals: new SagaSignals<Counter>(50), sagaWaitMs: 200 });
    const row = await existing(t);
    const started = Date.now();
    expect(await requested(t, runner, row.id, { kind: 'openRound' })).toMatchObject({ ok: true, status: 202, data: { round: 'open' } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
  });

  it('answers a keyed request with the refusal the saga decided after its effect, stored by a second effect as the key’s answer', async () => {
    const { runner } = counterRunner(t, { signals: new SagaSignals<Counter>(60_000), sagaWaitMs: 20_000 });
    await closingRounds(runner);
    const row = await existing(t);
    const key = keyOf();
    const reply = requested(t, runner, row.id, { kind: 'openRound' }, key);
    await asked(row.id);
    await publish(roundClosed, { id: row.id, accepted: false });
    expect(await reply).toMatchObject({ ok: false, status: 402, errors: [{ code: 'INSUFFICIENT_FUNDS' }] });
    expect(await requested(t, runner, row.id, { kind: 'openRound' }, key)).toMatchObject({ status: 402, errors: [{ code: 'INSUFFICIENT_FUNDS' }], replayed: true });
    // The effect stays: the round was asked once, and refused.
    expect(t.relay.rows.filter((r) => r.type === roundAsked.type)).toHaveLength(1);
    expect(await counterOf(t, row.id)).toMatchObject({ round: 'refused' });
  });

  it('answers a request without a key with the refusal the saga decided after its effect, the effect kept', async () => {
    const { runner } = counterRunner(t, { signals: new SagaSignals<Counter>(60_000), sagaWaitMs: 20_000 });
    await closingRounds(runner);
    const row = await existing(t);
    const reply = requested(t, runner, row.id, { kind: 'openRound' });
    await asked(row.id);
    await publish(roundClosed, { id: row.id, accepted: false });
    expect(await reply).toMatchObject({ ok: false, status: 402 });
    expect(await counterOf(t, row.id)).toMatchObject({ round: 'refused' });
  });
});

describe('settling', () => {
  it('waits until the state leaves its saga step, which a consumer’s step ends', async () => {
    const { runner } = counterRunner(t, { signals: new SagaSignals<Counter>(60_000) });
    await closingRounds(runner);
    const row = await existing(t, { round: 'open' });
    const settled = runner.settle(row.id, 20_000);
    await publish(roundClosed, { id: row.id, accepted: true });
    expect(await settled).toMatchObject({ id: row.id, round: 'accepted' });
  });

  it('answers the state as it is after its time, still in flight', async () => {
    const { runner } = counterRunner(t, { signals: new SagaSignals<Counter>(20) });
    const row = await existing(t, { round: 'open' });
    expect(await runner.settle(row.id, 100)).toMatchObject({ round: 'open' });
  });
});

describe('signals after a step’s commit', () => {
  it('tell the other replicas of a consumer’s step that nobody here waits for, and not of a request’s own', async () => {
    const told: string[] = [];
    const { runner } = counterRunner(t, { signals: new SagaSignals<Counter>(60_000, (id) => told.push(id)), sagaWaitMs: 1_000 });
    const durable = await closingRounds(runner);
    const row = await existing(t);
    await requested(t, runner, row.id, { kind: 'increment', by: 1 });
    expect(told).toEqual([]);
    await t.service.db.updateTable('counters').set({ round: 'open' }).where('id', '=', row.id).execute();
    await publish(roundClosed, { id: row.id, accepted: true });
    await eventually(async () => (await processed(durable, 'applied')) === 1);
    expect(told).toEqual([row.id]);
  });

  it('are sent bare after a consumer’s step that changed nothing, so that waiters read', async () => {
    const signals = new SagaSignals<Counter>(60_000);
    const { runner } = counterRunner(t, { signals });
    const durable = await closingRounds(runner);
    const row = await existing(t);
    const watch = signals.watch(row.id);
    await publish(roundClosed, { id: row.id, accepted: true });
    await eventually(async () => (await processed(durable, 'applied')) === 1);
    expect(await watch.next(5_000)).toEqual({ state: undefined });
    watch.close();
  });
});
