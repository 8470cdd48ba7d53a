import { describe, expect, it } from 'vitest';
import { loadConfig } from '@aex/platform';
import { createTestBus, testLogger } from '@aex/platform/testing';
import { buildGateway } from '../src/service.js';
import { RateLimiter } from '../src/guards/rate-limit.js';
import { bus } from './bus-kit.js';

// The gateway's shared guards on real JetStream KV: limits shared by replicas, exact under bursts
// (coalesced compare-and-set), and failing closed (D4.4).

const limits = { read: 5, write: 5, discovery: 5, key_rotation: 5, accounts_ip: 5, public_ip: 5, auth_failures_ip: 5 };

describe('D4 rate limiter', () => {
  const frozen = () => 1_700_000_000_000;

  it('shares one bucket between replicas', async () => {
    const b = await bus();
    const [r1, r2] = await Promise.all([RateLimiter.create(b, limits), RateLimiter.create(b, limits)]);
    const allowed: boolean[] = [];
    for (let i = 0; i < 6; i++) allowed.push((await (i % 2 ? r1 : r2).take('read', 'agent-1')).allowed);
    expect(allowed).toEqual([true, true, true, true, true, false]);
    expect((await r1.take('read', 'agent-2')).allowed).toBe(true);
  });

  it('serves a burst below the limit in full: no 429 while the bucket holds a token (45 of 50)', async () => {
    const limiter = await RateLimiter.create(await bus(), { ...limits, discovery: 50 }, frozen);
    const results = await Promise.all(Array.from({ length: 45 }, () => limiter.take('discovery', 'burst')));
    expect(results.filter((r) => r.allowed)).toHaveLength(45);
    // Headers tell the truth: every remaining count from 49 down to 5 given out once.
    expect(results.map((r) => r.remaining).sort((a, b) => b - a)).toEqual(Array.from({ length: 45 }, (_, i) => 49 - i));
  });

  it('serves exactly the capacity of a burst larger than it, on one replica (100 against 50)', async () => {
    const limiter = await RateLimiter.create(await bus(), { ...limits, write: 50 }, frozen);
    const results = await Promise.all(Array.from({ length: 100 }, () => limiter.take('write', 'hot')));
    expect(results.filter((r) => r.allowed)).toHaveLength(50);
    const refused = results.filter((r) => !r.allowed);
    expect(refused).toHaveLength(50);
    expect(refused.every((r) => r.remaining === 0 && r.retryAfterSeconds >= 1)).toBe(true);
  });

  it('serves exactly the capacity of a burst spread over two replicas sharing the store', async () => {
    const b = await bus();
    const replicas = await Promise.all([RateLimiter.create(b, { ...limits, write: 60 }, frozen), RateLimiter.create(b, { ...limits, write: 60 }, frozen)]);
    const results = await Promise.all(Array.from({ length: 150 }, (_, i) => replicas[i % 2]!.take('write', 'shared')));
    expect(results.filter((r) => r.allowed)).toHaveLength(60);
  });

  it('refuses nothing of 100 parallel requests under a limit of 1,000,000 a minute, on two replicas', async () => {
    const b = await bus();
    const replicas = await Promise.all([RateLimiter.create(b, { ...limits, read: 1_000_000 }), RateLimiter.create(b, { ...limits, read: 1_000_000 })]);
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => replicas[i % 2]!.take('read', 'big')));
    expect(results.filter((r) => !r.allowed)).toHaveLength(0);
  });

  it('gives a token back on refund, never above the capacity', async () => {
    const limiter = await RateLimiter.create(await bus(), { ...limits, auth_failures_ip: 2 }, frozen);
    expect((await limiter.take('auth_failures_ip', 'ip')).allowed).toBe(true);
    expect((await limiter.take('auth_failures_ip', 'ip')).allowed).toBe(true);
    expect((await limiter.take('auth_failures_ip', 'ip')).allowed).toBe(false);
    await limiter.refund('auth_failures_ip', 'ip');
    await limiter.refund('auth_failures_ip', 'ip');
    await limiter.refund('auth_failures_ip', 'ip');
    const after = await Promise.all([1, 2, 3].map(() => limiter.take('auth_failures_ip', 'ip')));
    expect(after.map((r) => r.allowed)).toEqual([true, true, false]);
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
