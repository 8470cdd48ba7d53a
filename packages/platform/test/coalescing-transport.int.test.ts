import { randomUUID } from 'node:crypto';
import { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subjects } from '@aex/contracts';
import { ack, type Stoppable } from '../src/bus/types.js';
import { NatsBus } from '../src/bus/nats-bus.js';
import { eventually, testNamespace, TEST_NATS_URL } from '../src/testing/index.js';

/**
 * Counts the writes handed to the kernel for sockets to `port` (each `_write` or `_writev` of a
 * socket is one system call), from now until `stop()`.
 */
function countWrites(port: number): { count: () => number; stop(): void } {
  const proto = Socket.prototype as unknown as Record<'_write' | '_writev', (this: Socket, ...args: unknown[]) => unknown>;
  const original = { _write: proto._write, _writev: proto._writev };
  let count = 0;
  for (const method of ['_write', '_writev'] as const) {
    proto[method] = function (this: Socket, ...args: unknown[]) {
      if (this.remotePort === port) count += 1;
      return original[method].apply(this, args);
    };
  }
  return { count: () => count, stop: () => Object.assign(proto, original) };
}

// What the callbacks of one turn of the event loop send to NATS leaves in one write.
describe('the bus writes to NATS once per turn of the event loop', () => {
  let bus: NatsBus;
  const namespace = testNamespace();
  const natsPort = Number(new URL(TEST_NATS_URL.split(',')[0]!.replace(/^nats:/, 'http:')).port || 4222);

  beforeAll(async () => {
    bus = await NatsBus.connect(TEST_NATS_URL, namespace, 'coalescing-test');
  });
  afterAll(async () => {
    await bus.destroyNamespace();
    await bus.close();
  });

  it('sends requests made by 50 callbacks of one turn in one write, and each gets its own answer', async () => {
    const served = await bus.serve(`${namespace}.rpc.test.echo`, 'test', async (data) => ({ echoed: data }));
    try {
      await bus.request(`${namespace}.rpc.test.echo`, { n: -1 }, { timeoutMs: 5000 });
      // Nothing of ours on its way before counting: a round trip to the server (healthy() flushes the
      // connection) ends after everything written before it.
      expect(await bus.healthy()).toBe(true);
      const writes = countWrites(natsPort);
      const asked: Array<Promise<unknown>> = [];
      try {
        await new Promise<void>((resolve) => {
          // Separate callbacks of one check phase, as answers from Postgres are separate I/O callbacks.
          for (let n = 0; n < 50; n++) setImmediate(() => void asked.push(bus.request(`${namespace}.rpc.test.echo`, { n }, { timeoutMs: 5000 })));
          setImmediate(resolve);
        });
        // Nothing written yet: the 50 requests wait for the end of the turn, then leave together.
        expect(writes.count()).toBe(0);
        await new Promise((resolve) => setImmediate(resolve));
        expect(writes.count()).toBe(1);
        expect(await Promise.all(asked)).toEqual(Array.from({ length: 50 }, (_, n) => ({ echoed: { n } })));
        // The replies too, sent as the requests arrive, take fewer writes than replies.
        expect(writes.count()).toBeLessThan(25);
      } finally {
        writes.stop();
      }
    } finally {
      await served.stop();
    }
  });

  it('keeps the order in which messages were sent, across turns', async () => {
    const got: number[] = [];
    const consumer: Stoppable = await bus.consume({
      stream: 'events', durable: `order-${randomUUID().slice(0, 8)}`, filter: subjects.event(namespace, 'test.order'), concurrency: 1,
      handler: async (m) => (got.push((m.data as { n: number }).n), ack()),
    });
    try {
      const sent: Array<Promise<void>> = [];
      const publish = (n: number) => sent.push(bus.publish(subjects.event(namespace, 'test.order'), { n }, { msgId: randomUUID() }));
      // Some in this turn, some in later callbacks of the same and of later turns, some after timers.
      for (let n = 0; n < 300; n++) {
        if (n % 3 === 0) publish(n);
        else if (n % 3 === 1) await new Promise<void>((resolve) => setImmediate(() => (publish(n), resolve())));
        else await new Promise<void>((resolve) => setTimeout(() => (publish(n), resolve()), 0));
      }
      await Promise.all(sent);
      await eventually(async () => got.length === 300, 10_000);
      expect(got).toEqual(Array.from({ length: 300 }, (_, n) => n));
    } finally {
      await consumer.stop();
    }
  });
});
