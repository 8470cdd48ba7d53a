import { describe, expect, it } from 'vitest';
import { deliveryDeadlineMs, ExchangeClient, waitForDelivery } from '../src/index.js';

// Waiting for a delivery without running into the read rate limit: the reads the client makes and
// the pauses it takes, with a scripted exchange and a clock of the test's own (no real time passes).

type Answer = { status: number; body: unknown; headers?: Record<string, string> };
const meta = { requestId: '00000000-0000-4000-8000-000000000000', timestamp: '2030-01-01T00:00:00.000Z' };
const tx = (status: string) => ({ status: 200, body: { data: { id: 't1', status }, meta, errors: [] } });
const limited = (retryAfter: string): Answer => ({ status: 429, body: { data: null, meta, errors: [{ code: 'RATE_LIMITED', message: 'Too many requests.' }] }, headers: { 'retry-after': retryAfter } });

/** A client whose exchange gives these answers in turn (the last one again once they run out), and a clock that only moves when the wait pauses. */
function scripted(answers: Answer[]) {
  let t = 0;
  const pauses: number[] = [];
  let reads = 0;
  const fetch = (async () => {
    const a = answers[Math.min(reads++, answers.length - 1)]!;
    return new Response(JSON.stringify(a.body), { status: a.status, headers: { 'content-type': 'application/json', ...a.headers } });
  }) as typeof globalThis.fetch;
  const client = new ExchangeClient({ baseUrl: 'http://exchange.test', apiKey: 'ae_live_x', fetch });
  const clock = {
    now: () => t,
    sleep: async (ms: number) => {
      pauses.push(ms);
      t += ms;
    },
  };
  return { client, clock, pauses, reads: () => reads };
}

describe('waitForDelivery', () => {
  it('answers the delivered purchase, pausing 250 ms and doubling up to 4 s between reads', async () => {
    const { client, clock, pauses } = scripted([...Array(7).fill(tx('funds_held')), tx('delivered')]);
    const seen: string[] = [];
    const r = await waitForDelivery(client, 't1', { timeoutMs: 60_000, ...clock, onStatus: (t) => seen.push(t.status) });
    expect(r).toMatchObject({ outcome: 'delivered', transaction: { status: 'delivered' } });
    expect(pauses).toEqual([250, 500, 1000, 2000, 4000, 4000, 4000]);
    expect(seen).toEqual(['funds_held', 'delivered']);
  });

  it('stays within the default read limit (100 a minute) for a whole minute of waiting', async () => {
    const { client, clock, reads } = scripted([tx('funds_held')]);
    const r = await waitForDelivery(client, 't1', { timeoutMs: 60_000, ...clock });
    expect(r).toMatchObject({ outcome: 'timeout', transaction: { status: 'funds_held' } });
    expect(reads()).toBeLessThanOrEqual(20);
  });

  it('waits out a 429 for its Retry-After instead of failing, then reads on', async () => {
    const { client, clock, pauses } = scripted([tx('funds_held'), limited('3'), tx('funds_held'), tx('delivered')]);
    const r = await waitForDelivery(client, 't1', { timeoutMs: 60_000, ...clock });
    expect(r.outcome).toBe('delivered');
    expect(pauses).toEqual([250, 3000, 1000]);
  });

  it('reads a last time at the deadline rather than a whole pause after it, and then answers timeout', async () => {
    const { client, clock, pauses } = scripted([tx('executing')]);
    const r = await waitForDelivery(client, 't1', { timeoutMs: 1000, ...clock });
    expect(r).toMatchObject({ outcome: 'timeout', transaction: { status: 'executing' } });
    expect(pauses).toEqual([250, 500, 250]);
  });

  it('answers a purchase that ended undelivered as ended, and a settled one as delivered', async () => {
    expect(await waitForDelivery(scripted([tx('expired')]).client, 't1', { timeoutMs: 1000 })).toMatchObject({ outcome: 'ended', transaction: { status: 'expired' } });
    expect(await waitForDelivery(scripted([tx('settled')]).client, 't1', { timeoutMs: 1000 })).toMatchObject({ outcome: 'delivered' });
  });

  it('answers a refusal other than a rate limit as an error at once', async () => {
    const { client, clock, pauses } = scripted([{ status: 404, body: { data: null, meta, errors: [{ code: 'NOT_FOUND', message: 'No such transaction.' }] } }]);
    const r = await waitForDelivery(client, 't1', { timeoutMs: 60_000, ...clock });
    expect(r.outcome === 'error' && r.error.code).toBe('NOT_FOUND');
    expect(pauses).toEqual([]);
  });

  it('answers the rate limit as the error when it never lets a read through before the deadline', async () => {
    const { client, clock } = scripted([limited('2')]);
    const r = await waitForDelivery(client, 't1', { timeoutMs: 5000, ...clock });
    expect(r.outcome === 'error' && r.error.code).toBe('RATE_LIMITED');
  });
});

describe('deliveryDeadlineMs', () => {
  it('is the SLA\'s latency plus a margin, capped, and never past the purchase\'s timeout', () => {
    expect(deliveryDeadlineMs({ maxLatencyMs: 2000, timeoutMs: 60_000 })).toBe(7000);
    expect(deliveryDeadlineMs({ maxLatencyMs: 3_600_000, timeoutMs: 7_200_000 })).toBe(60_000);
    expect(deliveryDeadlineMs({ maxLatencyMs: 1000, timeoutMs: 3000 })).toBe(3000);
    expect(deliveryDeadlineMs({ maxLatencyMs: 2000, timeoutMs: 60_000 }, { marginMs: 1000, capMs: 120_000 })).toBe(3000);
  });
});
