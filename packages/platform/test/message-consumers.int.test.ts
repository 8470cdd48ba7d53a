import { randomUUID } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import { describe, expect, it } from 'vitest';
import { AppError, subjects, type MessageEnvelope } from '@aex/contracts';
import {
  applyOnce, appliedOnce, consumeIdempotently, consumeMessages, metrics, OutboxRelay, PROCESSED_RETENTION_MS, pruneProcessedMessages,
  STREAM_MAX_AGE_MS, Transactor,
} from '../src/index.js';
import { eventually, testLogger } from '../src/testing/index.js';
import { parseExposition, samplesOf } from '../../../test/prometheus-text.js';
import { messagingTest, pinged, SCHEMA, type Db } from './messaging-kit.js';

// Consumers on real Postgres and JetStream: a message's effect and its record commit together, so
// it is applied once whatever is delivered again; the records are pruned once no delivery can come.

const t = messagingTest({ bus: true });
const logger = testLogger();
/** The service's transactions, with no relay (what they publish is another file's subject). */
const tx = () => new Transactor(t.db, null);
const envelopeOf = (value: number): MessageEnvelope => ({ id: randomUUID(), type: pinged.type, occurredAt: new Date().toISOString(), data: { value } });
const effectsOf = (messageId: string) => t.db.selectFrom('effects').select('value').where('messageId', '=', messageId).execute();
const recordsOf = (messageId: string) => t.db.selectFrom('processedMessages').select('consumer').where('messageId', '=', messageId).execute();

describe('a message applied once', () => {
  const inserting = (env: MessageEnvelope) => async (trx: Transaction<Db>) => {
    await trx.insertInto('effects').values({ messageId: env.id, value: (env.data as { value: number }).value }).execute();
  };

  it('applies a message handed to it directly, and answers the same message later as applied before', async () => {
    const env = envelopeOf(1);
    expect(await applyOnce(tx(), 'direct', env, inserting(env))).toBe(true);
    expect(await applyOnce(tx(), 'direct', env, inserting(env))).toBe(false);
    expect(await effectsOf(env.id)).toEqual([{ value: 1 }]);
    expect(await recordsOf(env.id)).toEqual([{ consumer: 'direct' }]);
  });

  it('keeps each consumer’s record apart: another consumer applies the same message', async () => {
    const env = envelopeOf(2);
    expect(await applyOnce(tx(), 'first', env, inserting(env))).toBe(true);
    expect(await applyOnce(tx(), 'second', env, inserting(env))).toBe(true);
    expect(await effectsOf(env.id)).toEqual([{ value: 2 }, { value: 2 }]);
  });

  it('answers as applied before a repeat whose handler refuses the state the message made', async () => {
    const env = envelopeOf(3);
    await applyOnce(tx(), 'refusing', env, inserting(env));
    const refused = appliedOnce(t.db, 'refusing', env, async () => {
      throw new AppError('INVALID_STATE', 'already done');
    });
    expect(await refused).toBe(false);
  });

  it('throws the failure of a message not applied before, with nothing of it kept', async () => {
    const env = envelopeOf(4);
    await expect(applyOnce(tx(), 'failing', env, async (trx) => {
      await inserting(env)(trx);
      throw new Error('downstream unavailable');
    })).rejects.toThrow('downstream unavailable');
    expect(await effectsOf(env.id)).toEqual([]);
    expect(await recordsOf(env.id)).toEqual([]);
  });
});

describe('message consumer', () => {
  it('acknowledges what its apply reports as applied before, counted as a repeat', async () => {
    const durable = `repeat-${randomUUID().slice(0, 8)}`;
    const seen: number[] = [];
    t.stoppables.push(await consumeMessages({
      bus: t.bus, logger, durable, def: pinged, concurrency: 1,
      apply: async (_env, data) => (seen.push(data.value), data.value !== 2),
    }));
    for (const value of [1, 2, 3]) {
      const env = envelopeOf(value);
      await t.bus.publish(subjects.event(t.bus.namespace, pinged.type), env, { msgId: env.id });
    }
    await eventually(async () => seen.length === 3);
    const scraped = parseExposition(await metrics.render());
    const counted = (outcome: string) => samplesOf(scraped, 'aex_messages_processed_total', { consumer: durable, outcome })[0]?.value;
    expect({ applied: counted('applied'), repeat: counted('repeat'), retry: counted('retry') }).toEqual({ applied: 2, repeat: 1, retry: undefined });
  });
});

