import { describe, expect, it } from 'vitest';
import type { Bus, KvStore } from '@aex/platform';
import { kvOf } from './kv-stub.js';
import { signatureUse, UsedSignatures, USED_SIGNATURE_TTL_MS } from '../src/guards/used-signatures.js';
import { MAX_SKEW_MS } from '../src/domain/signature.js';

// D24.2 at the gateway, with the KV bucket stubbed (signature-replay.test.ts uses JetStream's): which
// use of a signature is its first, and that a store it cannot reach refuses rather than lets through.

let opened: { bucket: string; ttlMs?: number } | undefined;
const store = (kv: KvStore, budgetMs?: number) =>
  UsedSignatures.create({ namespace: 't', kv: async (bucket: string, o: { ttlMs?: number }) => ((opened = { bucket, ...o }), kv) } as unknown as Bus, 'http://x/docs/signing.md', budgetMs);
const sig = (n: number) => signatureUse(Buffer.alloc(64, n));
const key = (k: string) => ({ scope: 'agent:a', key: k });
const replayed = { status: 401, entries: [{ code: 'SIGNATURE_INVALID', details: { reason: 'replayed', docs: 'http://x/docs/signing.md' } }] };

describe('a signature is used once (D24.2)', () => {
  it('D24.2: remembers signatures for as long as they can be accepted: two clock windows and a margin', async () => {
    await store(kvOf());
    expect(opened).toEqual({ bucket: 't_used_signatures', ttlMs: USED_SIGNATURE_TTL_MS });
    expect(USED_SIGNATURE_TTL_MS).toBeGreaterThan(2 * MAX_SKEW_MS);
  });

  it('D24.2: lets a signature through once and refuses it after, whatever the request', async () => {
    const used = await store(kvOf());
    await expect(used.use(sig(1), 'r1', undefined)).resolves.toBeUndefined();
    await expect(used.use(sig(1), 'r2', undefined)).rejects.toMatchObject(replayed);
    await expect(used.use(sig(2), 'r3', undefined)).resolves.toBeUndefined();
  });

  it('D24.2: lets the same signature through again with the first request\'s Idempotency-Key only', async () => {
    const used = await store(kvOf());
    await used.use(sig(1), 'r1', key('k1'));
    await expect(used.use(sig(1), 'r2', key('k1'))).resolves.toBeUndefined();
    await expect(used.use(sig(1), 'r3', key('k2'))).rejects.toMatchObject(replayed);
    await expect(used.use(sig(1), 'r4', { scope: 'agent:b', key: 'k1' })).rejects.toMatchObject(replayed);
    await expect(used.use(sig(1), 'r5', undefined)).rejects.toMatchObject(replayed);
  });

  it('D24.2: an RFC 9421 nonce is used once per key id, whatever signature carries it', async () => {
    const used = await store(kvOf());
    const first = signatureUse(Buffer.alloc(64, 1), { keyid: 'did:web:x#key-1', nonce: 'n' });
    const renewed = signatureUse(Buffer.alloc(64, 2), { keyid: 'did:web:x#key-1', nonce: 'n' });
    expect(renewed.entry).toBe(first.entry);
    await used.use(first, 'r1', key('k1'));
    // A new signature under the used nonce is refused, even with the first request's key.
    await expect(used.use(renewed, 'r2', key('k1'))).rejects.toMatchObject(replayed);
    await expect(used.use(first, 'r3', key('k1'))).resolves.toBeUndefined();
    await expect(used.use(signatureUse(Buffer.alloc(64, 2), { keyid: 'did:web:x#key-2', nonce: 'n' }), 'r4', undefined)).resolves.toBeUndefined();
  });

  it('D24.2: an attempt that timed out but was written is found as the request\'s own, not as a replay', async () => {
    const inner = kvOf();
    let first = true;
    const used = await store(kvOf({
      get: inner.get,
      async create(k, v) {
        await inner.create(k, v);
        if (first) {
          first = false;
          return new Promise<number>(() => undefined); // written, but never acknowledged in time
        }
        return 1;
      },
    }), 5_000);
    await expect(used.use(sig(1), 'r1', undefined)).resolves.toBeUndefined();
  });

  it('D24.2: fails closed: 503 with Retry-After when the store cannot be reached for its whole budget', async () => {
    let attempts = 0;
    const down = await store(kvOf({ create: async () => (attempts++, Promise.reject(new Error('no responders'))) }), 1_000);
    await expect(down.use(sig(1), 'r1', undefined)).rejects.toMatchObject({ status: 503, entries: [{ code: 'SERVICE_UNAVAILABLE', details: { retryAfterSeconds: 1 } }] });
    expect(attempts).toBeGreaterThan(1);
  });
});
