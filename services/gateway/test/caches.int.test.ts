import { describe, expect, it } from 'vitest';
import { GATEWAY_CACHES, names } from '@aex/contracts';
import { agentTag, CacheMembership, keyTag, LocalCache, type Bus } from '@aex/platform';
import { testLogger } from '@aex/platform/testing';
import { RateLimiter } from '../src/guards/rate-limit.js';
import { bus, cleanups } from './bus-kit.js';

// The replica's own memory (docs/gateway-caches.md) and the limiter's leases, on real
// NATS JetStream. Identity's side (telling every replica, fencing a silent one) is exercised through
// whole exchanges in test/e2e/gateway-caches.test.ts.

async function member(b: Bus, clock?: () => number) {
  const m = await CacheMembership.start(b, testLogger(), clock);
  cleanups.push(() => m.stop());
  return m;
}

/** What identity sends to one replica. */
const tell = (b: Bus, m: CacheMembership, what: unknown) => b.request(GATEWAY_CACHES.forgetSubject(b.namespace, m.replicaId), what, { timeoutMs: 2000 });

describe('a replica’s own memory (D2.5)', () => {
  it('forgets the entries tagged with what identity names, and only those', async () => {
    const b = await bus();
    const m = await member(b);
    const cache = new LocalCache<string>(m, { maxEntries: 100, ttlMs: 60_000 });
    cache.begin()('k1', [keyTag('h1'), agentTag('a1')], 'one');
    cache.begin()('k2', [keyTag('h2'), agentTag('a2')], 'two');
    cache.begin()('v1', [agentTag('a1')], 'profile of a1');
    expect(await tell(b, m, { keyHashes: [], agentIds: ['a1'] })).toEqual({ ok: true });
    expect(cache.get('k1')).toBeUndefined();
    expect(cache.get('v1')).toBeUndefined();
    expect(cache.get('k2')).toBe('two');
    await tell(b, m, { keyHashes: ['h2'], agentIds: [] });
    expect(cache.get('k2')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('does not store what a lookup read before a change it was told of', async () => {
    const b = await bus();
    const m = await member(b);
    const cache = new LocalCache<string>(m, { maxEntries: 100, ttlMs: 60_000 });
    const fill = cache.begin();
    await tell(b, m, { keyHashes: ['unrelated'], agentIds: [] });
    fill('k', [keyTag('h')], 'read before the change');
    expect(cache.get('k')).toBeUndefined();
    cache.begin()('k', [keyTag('h')], 'read after');
    expect(cache.get('k')).toBe('read after');
  });

  it('forgets everything on an invalidation it cannot read', async () => {
    const b = await bus();
    const m = await member(b);
    const cache = new LocalCache<string>(m, { maxEntries: 100, ttlMs: 60_000 });
    cache.begin()('k', [keyTag('h')], 'v');
    await tell(b, m, { keyHashes: 'not a list' });
    expect(cache.get('k')).toBeUndefined();
  });

  it('answers from memory only within the lease of its last accepted renewal', async () => {
    const b = await bus();
    let now = 1_000_000;
    const m = await member(b, () => now);
    const cache = new LocalCache<string>(m, { maxEntries: 100, ttlMs: 600_000 }, () => now);
    cache.begin()('k', [keyTag('h')], 'v');
    expect(cache.get('k')).toBe('v');
    // No renewal is accepted in this (manual) time: the lease runs out, and with it the memory.
    now += GATEWAY_CACHES.leaseMs;
    expect(m.usable()).toBe(false);
    expect(cache.get('k')).toBeUndefined();
  });

  it('empties its memory when fenced, then lists itself again', async () => {
    const b = await bus();
    const m = await member(b);
    const cache = new LocalCache<string>(m, { maxEntries: 100, ttlMs: 60_000 });
    cache.begin()('k', [keyTag('h')], 'v');
    const registry = await b.kv(GATEWAY_CACHES.registry(b.namespace), { ttlMs: GATEWAY_CACHES.registryTtlMs });
    await registry.delete(m.replicaId);
    await expect.poll(async () => (await registry.get(m.replicaId)) !== null, { timeout: 3 * GATEWAY_CACHES.heartbeatMs, interval: 50 }).toBe(true);
    expect(cache.size).toBe(0);
    expect(m.usable()).toBe(true);
  });

  it('empties its memory when a renewal is accepted after its lease ran out (a fence it missed may not have been written)', async () => {
    const b = await bus();
    let now = 1_000_000;
    const m = await member(b, () => now);
    const cache = new LocalCache<string>(m, { maxEntries: 100, ttlMs: 600_000 }, () => now);
    cache.begin()('k', [keyTag('h')], 'v');
    const renewed = await b.kv(GATEWAY_CACHES.registry(b.namespace), { ttlMs: GATEWAY_CACHES.registryTtlMs });
    const revision = async () => (await renewed.get(m.replicaId))!.revision;
    // The entry is still the replica's (nothing fenced it), but its lease lapsed: no renewal was accepted in time.
    now += GATEWAY_CACHES.leaseMs;
    const before = await revision();
    await expect.poll(revision, { timeout: 3 * GATEWAY_CACHES.heartbeatMs, interval: 50 }).toBeGreaterThan(before);
    expect(m.usable()).toBe(true);
    expect(cache.size).toBe(0);
    // Renewals within the lease keep memory.
    cache.begin()('k', [keyTag('h')], 'v again');
    const next = await revision();
    await expect.poll(revision, { timeout: 3 * GATEWAY_CACHES.heartbeatMs, interval: 50 }).toBeGreaterThan(next);
    expect(cache.get('k')).toBe('v again');
  });

  it('bounds its memory: entries expire, and the oldest go first when full', async () => {
    const b = await bus();
    let now = 0;
    const m = await member(b);
    const cache = new LocalCache<string>(m, { maxEntries: 2, ttlMs: 1000 }, () => now);
    for (const k of ['a', 'b', 'c']) cache.begin()(k, [keyTag(k)], k);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 'b', 'c']);
    now += 1000;
    expect(cache.get('b')).toBeUndefined();
  });
});

describe('D4 token buckets taken ahead in leases', () => {
  const limits = { read: 1000, write: 10, discovery: 5, key_rotation: 5, accounts_ip: 5, public_ip: 5, auth_failures_ip: 5 };

  async function sharedTokens(b: Bus, key: string): Promise<number> {
    const kv = await b.kv(names.bucket(b.namespace, 'rate_limits'), { ttlMs: 120_000 });
    const e = await kv.get(key);
    return e ? (JSON.parse(e.value) as { tokens: number }).tokens : Number.NaN;
  }

  /** A limiter on `b` with `clock`, stopped (its leases given back) after the test. */
  async function limiterOn(b: Bus, clock: () => number, groups: typeof limits = limits): Promise<RateLimiter> {
    const limiter = await RateLimiter.create(b, groups, clock);
    cleanups.push(() => limiter.stop());
    return limiter;
  }

  it('takes what the last quarter second asked for ahead, spends it locally, and gives back what is left', async () => {
    const b = await bus();
    let now = 1_700_000_000_000;
    const limiter = await limiterOn(b, () => now);
    for (let i = 0; i < 20; i++) expect((await limiter.take('read', 'hot')).allowed).toBe(true);
    expect(await sharedTokens(b, 'read.hot')).toBe(980);
    now += 250; // a new period: the last one asked for 20
    expect((await limiter.take('read', 'hot')).allowed).toBe(true);
    // One for this request, twenty more leased; the refill of 250 ms (~4 tokens) counted too.
    const afterLease = await sharedTokens(b, 'read.hot');
    expect(afterLease).toBeCloseTo(980 + (1000 / 60_000) * 250 - 21, 6);
    const local = [];
    for (let i = 0; i < 12; i++) local.push(await limiter.take('read', 'hot'));
    expect(local.every((r) => r.allowed)).toBe(true);
    expect(await sharedTokens(b, 'read.hot')).toBe(afterLease); // spent without the store
    // Remaining counts what the replica still holds: it falls by one per request.
    expect(local.map((r) => r.remaining)).toEqual(Array.from({ length: 12 }, (_, i) => Math.floor(afterLease + 19 - i)));
    // Past the lease, the eight not spent go back to the store (with 300 ms of refill).
    now += 300;
    await expect.poll(() => sharedTokens(b, 'read.hot'), { timeout: 2000 }).toBeCloseTo(afterLease + 8 + (1000 / 60_000) * 300, 6);
  });

  it('leases never more than half of what the bucket holds, and nothing from one below two tokens', async () => {
    const b = await bus();
    let now = 1_700_000_000_000;
    const limiter = await limiterOn(b, () => now);
    for (let i = 0; i < 6; i++) await limiter.take('write', 'low');
    now += 250;
    expect((await limiter.take('write', 'low')).allowed).toBe(true);
    // 10 − 7 + refill (0.04) = 3.04 left: the six the last period asked for are cut to one.
    expect(await sharedTokens(b, 'write.low')).toBeCloseTo(2 + (10 / 60_000) * 250, 6);
    expect((await limiter.take('write', 'low')).allowed).toBe(true); // the leased one
    expect((await limiter.take('write', 'low')).allowed).toBe(true);
    // 2.04 − 1 = 1.04: nothing to spare, the store holds the rest.
    expect(await sharedTokens(b, 'write.low')).toBeCloseTo(1 + (10 / 60_000) * 250, 6);
  });

  it('never serves more than the bucket across two replicas holding leases', async () => {
    const b = await bus();
    let now = 1_700_000_000_000;
    const clock = () => now;
    const replicas = await Promise.all([limiterOn(b, clock, { ...limits, read: 600 }), limiterOn(b, clock, { ...limits, read: 600 })]);
    for (let i = 0; i < 40; i++) await replicas[i % 2]!.take('read', 'shared');
    now += 250; // both now lease ahead
    const burst = await Promise.all(Array.from({ length: 1200 }, (_, i) => replicas[i % 2]!.take('read', 'shared')));
    const allowed = 40 + burst.filter((r) => r.allowed).length;
    // The capacity and the refill of those 250 ms (2.5 tokens), nothing more — and nothing less.
    expect(allowed).toBe(600 + 2);
  });

  /** The bus with its KV reads of the limiter's bucket counted. */
  function countingReads(b: Bus): { bus: Bus; reads: () => number } {
    let reads = 0;
    const counted = new Proxy(b, {
      get: (target, prop, receiver) => prop !== 'kv' ? Reflect.get(target, prop, receiver) : async (...args: Parameters<Bus['kv']>) => {
        const kv = await target.kv(...args);
        return { ...kv, get: (key: string) => (reads++, kv.get(key)), update: kv.update.bind(kv), create: kv.create.bind(kv) };
      },
    });
    return { bus: counted, reads: () => reads };
  }

  it('takes from the bucket it wrote last without reading it again, and reads it when another wrote since', async () => {
    const b = await bus();
    const { bus: counted, reads } = countingReads(b);
    let now = 1_700_000_000_000;
    const limiter = await limiterOn(counted, () => now);
    // A bucket taken now and then (no lease): one compare-and-set each, a read only for the first.
    for (let i = 0; i < 4; i++, now += 1_000) expect((await limiter.take('write', 'calm')).allowed).toBe(true);
    expect(reads()).toBe(1);
    expect(await sharedTokens(b, 'write.calm')).toBeCloseTo(10 - 4 + (10 / 60) * 3, 6);
    // Another replica writes: the remembered write is stale, its compare-and-set fails, the store is read.
    const other = await limiterOn(b, () => now);
    expect((await other.take('write', 'calm')).allowed).toBe(true);
    expect((await limiter.take('write', 'calm')).allowed).toBe(true);
    expect(reads()).toBe(2);
    expect(await sharedTokens(b, 'write.calm')).toBeCloseTo(10 - 6 + (10 / 60) * 4, 6);
  });

  it('refuses only on what the store holds, never on a stale write of its own (tokens given back since)', async () => {
    const b = await bus();
    const now = 1_700_000_000_000;
    const limiter = await limiterOn(b, () => now);
    for (let i = 0; i < 10; i++) expect((await limiter.take('write', 'drained')).allowed).toBe(true);
    expect(await sharedTokens(b, 'write.drained')).toBe(0);
    // Elsewhere the bucket gets tokens back (another replica's refunds): what this one wrote last says empty.
    const kv = await b.kv(names.bucket(b.namespace, 'rate_limits'), { ttlMs: 120_000 });
    await kv.put('write.drained', JSON.stringify({ tokens: 3, atMs: now }));
    const taken = await Promise.all(Array.from({ length: 4 }, () => limiter.take('write', 'drained')));
    expect(taken.map((t) => t.allowed)).toEqual([true, true, true, false]);
    expect(await sharedTokens(b, 'write.drained')).toBe(0);
  });
});
