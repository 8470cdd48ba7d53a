import { describe, expect, it } from 'vitest';
import type { Bus, KvStore } from '../src/bus/types.js';
import { ReplicaCaches } from '../src/caches/replica-caches.js';
import { testLogger } from '../src/testing/index.js';

// A burst of changes shares listings of the gateway registry, each started after the changes it serves.

function fakeBus(registered: () => string[]) {
  const listings: { startedAt: number; replicas: string[] }[] = [];
  const told: string[] = [];
  let tick = 0;
  const registry = {
    keys: async () => {
      const listing = { startedAt: ++tick, replicas: registered() };
      listings.push(listing);
      await new Promise((r) => setTimeout(r, 30));
      return listing.replicas;
    },
  } as unknown as KvStore;
  const bus = {
    namespace: 'gc',
    kv: async () => registry,
    request: async (subject: string) => void told.push(subject),
  } as unknown as Bus;
  return { bus, listings, told, now: () => tick };
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
    await new Promise((r) => setTimeout(r, 5));
    // Registered after the first listing began: the forgets asked from now on must reach it.
    replicas = ['a', 'b'];
    await Promise.all([first, ...Array.from({ length: 9 }, forget)]);
    expect(fake.listings.map((l) => l.replicas)).toEqual([['a'], ['a', 'b']]);
    for (const t of asked.slice(1)) expect(fake.listings[1]!.startedAt).toBeGreaterThan(t);
    // Every forget told every replica its listing named: b by the nine asked after it registered.
    expect(fake.told.filter((s) => s.endsWith('.a.forget'))).toHaveLength(10);
    expect(fake.told.filter((s) => s.endsWith('.b.forget'))).toHaveLength(9);
  });

  it('starts a new listing for a forget asked after the last one ended', async () => {
    const fake = fakeBus(() => ['a']);
    const caches = await ReplicaCaches.open(fake.bus, testLogger());
    await caches.forget({ keyHashes: [], agentIds: ['x'] });
    await caches.forget({ keyHashes: [], agentIds: ['y'] });
    expect(fake.listings).toHaveLength(2);
  });
});
