import { describe, expect, it } from 'vitest';
import { KvConflictError, type Bus, type KvStore } from '@aex/platform';
import { kvOf } from './kv-stub.js';
import { IdempotencyKeyBinding } from '../src/guards/idempotency-keys.js';

// D5.6 at the gateway, with the KV bucket stubbed (the e2e tests use JetStream's): which answers a
// keyed request gets from the binding, and that a store it cannot reach refuses rather than lets through.

const binding = (kv: KvStore, budgetMs?: number) => IdempotencyKeyBinding.create({ namespace: 't', kv: async () => kv } as unknown as Bus, 48, budgetMs);
const ctx = (fingerprint: string, key = 'k-1', scope = 'agent:a') => ({ key, scope, fingerprint });

describe('binding an Idempotency-Key to its first request (D5.6)', () => {
  it('lets the first request and its repeats through', async () => {
    const keys = await binding(kvOf());
    for (let i = 0; i < 3; i++) await expect(keys.bind(ctx('f1'))).resolves.toBeUndefined();
  });

  it('refuses another request under the key with 422 IDEMPOTENCY_KEY_REUSED', async () => {
    const keys = await binding(kvOf());
    await keys.bind(ctx('f1'));
    await expect(keys.bind(ctx('f2'))).rejects.toMatchObject({ status: 422, entries: [{ code: 'IDEMPOTENCY_KEY_REUSED', field: '/headers/idempotency-key' }] });
  });

  it('keeps scopes apart', async () => {
    const kv = kvOf();
    const keys = await binding(kv);
    await expect(keys.bind(ctx('f1', 'k', 'agent:a'))).resolves.toBeUndefined();
    // The same key in another scope, for another request: bound on its own, not a reuse.
    await expect(keys.bind(ctx('f2', 'k', 'agent:b'))).resolves.toBeUndefined();
    expect(await kv.keys()).toHaveLength(2);
    // Each stays bound to its own request.
    await expect(keys.bind(ctx('f2', 'k', 'agent:a'))).rejects.toMatchObject({ status: 422 });
    await expect(keys.bind(ctx('f1', 'k', 'agent:b'))).rejects.toMatchObject({ status: 422 });
  });

  it('refuses with 503 and Retry-After when the store cannot be reached for its whole budget, binding nothing', async () => {
    let attempts = 0;
    const down = await binding(kvOf({ create: async () => (attempts++, Promise.reject(new Error('no responders'))) }), 1_000);
    await expect(down.bind(ctx('f1'))).rejects.toMatchObject({ status: 503, entries: [{ code: 'SERVICE_UNAVAILABLE', details: { retryAfterSeconds: 1 } }] });
    expect(attempts).toBeGreaterThan(1); // tried again through what may be a leader election
    const unreadable = await binding(kvOf({ create: async (k) => Promise.reject(new KvConflictError(k)), get: async () => Promise.reject(new Error('timeout')) }), 1_000);
    await expect(unreadable.bind(ctx('f1'))).rejects.toMatchObject({ status: 503 });
  });

  it('binds through a store that fails for a moment (a leader election), once it answers again', async () => {
    let failing = 3;
    const store = new Map<string, string>();
    const flaky = await binding(kvOf({
      create: async (k, v) => {
        if (failing-- > 0) throw new Error('no responders');
        store.set(k, v);
        return 1;
      },
    }), 5_000);
    await flaky.bind(ctx('f1'));
    expect(store.size).toBe(1);
  });
});