describe('idempotent consumer', () => {
  const publish = (id: string, data: unknown) => t.bus.publish(subjects.event(t.bus.namespace, pinged.type), { id, type: pinged.type, occurredAt: new Date().toISOString(), data }, { msgId: id });

  it('applies a message once even when it is delivered twice under different stream ids', async () => {
    t.stoppables.push(
      // One at a time, in stream order: once a later message is applied, the repeat has been handled.
      await consumeIdempotently({ bus: t.bus, tx: tx(), logger, concurrency: 1, durable: `eff-${randomUUID().slice(0, 8)}`, def: pinged, handle: async (trx, data, _work, env) => void (await trx.insertInto('effects').values({ messageId: env.id, value: data.value }).execute()) }),
    );
    const id = randomUUID();
    await publish(id, { value: 7 });
    // Outside the JetStream dedupe window (another msg id), the consumer's processed id still catches it.
    await t.bus.publish(subjects.event(t.bus.namespace, pinged.type), { id, type: pinged.type, occurredAt: new Date().toISOString(), data: { value: 7 } }, { msgId: randomUUID() });
    const later = randomUUID();
    await publish(later, { value: 8 });
    await eventually(async () => (await t.db.selectFrom('processedMessages').selectAll().where('messageId', '=', later).execute()).length === 1);
    expect(await t.db.selectFrom('effects').selectAll().orderBy('value').execute()).toEqual([{ messageId: id, value: 7 }, { messageId: later, value: 8 }]);
  });

  it('terminates a message that breaks its contract instead of retrying it', async () => {
    let calls = 0;
    t.stoppables.push(await consumeIdempotently({ bus: t.bus, tx: tx(), logger, durable: `bad-${randomUUID().slice(0, 8)}`, def: pinged, handle: async () => void calls++ }));
    await publish(randomUUID(), { value: 'not a number' });
    await t.bus.publish(subjects.event(t.bus.namespace, pinged.type), { not: 'an envelope' }, { msgId: randomUUID() });
    const good = randomUUID();
    await publish(good, { value: 1 });
    await eventually(async () => calls === 1);
    // A redelivery of the broken messages would come from the server's timer, which no event stands for: waited out.
    await new Promise((r) => setTimeout(r, 400));
    expect(calls).toBe(1);
  });

  it('retries a failing handler and leaves no partial effect; an AppError is final', async () => {
    let attempts = 0;
    t.stoppables.push(
      await consumeIdempotently({
        bus: t.bus, tx: tx(), logger,
        durable: `retry-${randomUUID().slice(0, 8)}`,
        def: pinged,
        handle: async (trx, data, _work, env) => {
          attempts++;
          await trx.insertInto('effects').values({ messageId: env.id, value: data.value }).execute();
          if (data.value === 13) throw new AppError('INVALID_STATE', 'never valid');
          if (attempts < 3) throw new Error('transient');
        },
      }),
    );
    const id = randomUUID();
    await publish(id, { value: 1 });
    await eventually(async () => (await t.db.selectFrom('effects').selectAll().execute()).length === 1, 10_000);
    expect(attempts).toBe(3);
    const before = attempts;
    await publish(randomUUID(), { value: 13 });
    await eventually(async () => attempts === before + 1);
    // A retry of the final refusal would come from the server's redelivery timer, which no event stands for: waited out.
    await new Promise((r) => setTimeout(r, 800));
    expect(attempts).toBe(before + 1);
    expect(await t.db.selectFrom('effects').select('value').execute()).toEqual([{ value: 1 }]);
  });
});

