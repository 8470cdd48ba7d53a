import { platformFee } from './pricing.js';
import type { Draft } from './draft.js';
import type { Purchase, PurchaseChanges, PurchaseCommand, PurchaseDecision } from './purchase.js';

/** The settlement asked of the wallet: the agreed price to the provider minus the fee (D13.3). */
export function settle(d: Draft, changes: PurchaseChanges): PurchaseDecision {
  const t = d.state;
  if (t.hold !== 'held') throw new Error(`transaction ${t.id} in ${t.status} settled with hold ${t.hold}`);
  return d
    .set({ ...changes, hold: 'settling' })
    .effect({ kind: 'settle', amountCents: t.agreedPriceCents!, feeCents: t.platformFeeCents ?? 0, refundCents: 0 })
    .decision();
}

/**
 * D12.8: what a dispute's outcome does to the transaction and, through the wallet, to the money:
 * `consumer_wins` returns the hold (`failed` once returned), `provider_wins` settles it,
 * `partial_refund` returns the refund and settles the rest with the fee on the rest (`settled`),
 * `provider_redo` sends the transaction back to `executing` with a new `expiresAt`.
 */
export function resolveDispute(t: Purchase, c: Extract<PurchaseCommand, { kind: 'resolveDispute' }>, d: Draft): PurchaseDecision {
  // A dispute is resolved once, while its transaction waits with the price held.
  if (t.status !== 'disputed' || t.hold !== 'held') throw new Error(`dispute of transaction ${t.id} resolved in status ${t.status} with hold ${t.hold}`);
  const statusReason = `dispute_${c.outcome}`;
  switch (c.outcome) {
    case 'consumer_wins':
      return d.move('failed', { statusReason }).decision();
    case 'provider_wins':
    case 'partial_refund': {
      const feeCents = platformFee(t.agreedPriceCents! - c.refundCents);
      return d.set({ hold: 'settling', platformFeeCents: feeCents, statusReason })
        .effect({ kind: 'settle', amountCents: t.agreedPriceCents!, feeCents, refundCents: c.refundCents })
        .decision();
    }
    case 'provider_redo': {
      const expiresAt = new Date(d.now.getTime() + t.sla.timeoutMs);
      return d.effect({ kind: 'schedule', timer: 'transactionExpiry', at: expiresAt })
        .move('executing', { statusReason, expiresAt, output: null, deliveredAt: null, reviewEndsAt: null, deliveryAttempts: 0 })
        .decision();
    }
  }
}
