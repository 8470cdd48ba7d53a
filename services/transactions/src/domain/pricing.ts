import { listPrice, PLATFORM_FEE_TIERS, type Pricing } from '@aex/contracts';

// The list price is defined with the contracts, where agents' tools compute it too.
export { listPrice, type PriceResult } from '@aex/contracts';

/**
 * D9.11's published tiers (contracts) as integer rates in parts per 100,000 of the price, so the sum
 * is exact: a percentage with at most three decimals is a whole number of them.
 */
const FEE_TIERS: readonly { upToCents: number; perHundredThousand: number }[] = PLATFORM_FEE_TIERS.map((t) => {
  const perHundredThousand = Math.round(t.feePercent * 1000);
  if (perHundredThousand !== t.feePercent * 1000) throw new Error(`fee tier ${t.feePercent} % is not a whole number of parts per 100,000`);
  return { upToCents: 'upToCents' in t ? t.upToCents : Infinity, perHundredThousand };
});

/**
 * D9.11: 5 % of the part of the price up to 1,000,000 cents, 3 % of the part up to 10,000,000 and
 * 1.5 % above, summed exactly (integers in 1/100,000 of a cent) and rounded half-up once.
 */
export function platformFee(priceCents: number): number {
  let exact = 0;
  let from = 0;
  for (const tier of FEE_TIERS) {
    const slice = Math.max(0, Math.min(priceCents, tier.upToCents) - from);
    exact += slice * tier.perHundredThousand;
    from = tier.upToCents;
    if (priceCents <= tier.upToCents) break;
  }
  return Math.floor((exact + 50_000) / 100_000);
}

/** D17.2: the price of the units a metered delivery used (none: nothing), within the price held. */
export function usedPrice(pricing: Pricing, units: number): number {
  if (units === 0) return 0;
  const price = listPrice(pricing, units, Number.MAX_SAFE_INTEGER);
  if (!price.ok) throw new Error(`no price for ${units} units: ${price.message}`);
  return price.cents;
}

/** What the wallet holds for a purchase: the agreed price, or a metered purchase's price of its most units (D17.1). */
export const heldCents = (t: { maxUnits: number | null; listPriceCents: number; agreedPriceCents: number | null }): number =>
  t.maxUnits !== null ? t.listPriceCents : t.agreedPriceCents!;
