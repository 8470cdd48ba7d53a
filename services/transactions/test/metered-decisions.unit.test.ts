import { describe, expect, it } from 'vitest';
import { decidePurchase, type Purchase, type PurchaseCommand } from '../src/domain/purchase.js';
import { platformFee } from '../src/domain/pricing.js';
import { usageRefusal } from '../src/domain/purchase-requests.js';
import { after, AS_CONSUMER, AS_PROVIDER, changed, effectsOf, FACTS, NOW, POLICY, stateOf } from './purchase-fixtures.js';

// D17.1–D17.3 as the purchase decides them: what is held, what a delivery's usage charges, and the
// settlement that pays it and returns the rest of the hold.

const decide = (t: Purchase, c: PurchaseCommand) => decidePurchase(t, c, FACTS, POLICY, NOW);
/** A metered purchase of up to 10 pages at 100 cents: 1,000 cents held. */
const metered = (name: string): Purchase => ({
  ...stateOf(name), pricing: { model: 'per_unit', basePriceCents: 100 }, maxUnits: 10, units: null, listPriceCents: 1000, agreedPriceCents: 1000, platformFeeCents: platformFee(1000),
});
const deliver = (units: number): PurchaseCommand => ({ kind: 'deliver', caller: AS_PROVIDER, output: { ok: true }, usage: { units }, outputErrors: [] });
const verify: PurchaseCommand = { kind: 'verify', caller: AS_CONSUMER, qualityScore: null, notes: null };

describe('metered purchases as decided (D17)', () => {
  it('D17.2: a delivery charges the price of the units used, with its fee', () => {
    const d = changed(decide(metered('funds_held/held'), deliver(3)));
    expect(d.changes).toMatchObject({ status: 'delivered', units: 3, agreedPriceCents: 300, platformFeeCents: platformFee(300) });
  });

  it('D17.3: the settlement holds on to the whole hold, pays the used price and returns the rest', () => {
    const delivered = after(metered('funds_held/held'), decide(metered('funds_held/held'), deliver(3)));
    const d = changed(decide(delivered, verify));
    expect(effectsOf(d, 'settle')).toEqual([{ kind: 'settle', amountCents: 1000, feeCents: platformFee(300), refundCents: 700 }]);
  });

  it('D17.3: no units used: the hold is returned and the purchase ends settled once it is', () => {
    const delivered = after(metered('funds_held/held'), decide(metered('funds_held/held'), deliver(0)));
    const asked = changed(decide(delivered, verify));
    expect(asked.changes).toMatchObject({ hold: 'returning', endingStatus: 'settled', platformFeeCents: 0 });
    expect(effectsOf(asked, 'returnHold')).toHaveLength(1);
    const returned = changed(decide(after(delivered, asked), { kind: 'holdReturned' }));
    expect(returned.changes).toMatchObject({ status: 'settled', hold: 'returned' });
  });

  it('D17.3 with D12.8: a partial refund comes out of the price charged; the unused part returns with it', () => {
    const disputed = { ...after(metered('funds_held/held'), decide(metered('funds_held/held'), deliver(5))), status: 'disputed' as const, disputeId: 'd1' };
    const d = changed(decide(disputed, { kind: 'resolveDispute', outcome: 'partial_refund', refundCents: 200 }));
    expect(effectsOf(d, 'settle')).toEqual([{ kind: 'settle', amountCents: 1000, feeCents: platformFee(300), refundCents: 700 }]);
  });

  it('D17.2: usage is required of a metered delivery, within maxUnits, and refused on any other', () => {
    expect(usageRefusal({ maxUnits: 10 }, undefined)?.entries[0]?.field).toBe('/body/usage');
    expect(usageRefusal({ maxUnits: 10 }, { units: 11 })?.entries[0]?.field).toBe('/body/usage/units');
    expect(usageRefusal({ maxUnits: 10 }, { units: 10 })).toBeNull();
    expect(usageRefusal({ maxUnits: 10 }, { units: 0 })).toBeNull();
    expect(usageRefusal({ maxUnits: null }, { units: 1 })?.entries[0]?.field).toBe('/body/usage');
    expect(usageRefusal({ maxUnits: null }, undefined)).toBeNull();
  });
});
