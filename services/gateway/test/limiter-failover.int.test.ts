import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { names } from '@aex/contracts';
import { NatsBus } from '@aex/platform';
import { NatsCluster, testNamespace } from '@aex/platform/testing';
import { RateLimiter } from '../src/guards/rate-limit.js';

// D4.4 on the deployed shape: the token buckets in a KV bucket kept on three JetStream nodes
// (NATS_REPLICAS=3), two gateway replicas, and the node leading the bucket's stream killed. Real
// clock, real cluster, nothing stubbed.

const LIMIT = 600; // a minute's capacity; refill 10 tokens a second
const limits = { read: LIMIT, write: LIMIT, discovery: LIMIT, key_rotation: LIMIT, accounts_ip: LIMIT, public_ip: LIMIT, auth_failures_ip: LIMIT };

describe('D4.4 rate limiter through the loss of a NATS node (three replicas)', () => {
  let cluster: NatsCluster;
  beforeAll(async () => {
    cluster = await NatsCluster.start(3);
  }, 30_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  /**
   * A gateway replica's bus, with three copies of everything. A cluster just started (or a node
   * just restarted) may not place a replicated stream at once: connecting is tried again then.
   */
  async function busOf(namespace: string, name: string): Promise<NatsBus> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await NatsBus.connect(cluster.url, namespace, name, undefined, { replicas: 3 });
      } catch (err) {
        if (attempt === 20) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  /** The node leading the stream of the limiter's KV bucket. */
  async function leaderOf(namespace: string): Promise<string> {
    const { leader, replicas } = await cluster.streamLeader(`KV_${names.bucket(namespace, 'rate_limits')}`);
    expect(replicas).toBe(3);
    return leader!;
  }

  /** The bucket's tokens in the store now (refilled since its entry was written). */
  async function storeTokens(bus: NatsBus, key: string): Promise<number> {
    const kv = await bus.kv(names.bucket(bus.namespace, 'rate_limits'), { ttlMs: 120_000 });
    const e = await kv.get(key);
    const s = JSON.parse(e!.value) as { tokens: number; atMs: number };
    return Math.min(LIMIT, s.tokens + ((Date.now() - s.atMs) * LIMIT) / 60_000);
  }

  it('keeps answering within seconds with the leader killed, no 503, and charges the store what it served', async () => {
    const namespace = testNamespace();
    // Each gateway replica on a connection of its own, listing every node.
    const buses = [await busOf(namespace, 'gw-1'), await busOf(namespace, 'gw-2')];
    const limiters = [await RateLimiter.create(buses[0]!, limits), await RateLimiter.create(buses[1]!, limits)];
    const started = Date.now();
    let served = 0;
    const take = async (i: number) => {
      const t0 = performance.now();
      const r = await limiters[i % 2]!.take('read', 'agent-failover');
      if (r.allowed) served++;
      return { ms: performance.now() - t0, allowed: r.allowed };
    };
    for (let i = 0; i < 50; i++) expect((await take(i)).allowed).toBe(true);

    const leader = await leaderOf(namespace);
    await cluster.kill(leader);
    // Ten requests every 100 ms on the two replicas for 8 s: through the election of the next leader.
    const answers: { ms: number; allowed: boolean }[] = [];
    for (let tick = 0; tick < 80; tick++) {
      answers.push(...(await Promise.all(Array.from({ length: 3 }, (_, i) => take(tick * 3 + i)))));
      await new Promise((r) => setTimeout(r, 100)); // a steady request rate, as clients keep sending
    }
    // Every request answered (a 503 would have thrown), none refused, none waiting more than 2.5 s.
    expect(answers.filter((a) => !a.allowed)).toHaveLength(0);
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(2_500);
    const slow = answers.filter((a) => a.ms > 200).length;
    expect(slow).toBeLessThanOrEqual(6); // at most the batches that met the dead leader, a few per replica

    // The store takes writes again under its next leader, and is charged everything the replicas served.
    expect(await leaderOf(namespace)).not.toBe(leader);
    await Promise.all(limiters.map((l) => l.stop()));
    // Every token served was taken from the store or charged to it: never more left than that. Fewer
    // only by the leases held when the leader died, whose unspent tokens could not go back.
    const expected = LIMIT - served + ((Date.now() - started) * LIMIT) / 60_000;
    const left = await storeTokens(buses[0]!, 'read.agent-failover');
    expect(left).toBeLessThanOrEqual(expected + 1);
    expect(left).toBeGreaterThan(expected - 40);
    await cluster.restart(leader);
    await buses[0]!.destroyNamespace();
    await Promise.all(buses.map((b) => b.close()));
  }, 60_000);

  it('fails closed with 503 RATE_LIMITER_UNAVAILABLE within seconds when no node answers', async () => {
    const namespace = testNamespace();
    const bus = await busOf(namespace, 'gw-alone');
    const limiter = await RateLimiter.create(bus, limits);
    expect((await limiter.take('read', 'agent-dark')).allowed).toBe(true);
    const names = cluster.nodes.map((n) => n.name);
    for (const name of names) await cluster.kill(name);
    const t0 = performance.now();
    await expect(limiter.take('read', 'agent-dark')).rejects.toMatchObject({ code: 'RATE_LIMITER_UNAVAILABLE', status: 503 });
    expect(performance.now() - t0).toBeLessThan(3_000);
    await Promise.all(names.map((name) => cluster.restart(name))); // together: one node alone has no majority
    await limiter.stop();
    await bus.destroyNamespace();
    await bus.close();
  }, 60_000);
});
