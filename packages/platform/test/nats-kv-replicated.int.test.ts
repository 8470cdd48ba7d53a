import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsBus } from '../src/bus/nats-bus.js';
import { KvConflictError, type KvStore } from '../src/bus/types.js';
import { NatsCluster, testNamespace } from '../src/testing/index.js';

// Compare-and-set on a KV bucket kept on three JetStream nodes (NATS_REPLICAS=3): what the rate
// limiter (D4.4), the Idempotency-Key binding (D5.6) and the replica registry rely on. nats-server
// 2.9 lets two writes on one revision both succeed there unless they carry the same message id.
describe('KV compare-and-set on a replicated bucket', () => {
  let cluster: NatsCluster;
  let buses: NatsBus[];
  let stores: KvStore[];
  beforeAll(async () => {
    cluster = await NatsCluster.start(3);
    const namespace = testNamespace();
    buses = [];
    // Four clients, as four replicas would be. A cluster just started may not place its first
    // replicated stream at once: connecting is tried again then.
    for (let i = 0; i < 4; i++) buses.push(await connectSoon(() => NatsBus.connect(cluster.url, namespace, `kv-${i}`, undefined, { replicas: 3 })));
    stores = [];
    for (const b of buses) stores.push(await b.kv(`${namespace}_cas`));
  }, 60_000);
  afterAll(async () => {
    await buses?.[0]?.destroyNamespace();
    for (const b of buses ?? []) await b.close();
    await cluster?.stop();
  });

  it('lets exactly one of four writes on the same revision win, every time (100 rounds)', async () => {
    let revision = await stores[0]!.create('k', '0');
    const winners: number[] = [];
    for (let round = 0; round < 100; round++) {
      const tries = await Promise.allSettled(stores.map((kv, i) => kv.update('k', `${round}-${i}`, revision)));
      winners.push(tries.filter((t) => t.status === 'fulfilled').length);
      for (const t of tries) if (t.status === 'rejected') expect(t.reason).toBeInstanceOf(KvConflictError);
      // The next round writes on the winner's revision (a read could be answered by a follower not caught up yet).
      const won = tries.find((t): t is PromiseFulfilledResult<number> => t.status === 'fulfilled');
      if (won) revision = won.value;
    }
    expect(winners).toEqual(Array.from({ length: 100 }, () => 1));
  });

  it('creates a key once when four clients create it together, and again after it was deleted', async () => {
    for (let round = 0; round < 20; round++) {
      const key = `c${round}`;
      const tries = await Promise.allSettled(stores.map((kv, i) => kv.create(key, String(i))));
      expect(tries.filter((t) => t.status === 'fulfilled')).toHaveLength(1);
      await stores[0]!.delete(key);
      const again = await Promise.allSettled(stores.map((kv, i) => kv.create(key, String(i))));
      expect(again.filter((t) => t.status === 'fulfilled')).toHaveLength(1);
    }
  });
});

async function connectSoon<T>(connect: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect();
    } catch (err) {
      if (attempt === 20) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
