import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { expectError, startTestExchange, type TestExchange } from './harness.js';
import { INPUT, serviceBody, party, funded } from './transaction-kit.js';

// The limits a deployment configures are the limits it enforces, not only what /v1/protocol
// reports: an exchange started with MAX_TRANSACTION_CENTS=2000 and MAX_ACTIVE_TRANSACTIONS_PER_AGENT=2.

let ex: TestExchange;

beforeAll(async () => {
  ex = await startTestExchange({ MAX_TRANSACTION_CENTS: '2000', MAX_ACTIVE_TRANSACTIONS_PER_AGENT: '2' });
});
afterAll(() => ex.stop());

describe('configured limits (D4.5: every limit a default configuration can change)', () => {
  it('reports them in /v1/protocol', async () => {
    expect(unwrap(await ex.anon.protocol()).limits).toMatchObject({ maxTransactionCents: 2000, maxActiveTransactionsPerAgent: 2 });
  });

  it('refuses a price above MAX_TRANSACTION_CENTS, whether listed, per unit or offered', async () => {
    // Parties of this test's own: two transactions in progress are all any of them may have.
    const [provider, consumer] = await Promise.all([party(ex), funded(ex, 50_000)]);
    const perUnit = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'per_unit', basePriceCents: 500 } }))).id;
    const tooMany = await consumer.client.createTransaction({ serviceId: perUnit, input: INPUT, units: 5 });
    expectError(tooMany, 400, 'VALIDATION_ERROR');
    expect(!tooMany.ok && tooMany.error.message).toContain('2000 cents');
    const negotiable = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'negotiable', basePriceCents: 1000, minimumCents: 500, maximumCents: 5000 } }))).id;
    expectError(await consumer.client.createTransaction({ serviceId: negotiable, input: INPUT, maxPriceCents: 2500 }), 400, 'VALIDATION_ERROR');
    const t = unwrap(await consumer.client.createTransaction({ serviceId: negotiable, input: INPUT, maxPriceCents: 800 }));
    expectError(await provider.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 3000 } }), 400, 'INVALID_NEGOTIATION_MESSAGE');
    expect(unwrap(await provider.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 2000 } })).status).toBe('negotiating');
    unwrap(await consumer.client.cancel(t.id));
  });

  it('refuses a third transaction in progress with 409 LIMIT_REACHED naming the configured limit', async () => {
    const [provider, buyer] = await Promise.all([party(ex), funded(ex, 10_000)]);
    const serviceId = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: 100 } }))).id;
    for (let i = 0; i < 2; i++) expect(unwrap(await buyer.client.createTransaction({ serviceId, input: INPUT })).status).toBe('funds_held');
    const third = await buyer.client.createTransaction({ serviceId, input: INPUT });
    expectError(third, 409, 'LIMIT_REACHED');
    expect(!third.ok && third.error.errors[0]!.details).toMatchObject({ limit: 2, party: 'consumer' });
  });
});
