import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { expectError, startTestExchange, type TestExchange } from './harness.js';
import { createHeld, funded, INPUT, OUTPUT, party, serviceBody, waitForStatus, type Party } from './transaction-kit.js';

// D15.2: a provider's trust score follows the outcomes of the transactions it
// provided — recomputed when each ends, shown on its profile and in listing — and a transaction that
// failed for the consumer's funds, or was cancelled, does not count. Formula: docs/trust.md.

let ex: TestExchange;

beforeAll(async () => {
  ex = await startTestExchange({}, { timerPollMs: 100 });
}, 120_000);

afterAll(async () => {
  await ex?.stop();
});

const trustOf = async (p: Party) => unwrap(await p.client.getAgent(p.agentId)).trustScore;
// Polled within the read limit (D4: 100 a minute), so a slow machine never turns the wait into 429s.
const eventuallyTrust = (p: Party, want: number) => expect.poll(() => trustOf(p), { timeout: 10_000, interval: 250 }).toBe(want);

async function provider(sla: { maxLatencyMs: number; timeoutMs: number } = { maxLatencyMs: 60_000, timeoutMs: 600_000 }) {
  const p = await party(ex);
  const category = `trust-${randomUUID().slice(0, 8)}`;
  const serviceId = unwrap(await p.client.createService(serviceBody({ category, sla }))).id;
  return { p, serviceId, category };
}

describe('GET /v1/agents/{id}/trust (EXT)', () => {
  it('explains a new agent as the prior alone, and refuses the anonymous and the unknown', async () => {
    const p = await party(ex);
    expect(unwrap(await p.client.getTrust(p.agentId))).toEqual({
      agentId: p.agentId, trustScore: 50, prior: { value: 0.5, weight: 5 },
      counts: { settled: 0, failed: 0, expired: 0, disputesLost: 0, late: 0 }, averageQualityScore: null, lastChangedAt: null,
    });
    expectError(await ex.anon.getTrust(p.agentId), 401, 'UNAUTHENTICATED');
    expectError(await p.client.getTrust(randomUUID()), 404, 'NOT_FOUND');
    expectError(await p.client.getTrust('not-a-uuid'), 400, 'VALIDATION_ERROR');
  });
});

describe('trust from outcomes (D15.2)', () => {
  it('starts at 50, rises with a settled transaction by its quality score, and shows in listing', async () => {
    const { p, serviceId, category } = await provider();
    expect(await trustOf(p)).toBe(50);
    const consumer = await funded(ex, 5000);
    const t = await createHeld(consumer, { serviceId, input: INPUT });
    unwrap(await p.client.deliver(t.id, { output: OUTPUT }));
    expect(unwrap(await consumer.client.verify(t.id, { qualityScore: 90 })).status).toBe('settled');
    // (5 × 0.5 + 0.9) / 6 = 0.567
    await eventuallyTrust(p, 57);
    await expect.poll(async () => unwrap(await consumer.client.listServices({ category }))[0]?.trustScore, { timeout: 10_000, interval: 50 }).toBe(57);
  });

  it('counts an expired transaction as 0, and one without a score as 0.8', async () => {
    const { p, serviceId } = await provider({ maxLatencyMs: 500, timeoutMs: 1000 });
    const consumer = await funded(ex, 5000);
    const expiring = await createHeld(consumer, { serviceId, input: INPUT });
    await waitForStatus(consumer, expiring.id, 'expired', 10_000);
    // (2.5 + 0) / 6
    await eventuallyTrust(p, 42);
    const t = await createHeld(consumer, { serviceId, input: INPUT });
    unwrap(await p.client.deliver(t.id, { output: OUTPUT }));
    unwrap(await consumer.client.verify(t.id));
    // (2.5 + 0 + 0.8) / 7
    await eventuallyTrust(p, 47);
    // The inputs are kept, so the score can be explained — to anyone signed in, as the profile is.
    const stranger = await party(ex);
    const why = unwrap(await stranger.client.getTrust(p.agentId));
    expect(why).toEqual({
      agentId: p.agentId, trustScore: 47, prior: { value: 0.5, weight: 5 },
      counts: { settled: 1, failed: 0, expired: 1, disputesLost: 0, late: 0 }, averageQualityScore: null, lastChangedAt: expect.any(String),
    });
    expect(unwrap(await p.client.getTrust(p.agentId))).toEqual(why);
    expect(unwrap(await p.owner.client.getTrust(p.agentId))).toEqual(why);
  });

  it('gives a late delivery half the weight', async () => {
    const { p, serviceId } = await provider({ maxLatencyMs: 1, timeoutMs: 600_000 });
    const consumer = await funded(ex, 5000);
    const t = await createHeld(consumer, { serviceId, input: INPUT });
    // Past the 1 ms the contract allows, on the services' clock.
    ex.clock.advance(20);
    unwrap(await p.client.deliver(t.id, { output: OUTPUT }));
    unwrap(await consumer.client.verify(t.id, { qualityScore: 100 }));
    // (2.5 + 0.5 × 1) / 5.5 = 0.545
    await eventuallyTrust(p, 55);
    expect(unwrap(await p.client.getTrust(p.agentId))).toMatchObject({ counts: { settled: 1, late: 1 }, averageQualityScore: 100 });
  });

  it('counts a delivery that never passed (failed) as 0', async () => {
    const { p, serviceId } = await provider();
    const consumer = await funded(ex, 5000);
    const t = await createHeld(consumer, { serviceId, input: INPUT });
    for (let i = 0; i < 3; i++) expect((await p.client.deliver(t.id, { output: { digest: 'not hex' } })).status).toBe(400);
    expect(unwrap(await consumer.client.getTransaction(t.id)).status).toBe('failed');
    await eventuallyTrust(p, 42);
  });

  it('does not count what says nothing about the provider: a cancellation, a consumer without the funds', async () => {
    const { p, serviceId } = await provider();
    const consumer = await funded(ex, 1500);
    const cancelled = await createHeld(consumer, { serviceId, input: INPUT });
    unwrap(await consumer.client.cancel(cancelled.id));
    const poor = await funded(ex, 500);
    expect((await poor.client.createTransaction({ serviceId, input: INPUT })).status).toBe(402);
    // A settled one afterwards is the only outcome counted.
    const t = await createHeld(consumer, { serviceId, input: INPUT });
    unwrap(await p.client.deliver(t.id, { output: OUTPUT }));
    unwrap(await consumer.client.verify(t.id, { qualityScore: 100 }));
    await eventuallyTrust(p, 58);
  });
});
