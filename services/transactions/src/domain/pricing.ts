import type { Pricing } from '@aex/contracts';

/** Spec "Limits": the largest amount one transaction may carry. */
export const MAX_TRANSACTION_CENTS = 1_000_000;

export type PriceResult = { ok: true; cents: number } | { ok: false; message: string };

/**
 * D9.3: the list price of `units` of a service. `fixed` and `negotiable` sell one unit; `per_unit`
 * charges `basePriceCents` per unit; `tiered` charges its tiers graduated (each tier's unit price
 * for the units that fall in it), or `basePriceCents` per unit when it defines no tiers.
 */
export function listPrice(pricing: Pricing, units: number): PriceResult {
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
  if (cents > MAX_TRANSACTION_CENTS) return { ok: false, message: `The price of ${units} units (${cents} cents) exceeds the maximum transaction amount of ${MAX_TRANSACTION_CENTS} cents.` };
  return { ok: true, cents };
}

/** D9.11 / D15.1 marginal fee tiers; rates in parts per 100,000 of the price. */
const FEE_TIERS: readonly { upToCents: number; perHundredThousand: number }[] = [
  { upToCents: 1_000_000, perHundredThousand: 5_000 },
  { upToCents: 10_000_000, perHundredThousand: 3_000 },
  { upToCents: Infinity, perHundredThousand: 1_500 },
];

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
