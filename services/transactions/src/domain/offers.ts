import type { Pricing } from '@aex/contracts';

/**
 * D9.4, D11.2: why an offered price cannot be: outside the bounds the service negotiates between, or
 * above what any transaction on this exchange may cost (MAX_TRANSACTION_CENTS). Null when it can.
 * The opening offer at creation and every counter-offer are judged by it.
 */
export function offerRefusal(pricing: Pricing, priceCents: number, maxTransactionCents: number): { message: string; details: Record<string, unknown> } | null {
  const { minimumCents, maximumCents } = pricing;
  const bounds = { minimumCents: minimumCents ?? null, maximumCents: maximumCents ?? null };
  if (minimumCents !== undefined && priceCents < minimumCents) return { message: `The service accepts no price below ${minimumCents} cents.`, details: bounds };
  if (maximumCents !== undefined && priceCents > maximumCents) return { message: `The service accepts no price above ${maximumCents} cents.`, details: bounds };
  if (priceCents > maxTransactionCents) return { message: `No transaction on this exchange may exceed ${maxTransactionCents} cents.`, details: { limit: maxTransactionCents } };
  return null;
}
