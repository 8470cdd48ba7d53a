import { describe, expect, it } from 'vitest';
import type { Principal } from '@aex/contracts';
import type { Bus, CacheMembership, KvStore } from '@aex/platform';
import { ApiKeyAuthenticator } from '../src/guards/auth.js';
import type { AuthFailures } from '../src/guards/auth-failures.js';

// D2.5 through a lost NATS node: the shared API-key cache is a bucket whose leader may be being
// elected, and nats.js would wait 5 s for its answer. A request waits for it at most a second, then
// asks identity, the authority (docs/messaging.md "When a NATS node is lost").

const key = `ae_live_${'a'.repeat(43)}`;
const principal: Principal = { agentId: '7d0c5a0e-8f0e-4a57-9d53-7f7f5c1e2b9a', accountId: '0b7f3f5e-6c1d-4f0e-9a55-3c1f6a7e2d10', isOwner: true, status: 'active', parentAgentId: null, signingKeyPublic: null, expiresAt: null };

function setUp(cache: Partial<KvStore>) {
  let asked = 0;
  const bus = {
    namespace: 't',
    kv: async () => cache as KvStore,
    request: async () => (asked++, { ok: true, status: 200, data: principal }),
  } as unknown as Bus;
  const failures = { check: () => undefined, take: async () => ({ allowed: true, remaining: 1 }), failedAfter: () => undefined, succeeded: () => undefined } as unknown as AuthFailures;
  const membership = { onForget: () => undefined, usable: () => false, epoch: 0 } as unknown as CacheMembership;
  return { auth: ApiKeyAuthenticator.create(bus, failures, 5_000, membership), asked: () => asked };
}

const never = () => new Promise<never>(() => undefined);

describe('the shared API-key cache without a leader', () => {
  it('is not waited for: identity answers instead', async () => {
    // A bucket that never answers (without the bound, the request would wait as long as it does).
    const { auth, asked } = setUp({ get: never, create: never, update: never });
    await expect((await auth).authenticate(`Bearer ${key}`, 'r1', '10.0.0.1')).resolves.toMatchObject({ agentId: principal.agentId });
    expect(asked()).toBe(1);
  });

  it('is used as it is when it answers', async () => {
    const { auth, asked } = setUp({ get: async () => ({ value: JSON.stringify(principal), revision: 3 }) });
    await expect((await auth).authenticate(`Bearer ${key}`, 'r2', '10.0.0.1')).resolves.toMatchObject({ agentId: principal.agentId });
    expect(asked()).toBe(0);
  });
});
