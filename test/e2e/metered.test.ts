import { describe, expect } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import type { Pricing } from '@aex/contracts';
import { exchangeTest } from './fixtures.js';
import { expectError } from './harness.js';
import { funded, INPUT, ledgerOf, OUTPUT, party, serviceBody, wallet, waitForStatus, type Party } from './transaction-kit.js';

// D17.1–D17.3: a metered purchase holds the price of its most units, the provider reports what was
// used with (and signed with) its delivery, and the settlement pays the price of that and returns the
// rest of the hold in the same database transaction.

const it = exchangeTest({ SAGA_WAIT_MS: '5000' });
const PER_PAGE: Pricing = { model: 'per_unit', basePriceCents: 100, unit: 'page' };

async function meteredService(provider: Party, pricing: Pricing = PER_PAGE): Promise<string> {
  return unwrap(await provider.client.createService(serviceBody({ pricing }))).id;
}

async function heldMetered(consumer: Party, serviceId: string, maxUnits: number) {
  const t = unwrap(await consumer.client.createTransaction({ serviceId, input: INPUT, maxUnits }));
  return t.status === 'funds_held' ? t : waitForStatus(consumer, t.id, 'funds_held');
}

describe('metered purchases (D17)', () => {
  it('D17.1-D17.3: the price of maxUnits is held, the used units are paid and the rest returned in one settlement', async ({ exchange: ex, provider }) => {
    const consumer = await funded(ex, 5000);
    const serviceId = await meteredService(provider);
    const held = await heldMetered(consumer, serviceId, 10);
    expect(held).toMatchObject({ metered: true, maxUnits: 10, units: null, agreedPriceCents: 1000 });
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 5000, heldCents: 1000 });

    const delivered = unwrap(await provider.client.deliver(held.id, { output: OUTPUT, usage: { units: 3 } }));
    expect(delivered).toMatchObject({ status: 'delivered', units: 3, agreedPriceCents: 300, platformFeeCents: 15 });
    expect(unwrap(await consumer.client.verify(held.id))).toMatchObject({ status: 'settled', units: 3, agreedPriceCents: 300 });

    expect(await wallet(consumer)).toMatchObject({ balanceCents: 4700, heldCents: 0 });
    expect(await ledgerOf(consumer, held.id)).toEqual([['fund_hold', -1000], ['fund_release', 300], ['fund_return', 700], ['settlement_out', -300]]);
    expect(await ledgerOf(provider, held.id)).toEqual([['platform_fee', -15], ['settlement_in', 300]]);
    expect(unwrap(await ex.admin.checkLedger()).violations).toEqual([]);
  });

  it('D17.1: maxUnits is refused with units, on fixed pricing, and with a price other than that of maxUnits', async ({ exchange: ex, provider, service: fixedService }) => {
    const consumer = await funded(ex, 5000);
    const serviceId = await meteredService(provider);
    const both = await consumer.client.createTransaction({ serviceId, input: INPUT, maxUnits: 5, units: 2 });
    expectError(both, 400, 'VALIDATION_ERROR');
    expect(!both.ok && both.error.errors[0]?.field).toBe('/body/maxUnits');
    const fixed = await consumer.client.createTransaction({ serviceId: fixedService, input: INPUT, maxUnits: 5 });
    expectError(fixed, 400, 'VALIDATION_ERROR');
    expect(!fixed.ok && fixed.error.errors[0]?.field).toBe('/body/maxUnits');
    const priced = await consumer.client.createTransaction({ serviceId, input: INPUT, maxUnits: 5, maxPriceCents: 300 });
    expectError(priced, 400, 'VALIDATION_ERROR');
    expect(!priced.ok && priced.error.errors[0]?.field).toBe('/body/maxPriceCents');
    expectError(await consumer.client.createTransaction({ serviceId, input: INPUT, maxUnits: 0 }), 400, 'VALIDATION_ERROR');
    // Nothing was held by any of them.
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 5000, heldCents: 0 });
  });

  it('D17.2: a delivery without usage, beyond maxUnits, or with usage on a purchase of known size is refused and uses no attempt', async ({ exchange: ex, provider, trade }) => {
    const consumer = await funded(ex, 5000);
    const held = await heldMetered(consumer, await meteredService(provider), 4);
    const none = await provider.client.deliver(held.id, { output: OUTPUT });
    expectError(none, 400, 'VALIDATION_ERROR');
    expect(!none.ok && none.error.errors[0]?.field).toBe('/body/usage');
    const over = await provider.client.deliver(held.id, { output: OUTPUT, usage: { units: 5 } });
    expectError(over, 400, 'VALIDATION_ERROR');
    expect(!over.ok && over.error.errors[0]?.field).toBe('/body/usage/units');
    expectError(await provider.client.deliver(held.id, { output: OUTPUT, usage: { units: -1 } }), 400, 'VALIDATION_ERROR');
    expect(unwrap(await consumer.client.getTransaction(held.id))).toMatchObject({ status: 'funds_held', deliveryAttempts: 0, units: null });
    const plain = await provider.client.deliver(trade.id, { output: OUTPUT, usage: { units: 1 } });
    expectError(plain, 400, 'VALIDATION_ERROR');
    expect(!plain.ok && plain.error.errors[0]?.field).toBe('/body/usage');
    // The usage is part of the signed body: a delivery of 4 units is the provider's claim.
    expect(unwrap(await provider.client.deliver(held.id, { output: OUTPUT, usage: { units: 4 } }))).toMatchObject({ units: 4, agreedPriceCents: 400 });
  });

  it('D17.3: a delivery of no units settles with the whole hold returned, price and fee 0', async ({ exchange: ex, provider }) => {
    const consumer = await funded(ex, 5000);
    const held = await heldMetered(consumer, await meteredService(provider), 7);
    expect(unwrap(await provider.client.deliver(held.id, { output: OUTPUT, usage: { units: 0 } }))).toMatchObject({ units: 0, agreedPriceCents: 0, platformFeeCents: 0 });
    const v = await consumer.client.verify(held.id);
    const settled = v.ok && v.data.status === 'settled' ? v.data : await waitForStatus(consumer, held.id, 'settled');
    expect(settled).toMatchObject({ status: 'settled', agreedPriceCents: 0, platformFeeCents: 0 });
    expect(settled.settledAt).not.toBeNull();
    expect(await ledgerOf(consumer, held.id)).toEqual([['fund_hold', -700], ['fund_return', 700]]);
    expect(await ledgerOf(provider, held.id)).toEqual([]);
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 5000, heldCents: 0 });
  });

  it('D9.3 with D17: tiered pricing is graduated for the hold and for the usage', async ({ exchange: ex, provider }) => {
    const consumer = await funded(ex, 5000);
    const tiered: Pricing = { model: 'tiered', basePriceCents: 10, tiers: [{ upToUnits: 10, unitPriceCents: 10 }, { upToUnits: null, unitPriceCents: 5 }] };
    const held = await heldMetered(consumer, await meteredService(provider, tiered), 30);
    expect(held.agreedPriceCents).toBe(10 * 10 + 20 * 5);
    expect(unwrap(await provider.client.deliver(held.id, { output: OUTPUT, usage: { units: 15 } }))).toMatchObject({ agreedPriceCents: 10 * 10 + 5 * 5 });
    unwrap(await consumer.client.verify(held.id));
    expect(await ledgerOf(consumer, held.id)).toEqual([['fund_hold', -200], ['fund_release', 125], ['fund_return', 75], ['settlement_out', -125]]);
  });

  it('D17.1 with D10.2: the delegation rules judge the price of maxUnits', async ({ exchange: ex, provider }) => {
    const consumer = await funded(ex, 5000);
    unwrap(await consumer.owner.client.setAgentDelegation(consumer.agentId, { maxTransactionCents: 500 }));
    const serviceId = await meteredService(provider);
    // A maximum of 6 pages (600 cents) is over the rules even if fewer would be used.
    expectError(await consumer.client.createTransaction({ serviceId, input: INPUT, maxUnits: 6 }), 403, 'DELEGATION_EXCEEDED');
    expect((await heldMetered(consumer, serviceId, 5)).agreedPriceCents).toBe(500);
  });

  it('D17.3 with D12: usage_overstated is a reason; a partial refund applies to the charged price', async ({ exchange: ex, provider }) => {
    const consumer = await funded(ex, 5000);
    const held = await heldMetered(consumer, await meteredService(provider), 10);
    unwrap(await provider.client.deliver(held.id, { output: OUTPUT, usage: { units: 5 } }));
    const dispute = unwrap(await consumer.client.openDispute(held.id, { reason: 'usage_overstated', description: 'Only two pages were read, five were billed.' }));
    expectError(await provider.client.respondDispute(dispute.id, { outcome: 'partial_refund', refundCents: 500 }), 400, 'VALIDATION_ERROR');
    unwrap(await provider.client.respondDispute(dispute.id, { outcome: 'partial_refund', refundCents: 200 }));
    unwrap(await consumer.client.decideDispute(dispute.id, { accept: true }));
    const settled = await waitForStatus(consumer, held.id, 'settled');
    expect(settled).toMatchObject({ agreedPriceCents: 500, platformFeeCents: 15, statusReason: 'dispute_partial_refund' });
    // 500 unused and 200 refunded come back; 300 is paid, 5 % of it the fee.
    expect(await ledgerOf(consumer, held.id)).toEqual([['fund_hold', -1000], ['fund_release', 300], ['fund_return', 700], ['settlement_out', -300]]);
    expect(await ledgerOf(provider, held.id)).toEqual([['platform_fee', -15], ['settlement_in', 300]]);
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 4700, heldCents: 0 });
  });

  it('a provider redoing a metered delivery reports its usage again; the other parties cannot see it', async ({ exchange: ex, provider }) => {
    const consumer = await funded(ex, 5000);
    const held = await heldMetered(consumer, await meteredService(provider), 10);
    unwrap(await provider.client.deliver(held.id, { output: OUTPUT, usage: { units: 9 } }));
    const dispute = unwrap(await consumer.client.openDispute(held.id, { reason: 'usage_overstated', description: 'Nine pages billed for a three-page document.' }));
    unwrap(await provider.client.respondDispute(dispute.id, { outcome: 'provider_redo' }));
    unwrap(await consumer.client.decideDispute(dispute.id, { accept: true }));
    const redo = await waitForStatus(consumer, held.id, 'executing');
    expect(redo).toMatchObject({ units: null, agreedPriceCents: 1000 });
    expect(unwrap(await provider.client.deliver(held.id, { output: OUTPUT, usage: { units: 3 } }))).toMatchObject({ units: 3, agreedPriceCents: 300 });
    expectError(await (await party(ex)).client.getTransaction(held.id), 404, 'NOT_FOUND');
  });
});
