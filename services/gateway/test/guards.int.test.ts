import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { AppError } from '@aex/contracts';
import { loadConfig, type Bus } from '@aex/platform';
import { createTestBus, testLogger } from '@aex/platform/testing';
import { buildGateway } from '../src/app.js';
import { IdempotencyStore } from '../src/guards/idempotency.js';
import { RateLimiter } from '../src/guards/rate-limit.js';

// The gateway's shared guards on real JetStream KV: limits shared by replicas and failing closed
// (D4.4), and idempotency claims (D5.3).

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function bus(): Promise<Bus> {
  const t = await createTestBus('jetstream');
  cleanups.push(() => t.dispose());
  return t.bus;
}

const limits = { read: 5, write: 5, discovery: 5, key_rotation: 5, accounts_ip: 5, public_ip: 5 };

describe('D4 rate limiter', () => {
  it('shares one bucket between replicas', async () => {
    const b = await bus();
    const [r1, r2] = await Promise.all([RateLimiter.create(b, limits), RateLimiter.create(b, limits)]);
    const allowed: boolean[] = [];
    for (let i = 0; i < 6; i++) allowed.push((await (i % 2 ? r1 : r2).take('read', 'agent-1')).allowed);
    expect(allowed).toEqual([true, true, true, true, true, false]);
    expect((await r1.take('read', 'agent-2')).allowed).toBe(true);
  });

  it('never hands out more tokens than the limit under concurrent takes (compare-and-set)', async () => {
    const b = await bus();
    const replicas = await Promise.all(Array.from({ length: 3 }, () => RateLimiter.create(b, { ...limits, write: 10 })));
    const results = await Promise.all(Array.from({ length: 24 }, (_, i) => replicas[i % 3]!.take('write', 'hot')));
    const granted = results.filter((r) => r.allowed).length;
    expect(granted).toBeLessThanOrEqual(10);
    expect(granted).toBeGreaterThan(0);
    // Contention is never reported as an outage: every take answered allowed or refused.
    expect(results.every((r) => r.limit === 10)).toBe(true);
  });

  it('fails closed with 503 RATE_LIMITER_UNAVAILABLE and Retry-After: 1 when NATS is unreachable', async () => {
    const t = await createTestBus('jetstream');
    const config = loadConfig({}, { BUS_NAMESPACE: t.bus.namespace });
    const app = await buildGateway({ bus: t.bus, config, logger: testLogger() });
    expect((await app.inject({ method: 'GET', url: '/v1/protocol' })).statusCode).toBe(200);
    await t.dispose();
    const res = await app.inject({ method: 'GET', url: '/v1/protocol' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.json()).toMatchObject({ data: null, errors: [{ code: 'RATE_LIMITER_UNAVAILABLE' }] });
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
    await app.close();
  });
});

describe('client IP behind a proxy', () => {
  it('takes the IP of per-IP limits from X-Forwarded-For only with TRUST_PROXY=true', async () => {
    const b = await bus();
    const config = loadConfig({}, { BUS_NAMESPACE: b.namespace, RATE_LIMIT_PUBLIC_PER_MIN_PER_IP: '1', TRUST_PROXY: 'true' });
    const app = await buildGateway({ bus: b, config, logger: testLogger() });
    const get = (ip: string) => app.inject({ method: 'GET', url: '/v1/protocol', headers: { 'x-forwarded-for': ip } }).then((r) => r.statusCode);
    expect([await get('198.51.100.1'), await get('198.51.100.1'), await get('198.51.100.2')]).toEqual([200, 429, 200]);
    await app.close();
  });
});

describe('D5 idempotency claims', () => {
  it('answers a repeat while the first still runs with IDEMPOTENCY_KEY_IN_USE, then replays once finished', async () => {
    const store = await IdempotencyStore.create(await bus(), 48, 60_000);
    const key = randomUUID();
    const fp = IdempotencyStore.fingerprint('POST', '/v1/x', Buffer.from('{}'));
    const first = await store.begin('agent', key, fp);
    expect(first.kind).toBe('proceed');
    await expect(store.begin('agent', key, fp)).rejects.toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE' });
    if (first.kind === 'proceed') await first.finish(201, '{"data":1}');
    expect(await store.begin('agent', key, fp)).toEqual({ kind: 'replay', status: 201, body: '{"data":1}' });
    await expect(store.begin('agent', key, IdempotencyStore.fingerprint('POST', '/v1/x', Buffer.from('{"a":1}')))).rejects.toBeInstanceOf(AppError);
  });

  it('lets a claim abandoned by a dead gateway be taken over', async () => {
    const store = await IdempotencyStore.create(await bus(), 48, 50);
    const key = randomUUID();
    const fp = IdempotencyStore.fingerprint('POST', '/v1/x', undefined);
    await store.begin('agent', key, fp);
    await new Promise((r) => setTimeout(r, 100));
    expect((await store.begin('agent', key, fp)).kind).toBe('proceed');
  });

  it('releases the key after a 5xx so the request can be retried', async () => {
    const store = await IdempotencyStore.create(await bus(), 48, 60_000);
    const key = randomUUID();
    const fp = IdempotencyStore.fingerprint('POST', '/v1/x', undefined);
    const first = await store.begin('agent', key, fp);
    if (first.kind === 'proceed') await first.finish(503, '{}');
    expect((await store.begin('agent', key, fp)).kind).toBe('proceed');
  });
});
