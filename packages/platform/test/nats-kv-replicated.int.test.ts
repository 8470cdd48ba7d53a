import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsBus } from '../src/bus/nats-bus.js';
import { KvConflictError, type KvStore } from '../src/bus/types.js';
import { NatsCluster, testNamespace, type ClusterNode } from '../src/testing/index.js';

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
      // The next round writes on the winner's revision.
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

// D2.5 reads the API-key cache to decide whether a key still stands for what it did: a read must see
// every write acknowledged before it began. A bucket's followers answer "direct" gets from what they
// have applied, and a node that has just come back is minutes of writes behind: reads go to the leader.
describe('KV reads on a replicated bucket', () => {
  let cluster: NatsCluster;
  const buses: NatsBus[] = [];
  afterAll(async () => {
    await buses[0]?.destroyNamespace();
    for (const b of buses) await b.close();
    await cluster?.stop();
  });

  for (const [how, reads] of [['read', 'leader'], ['read from the leader (getLatest) of a bucket read from any copy', 'any']] as const) it(`see every acknowledged write, ${how}, through a node that is catching up after a restart`, async () => {
    for (const b of buses.splice(0)) await b.close().catch(() => undefined);
    await cluster?.stop();
    cluster = await NatsCluster.start(3);
    const namespace = testNamespace();
    const [n1, n2, n3] = cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
    const writerBus = await connectSoon(() => NatsBus.connect(`${n1.url},${n2.url}`, namespace, 'kv-writer', undefined, { replicas: 3 }));
    buses.push(writerBus);
    const writer = await writerBus.kv(`${namespace}_reads`, { reads });
    const reader = await (async () => {
      const bus = await connectSoon(() => NatsBus.connect(n3.url, namespace, 'kv-reader', undefined, { replicas: 3 }));
      buses.push(bus);
      return bus.kv(`${namespace}_reads`, { reads });
    })();
    const readLatest = (key: string) => (reads === 'any' ? reader.getLatest(key) : reader.get(key));
    // Puts go on through the bucket's leader election after a kill (4–9 s on nats-server 2.9).
    const put = (key: string, value: string) => connectSoon(() => writer.put(key, value), 80);
    await put('k', '0');
    await cluster.kill(n3.name);
    // While n3 is down the key moves on, with enough writes that catching up takes n3 a while.
    const big = 'x'.repeat(2_000);
    for (let i = 1; i <= 2_000; i++) await put(`fill${i % 500}`, big);
    let written = 0;
    await put('k', String(++written));
    await cluster.restart(n3.name);
    const stale: string[] = [];
    const until = Date.now() + 4_000;
    while (Date.now() < until) {
      const acknowledged = written;
      const read = await readLatest('k').catch(() => undefined);
      if (read && Number(read.value) < acknowledged) stale.push(`${read.value} < ${acknowledged}`);
      await put('k', String(++written));
    }
    expect(written).toBeGreaterThan(10);
    expect(stale).toEqual([]);
  }, 120_000);
});

async function connectSoon<T>(connect: () => Promise<T>, attempts = 20): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect();
    } catch (err) {
      if (attempt === attempts) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
