import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { subjects } from '@aex/contracts';
import { ack, nak, term, BusUnavailableError, KvConflictError, PayloadTooLargeError, type Bus, type BusMessage, type Stoppable } from '../src/index.js';
import { createTestBus, eventually, type BusKind } from '../src/testing/index.js';

// One contract, two implementations (README "Run it, test it"): the in-process bus must behave
// like JetStream for everything the services rely on.
describe.each<BusKind>(['jetstream', 'memory'])('bus contract (%s)', (kind) => {
  let bus: Bus;
  let dispose: (buckets?: string[]) => Promise<void>;
  const started: Stoppable[] = [];
  const buckets: string[] = [];

  beforeEach(async () => {
    ({ bus, dispose } = await createTestBus(kind));
  });
  afterEach(async () => {
    for (const s of started.splice(0)) await s.stop();
    await dispose(buckets.splice(0));
  });

  const evt = (name: string) => subjects.event(bus.namespace, `test.${name}`);

  it('request/reply reaches a server of the queue group and returns its answer', async () => {
    started.push(await bus.serve(`${bus.namespace}.rpc.test.echo`, 'test', async (data) => ({ echoed: data })));
    expect(await bus.request(`${bus.namespace}.rpc.test.echo`, { n: 1 }, { timeoutMs: 2000 })).toEqual({ echoed: { n: 1 } });
  });

  it('request with no server fails with BusUnavailableError', async () => {
    await expect(bus.request(`${bus.namespace}.rpc.test.nobody`, {}, { timeoutMs: 300 })).rejects.toBeInstanceOf(BusUnavailableError);
  });

  it('announces the largest message it carries and refuses a larger request before sending it', async () => {
    expect(bus.maxPayload).toBe(1024 * 1024);
    let served = 0;
    started.push(await bus.serve(`${bus.namespace}.rpc.test.big`, 'test', async () => ((served += 1), {})));
    const big = { pad: 'x'.repeat(bus.maxPayload) };
    await expect(bus.request(`${bus.namespace}.rpc.test.big`, big, { timeoutMs: 2000 })).rejects.toBeInstanceOf(PayloadTooLargeError);
    await expect(bus.publish(evt('big'), big, { msgId: randomUUID() })).rejects.toBeInstanceOf(PayloadTooLargeError);
    expect(served).toBe(0);
  });

  it('sends a reply that already is bytes as it is', async () => {
    started.push(await bus.serve(`${bus.namespace}.rpc.test.bytes`, 'test', async () => Buffer.from('{"pre":"encoded"}')));
    expect(await bus.request(`${bus.namespace}.rpc.test.bytes`, {}, { timeoutMs: 2000 })).toEqual({ pre: 'encoded' });
  });

  it('request/reply carries headers to the server', async () => {
    let seen: Record<string, string> = {};
    started.push(await bus.serve(`${bus.namespace}.rpc.test.hdr`, 'test', async (_d, h) => ((seen = h), {})));
    await bus.request(`${bus.namespace}.rpc.test.hdr`, {}, { timeoutMs: 2000, headers: { 'x-request-id': 'abc' } });
    expect(seen['x-request-id']).toBe('abc');
  });

  it('a notice reaches every listener of its subject, wildcards included, and nobody else', async () => {
    const got: Array<[string, string, unknown]> = [];
    const base = `${bus.namespace}.notice.test`;
    started.push(await bus.listen(`${base}.*`, (data, subject) => got.push(['a', subject, data])));
    started.push(await bus.listen(`${base}.>`, (data, subject) => got.push(['b', subject, data])));
    started.push(await bus.listen(`${base}.other`, (data, subject) => got.push(['c', subject, data])));
    const stopped = await bus.listen(`${base}.*`, (data, subject) => got.push(['d', subject, data]));
    await stopped.stop();
    bus.notify(`${base}.x`, { n: 1 });
    // Notices of one sender arrive in order: once the later one to `.other` is in, `.x` has reached all it will.
    bus.notify(`${base}.other`, { n: 2 });
    await eventually(async () => got.filter(([, subject]) => subject === `${base}.other`).length === 3);
    expect(got.sort()).toEqual([
      ['a', `${base}.other`, { n: 2 }], ['a', `${base}.x`, { n: 1 }],
      ['b', `${base}.other`, { n: 2 }], ['b', `${base}.x`, { n: 1 }],
      ['c', `${base}.other`, { n: 2 }],
    ]);
  });

  it('a published message is delivered once to a durable consumer and acked', async () => {
    const got: BusMessage[] = [];
    started.push(await bus.consume({ stream: 'events', durable: 'c1', filter: evt('>'), handler: async (m) => (got.push(m), ack()) }));
    await bus.publish(evt('a'), { v: 1 }, { msgId: randomUUID() });
    // A later message arrives after any second delivery of the first would have.
    await bus.publish(evt('a'), { v: 'later' }, { msgId: randomUUID() });
    await eventually(async () => got.some((m) => (m.data as { v: unknown }).v === 'later'));
    expect(got.map((m) => [m.data, m.deliveryCount])).toEqual([[{ v: 1 }, 1], [{ v: 'later' }, 1]]);
  });

  it('a repeated message id is dropped at publish (dedupe window)', async () => {
    const got: unknown[] = [];
    started.push(await bus.consume({ stream: 'events', durable: 'c2', filter: evt('>'), handler: async (m) => (got.push(m.data), ack()) }));
    const id = randomUUID();
    await bus.publish(evt('a'), { v: 1 }, { msgId: id });
    await bus.publish(evt('a'), { v: 1 }, { msgId: id });
    await bus.publish(evt('a'), { v: 2 }, { msgId: randomUUID() });
    // In stream order: a repeat kept by the stream would come before { v: 2 }.
    await eventually(async () => got.some((v) => (v as { v: number }).v === 2));
    expect(got).toEqual([{ v: 1 }, { v: 2 }]);
  });

  it('nak(delay) redelivers after the delay with a higher delivery count', async () => {
    const seen: Array<{ count: number; at: number }> = [];
    started.push(
      await bus.consume({
        stream: 'commands', durable: 'c3', filter: subjects.command(bus.namespace, 'test.retry'),
        handler: async (m) => (seen.push({ count: m.deliveryCount, at: Date.now() }), m.deliveryCount < 2 ? nak(200) : ack()),
      }),
    );
    await bus.publish(subjects.command(bus.namespace, 'test.retry'), {}, { msgId: randomUUID() });
    await eventually(async () => seen.length === 2);
    expect(seen.map((s) => s.count)).toEqual([1, 2]);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(150);
  });

  it('a thrown handler error is retried', async () => {
    const deliveries: number[] = [];
    started.push(
      await bus.consume({
        stream: 'events', durable: 'c4', filter: evt('>'),
        handler: async (m) => {
          deliveries.push(m.deliveryCount);
          if (deliveries.length === 1) throw new Error('transient');
          return ack();
        },
      }),
    );
    await bus.publish(evt('x'), {}, { msgId: randomUUID() });
    // The message the handler failed on comes again, as its second delivery.
    expect(await eventually(async () => deliveries.length >= 2 && deliveries, 5000)).toEqual([1, 2]);
  });

  it('term stops redelivery, also past the ack wait (a NATS 2.9 server ignores a term carrying a reason)', async () => {
    let calls = 0;
    started.push(await bus.consume({ stream: 'events', durable: 'c5', filter: evt('>'), ackWaitMs: 300, handler: async () => (calls++, term('poison')) }));
    await bus.publish(evt('p'), {}, { msgId: randomUUID() });
    await eventually(async () => calls === 1);
    // A redelivery that must not come has no event to await: its time is waited out. 900 ms outlasts
    // a message given back (a failed handler's first retry comes after 500 ms) and the 300 ms ack wait twice.
    await new Promise((r) => setTimeout(r, 900));
    expect(calls).toBe(1);
  });

  it('an unacked message is redelivered after the ack wait', async () => {
    const deliveries: Array<{ count: number; at: number }> = [];
    started.push(
      await bus.consume({
        stream: 'events', durable: 'c6', filter: evt('>'), ackWaitMs: 1000,
        handler: async (m) => {
          deliveries.push({ count: m.deliveryCount, at: Date.now() });
          // Work that outlives the ack wait (a handler stuck in a slow call): a stand-in in time.
          if (m.deliveryCount === 1) await new Promise((r) => setTimeout(r, 1500));
          return ack();
        },
      }),
    );
    await bus.publish(evt('slow'), {}, { msgId: randomUUID() });
    const [first, again] = await eventually(async () => deliveries.length >= 2 && deliveries, 8000);
    expect([first!.count, again!.count]).toEqual([1, 2]);
    expect(again!.at - first!.at).toBeGreaterThanOrEqual(900);
  });

  it('a durable consumer resumes where it stopped, and filters by subject', async () => {
    const got: unknown[] = [];
    const spec = { stream: 'events' as const, durable: 'c7', filter: evt('keep.*'), handler: async (m: BusMessage) => (got.push(m.data), ack()) };
    const first = await bus.consume(spec);
    await bus.publish(evt('keep.a'), 1, { msgId: randomUUID() });
    await eventually(async () => got.length === 1);
    await first.stop();
    await bus.publish(evt('keep.b'), 2, { msgId: randomUUID() });
    await bus.publish(evt('skip.c'), 3, { msgId: randomUUID() });
    await bus.publish(evt('keep.d'), 4, { msgId: randomUUID() });
    started.push(await bus.consume(spec));
    // In stream order: `skip.c`, were it delivered, would come before 4.
    await eventually(async () => got.includes(4));
    expect(got).toEqual([1, 2, 4]);
  });

  it('KV create refuses an existing key; update is compare-and-set on the revision', async () => {
    const name = `${bus.namespace}_kv`;
    buckets.push(name);
    const kv = await bus.kv(name);
    const r1 = await kv.create('k', 'one');
    await expect(kv.create('k', 'two')).rejects.toBeInstanceOf(KvConflictError);
    const r2 = await kv.update('k', 'two', r1);
    await expect(kv.update('k', 'three', r1)).rejects.toBeInstanceOf(KvConflictError);
    expect(await kv.get('k')).toEqual({ value: 'two', revision: r2 });
    await kv.delete('k');
    expect(await kv.get('k')).toBeNull();
    await kv.create('k', 'again');
    expect((await kv.get('k'))?.value).toBe('again');
  });

  it('KV entries expire after the bucket TTL', async () => {
    const name = `${bus.namespace}_ttl`;
    buckets.push(name);
    const kv = await bus.kv(name, { ttlMs: 1000 });
    await kv.put('k', 'v');
    expect((await kv.get('k'))?.value).toBe('v');
    expect(await kv.keys()).toEqual(['k']);
    await eventually(async () => (await kv.get('k')) === null, 5000, 200);
    expect(await kv.keys()).toEqual([]);
  });

  it('KV keys answers at once while entries are expiring (no consumer left to wait for a heartbeat)', async () => {
    const name = `${bus.namespace}_expiring`;
    buckets.push(name);
    const kv = await bus.kv(name, { ttlMs: 1000 });
    await Promise.all(Array.from({ length: 40 }, (_, i) => kv.put(`r${i}`, 'v')));
    // Listed again and again across the moment the entries expire: each listing ends in well under
    // a second, whatever it finds (some, then none).
    const started = Date.now();
    let slowest = 0;
    let last: string[] = [];
    while (Date.now() - started < 2500) {
      const t0 = Date.now();
      last = await kv.keys();
      slowest = Math.max(slowest, Date.now() - t0);
    }
    expect(slowest).toBeLessThan(2000);
    expect(last).toEqual([]);
  }, 20_000);

  it('KV keys lists the keys holding a value, without deleted ones', async () => {
    const name = `${bus.namespace}_keys`;
    buckets.push(name);
    const kv = await bus.kv(name);
    expect(await kv.keys()).toEqual([]);
    await kv.put('a', '1');
    await kv.put('b', '2');
    await kv.put('a', '3');
    await kv.put('c', '4');
    await kv.delete('b');
    expect((await kv.keys()).sort()).toEqual(['a', 'c']);
  });
});
