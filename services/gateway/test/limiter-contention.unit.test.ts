import { describe, expect, it } from 'vitest';
import { KvConflictError, StoreUnreachableError, type Bus, type KvEntry, type KvStore } from '@aex/platform';
import { RateLimiter } from '../src/guards/rate-limit.js';
import { StandInBuckets } from '../src/guards/rate-limit-store.js';

// D4: a store that answers every read but whose every compare-and-set is lost — other gateways
// writing the same bucket, or a copy of the replicated bucket that lags its leader and keeps giving an
// old revision — is not an outage: the bucket is served by a stand-in, as through a leader election,
// and charged to the store once a write gets through. Only a store that cannot be read fails closed.

const limits = { read: 100, write: 100, discovery: 100, accounts_ip: 100, auth_failures_ip: 100, key_rotation: 100, public_ip: 100 };

function fakeStore(opts: { readable: boolean }): { kv: KvStore; writes: () => number } {
  let entry: KvEntry | null = { value: JSON.stringify({ tokens: 100, atMs: Date.now() }), revision: 1 };
  let writesAccepted = 0;
  let losing = true;
  const get = async () => {
    if (!opts.readable) throw new Error('no responders');
    return entry;
  };
  const kv = {
    get,
    getLatest: get,
    create: async () => {
      throw new KvConflictError('exists');
    },
    update: async (_key: string, value: string) => {
      if (losing) throw new KvConflictError('wrong last sequence');
      entry = { value, revision: entry!.revision + 1 };
      writesAccepted++;
      return entry.revision;
    },
    put: async () => 1,
    delete: async () => undefined,
    keys: async () => [],
  } as unknown as KvStore;
  return { kv: Object.assign(kv, { stopLosing: () => (losing = false) }), writes: () => writesAccepted };
}

const limiterOn = (kv: KvStore) => RateLimiter.create({ namespace: 't', kv: async () => kv } as unknown as Bus, limits);

describe('D4: the rate limiter when every compare-and-set is lost', () => {
  it('serves the request from a stand-in, not 503, and charges the store once a write gets through', async () => {
    const store = fakeStore({ readable: true });
    const limiter = await limiterOn(store.kv);
    try {
      const decision = await limiter.take('write', 'agent-1');
      expect(decision).toMatchObject({ allowed: true });
      (store.kv as unknown as { stopLosing: () => void }).stopLosing();
      // The stand-in settles every quarter second: what it served reaches the store.
      await new Promise((r) => setTimeout(r, 1_000));
      expect(store.writes()).toBeGreaterThan(0);
      const stored = JSON.parse((await store.kv.get('any'))!.value) as { tokens: number };
      expect(stored.tokens).toBeLessThan(100);
    } finally {
      await limiter.stop();
    }
  });

  it('fails closed, 503 RATE_LIMITER_UNAVAILABLE, when the store cannot be read either', async () => {
    const limiter = await limiterOn(fakeStore({ readable: false }).kv);
    try {
      await expect(limiter.take('write', 'agent-2')).rejects.toMatchObject({ code: 'RATE_LIMITER_UNAVAILABLE' });
    } finally {
      await limiter.stop();
    }
  }, 30_000);
});

describe('D4.4: a stand-in bucket under steady traffic', () => {
  it('hands the bucket back to the store at its first charge written, charging what it served meanwhile', async () => {
    let entry: KvEntry | null = { value: JSON.stringify({ tokens: 100, atMs: Date.now() }), revision: 1 };
    let writable = false;
    const get = async () => entry;
    // Every write takes a few milliseconds, during which requests keep being served.
    const update = async (_key: string, value: string, revision: number) => {
      await new Promise((r) => setTimeout(r, 5));
      if (!writable) throw new StoreUnreachableError('no leader');
      if (revision !== entry!.revision) throw new KvConflictError('wrong last sequence');
      entry = { value, revision: revision + 1 };
      return entry.revision;
    };
    const kv = { get, getLatest: get, update } as unknown as KvStore;
    const frozen = Date.now();
    const standIns = new StandInBuckets(kv, () => frozen);
    let served = 0;
    const takeSome = async (n: number) => {
      served += (await standIns.take('write.a', 100, n)).filter((r) => r.allowed).length;
    };
    await takeSome(10);
    await standIns.settle(); // no writes yet: the stand-in keeps the bucket
    expect(standIns.has('write.a')).toBe(true);

    writable = true;
    // Requests keep coming while the charge is on its way.
    const settling = standIns.settle();
    await takeSome(3);
    await new Promise((r) => setTimeout(r, 2));
    await takeSome(2);
    await settling;
    expect(standIns.has('write.a')).toBe(false);
    expect(served).toBe(15);
    // Everything served is charged: the store never holds more than it should.
    expect((JSON.parse(entry!.value) as { tokens: number }).tokens).toBe(85);
  });
});
