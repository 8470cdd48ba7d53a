import type { Pricing } from './api/catalog.js';

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
