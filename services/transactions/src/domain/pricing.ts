import { PLATFORM_FEE_TIERS, type Pricing } from '@aex/contracts';

export type PriceResult = { ok: true; cents: number } | { ok: false; message: string };

/**
 * D9.3: the list price of `units` of a service. `fixed` and `negotiable` sell one unit; `per_unit`
 * charges `basePriceCents` per unit; `tiered` charges its tiers graduated (each tier's unit price
 * for the units that fall in it), or `basePriceCents` per unit when it defines no tiers.
 */
export function listPrice(pricing: Pricing, units: number, maxTransactionCents: number): PriceResult {
  if (!Number.isSafeInteger(units) || units < 1) return { ok: false, message: 'units must be a positive integer.' };
  if ((pricing.model === 'fixed' || pricing.model === 'negotiable') && units !== 1) {
    return { ok: false, message: `A ${pricing.model} service is bought one unit at a time; units applies to per_unit and tiered pricing.` };
  }
  let cents = 0;
  if (pricing.model === 'tiered' && pricing.tiers) {
    let from = 0;
    for (const tier of pricing.tiers) {
      const upTo = tier.upToUnits ?? Infinity;
      const inTier = Math.max(0, Math.min(units, upTo) - from);
      cents += inTier * tier.unitPriceCents;
      from = upTo;
      if (units <= upTo) break;
    }
  } else {
    cents = pricing.basePriceCents * units;
  }
  if (cents > maxTransactionCents) return { ok: false, message: `The price of ${units} units (${cents} cents) exceeds the maximum transaction amount of ${maxTransactionCents} cents.` };
  return { ok: true, cents };
}

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
