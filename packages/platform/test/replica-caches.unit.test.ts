import { describe, expect, it } from 'vitest';
import type { Bus, KvStore } from '../src/bus/types.js';
import { ReplicaCaches } from '../src/caches/replica-caches.js';
import { testLogger } from '../src/testing/index.js';

// A burst of changes shares listings of the gateway registry, each started after the changes it serves.

/**
 * A bus whose registry lists the replicas `registered()` names when a listing starts. A listing
 * ends when the test says (`finish`); from then on every listing ends as soon as it starts.
 */
function fakeBus(registered: () => string[]) {
  const listings: { startedAt: number; replicas: string[] }[] = [];
  const told: string[] = [];
  let tick = 0;
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  let started!: () => void;
  const firstStarted = new Promise<void>((r) => (started = r));
  const registry = {
    keys: async () => {
      const listing = { startedAt: ++tick, replicas: registered() };
      listings.push(listing);
      started();
      await finished;
      return listing.replicas;
    },
  } as unknown as KvStore;
  const bus = {
    namespace: 'gc',
    kv: async () => registry,
    request: async (subject: string) => void told.push(subject),
  } as unknown as Bus;
  return { bus, listings, told, now: () => tick, firstStarted, finish };
}

describe('replica caches: listing the replicas', () => {
  it('serves a burst of forgets with two listings, each forget with one started after it was asked', async () => {
    let replicas = ['a'];
    const fake = fakeBus(() => replicas);
    const caches = await ReplicaCaches.open(fake.bus, testLogger());
    const asked: number[] = [];
    const forget = () => {
      asked.push(fake.now());
      return caches.forget({ keyHashes: [], agentIds: ['x'] });
    };
    const first = forget();
    await fake.firstStarted;
    // Registered after the first listing began: the forgets asked from now on must reach it.
    replicas = ['a', 'b'];
    const burst = Array.from({ length: 9 }, forget);
    fake.finish();
    await Promise.all([first, ...burst]);
    expect(fake.listings.map((l) => l.replicas)).toEqual([['a'], ['a', 'b']]);
    for (const t of asked.slice(1)) expect(fake.listings[1]!.startedAt).toBeGreaterThan(t);
    // Every forget told every replica its listing named: b by the nine asked after it registered.
    expect(fake.told.filter((s) => s.endsWith('.a.forget'))).toHaveLength(10);
    expect(fake.told.filter((s) => s.endsWith('.b.forget'))).toHaveLength(9);
  });

  it('starts a new listing for a forget asked after the last one ended', async () => {
    const fake = fakeBus(() => ['a']);
    fake.finish();
    const caches = await ReplicaCaches.open(fake.bus, testLogger());
    await caches.forget({ keyHashes: [], agentIds: ['x'] });
    await caches.forget({ keyHashes: [], agentIds: ['y'] });
    expect(fake.listings).toHaveLength(2);
  });

  it('asks for the listing again when one fails, and tells the replicas it lists (a failed listing proves nothing)', async () => {
    let failures = 2;
    const told: string[] = [];
    const registry = {
      keys: async () => {
        if (failures-- > 0) throw new Error('timeout');
        return ['a', 'b'];
      },
    } as unknown as KvStore;
    const bus = { namespace: 'gc', kv: async () => registry, request: async (subject: string) => void told.push(subject) } as unknown as Bus;
    const caches = await ReplicaCaches.open(bus, testLogger());
    await caches.forget({ keyHashes: ['h'], agentIds: [] });
    expect(failures).toBe(-1);
    expect(told.sort()).toEqual(['gc.gateway.a.forget', 'gc.gateway.b.forget']);
  });
});