describe('a consumer’s record and messages in one statement', () => {
  it('rolls back the effect of a message applied before, and acknowledges a repetition its handler refuses', async () => {
    const sending = t.recording();
    const relay = new OutboxRelay(t.db, sending.bus, logger, 3_600_000);
    relay.start();
    t.stoppables.push(relay);
    const durable = `once-${randomUUID().slice(0, 8)}`;
    let calls = 0;
    const applied: number[] = [];
    const errors: unknown[] = [];
    const watched = Object.assign(Object.create(logger) as typeof logger, { error: (...args: unknown[]) => void errors.push(args) });
    t.stoppables.push(await consumeIdempotently({
      bus: t.bus, tx: new Transactor(t.db, relay), logger: watched, durable, def: pinged,
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
    await t.bus.publish(subjects.event(t.bus.namespace, pinged.type), envelope, { msgId: id });
    // Applied, and its own message (105) sent and applied in turn.
    await eventually(async () => applied.length === 2);
    // The same message again (another stream id): its handler runs and refuses, all of it rolled back.
    await t.bus.publish(subjects.event(t.bus.namespace, pinged.type), envelope, { msgId: randomUUID() });
    await eventually(async () => calls >= 3);
    // A retry of the refusal would come from the server's redelivery timer, which no event stands for: waited out.
    await new Promise((r) => setTimeout(r, 400));
    expect(applied.sort((a, b) => a - b)).toEqual([5, 105]);
    expect(await t.db.selectFrom('effects').select('value').where('messageId', '=', id).execute()).toEqual([{ value: 5 }]);
    expect(await t.db.selectFrom('processedMessages').select('consumer').where('messageId', '=', id).execute()).toEqual([{ consumer: durable }]);
    // One message sent by the first application only, and no error logged as a rejection.
    expect(sending.published.filter((e) => (e as { data: { value: number } }).data.value === 105)).toHaveLength(1);
    expect(calls).toBe(3);
    expect(errors).toEqual([]);
  });
});

describe('consumed-message ids kept while their message can come again', () => {
  const recordedAgo = (ms: number) => t.db.insertInto('processedMessages').values({ consumer: 'pruned', messageId: randomUUID(), processedAt: new Date(Date.now() - ms) }).execute();

  it('deletes the ids recorded longer ago than a stream keeps a message (and a day), in batches, and keeps the rest', async () => {
    expect(PROCESSED_RETENTION_MS).toBe(STREAM_MAX_AGE_MS + 86_400_000);
    for (let i = 0; i < 5; i++) await recordedAgo(PROCESSED_RETENTION_MS + 3_600_000);
    await recordedAgo(STREAM_MAX_AGE_MS);
    await recordedAgo(PROCESSED_RETENTION_MS - 60_000);
    await recordedAgo(0);
    expect(await pruneProcessedMessages(t.db, { batch: 2 })).toBe(5);
    expect(await t.db.selectFrom('processedMessages').select('consumer').execute()).toHaveLength(3);
    expect(await pruneProcessedMessages(t.db)).toBe(0);
  });

  it('stops after the batches it was given, the rest left for its next round', async () => {
    for (let i = 0; i < 5; i++) await recordedAgo(PROCESSED_RETENTION_MS + 3_600_000);
    expect(await pruneProcessedMessages(t.db, { batch: 2, maxBatches: 1 })).toBe(2);
    expect(await t.db.selectFrom('processedMessages').select('consumer').execute()).toHaveLength(3);
  });

  it('is done by each service’s relay: its first drain prunes', async () => {
    await recordedAgo(PROCESSED_RETENTION_MS + 3_600_000);
    await recordedAgo(0);
    const relay = new OutboxRelay(t.db, t.bus, logger, 3_600_000);
    relay.start();
    t.stoppables.push(relay);
    await relay.drain();
    // The old record pruned, the recent one kept.
    await expect.poll(async () => (await t.db.selectFrom('processedMessages').select('consumer').execute()).length, { timeout: 5_000 }).toBe(1);
  });

  it('finds them through a BRIN index of the time they were recorded', async () => {
    const index = await sql<{ indexdef: string }>`select indexdef from pg_indexes where schemaname = ${SCHEMA} and indexname = 'processed_messages_age'`.execute(t.db);
    expect(index.rows[0]?.indexdef).toMatch(/USING brin \(processed_at\)/);
  });
});
