import { heldCents, platformFee } from './pricing.js';
import type { Draft } from './draft.js';
import type { Purchase, PurchaseChanges, PurchaseCommand, PurchaseDecision } from './purchase.js';

/** The settlement asked of the wallet: the agreed price to the provider minus the fee (D13.3). */
export function settle(d: Draft, changes: PurchaseChanges): PurchaseDecision {
  return settlement(d, changes, 0);
}

/**
 * The settlement of the price held (D13.3): the agreed price less `refundCents` (D12.8) paid, with
 * the fee on what is paid; what is not paid — the refund, and a metered purchase's unused part of
 * its hold (D17.3) — returned to the consumer in the same settlement. When nothing is paid (a metered
 * delivery of no units) the whole hold is returned and the purchase ends `settled` once it is.
 */
function settlement(d: Draft, changes: PurchaseChanges, refundCents: number): PurchaseDecision {
  const t = d.state;
  if (t.hold !== 'held') throw new Error(`transaction ${t.id} in ${t.status} settled with hold ${t.hold}`);
  const held = heldCents(t);
  const paid = t.agreedPriceCents! - refundCents;
  if (paid < 0 || paid > held) throw new Error(`transaction ${t.id}: a settlement paying ${paid} of ${held} cents held`);
  const feeCents = refundCents === 0 ? t.platformFeeCents ?? 0 : platformFee(paid);
  if (t.sessionId) return sessionCallSettled(d, changes, held, paid, paid === 0 ? 0 : feeCents, refundCents);
  if (paid === 0) return d.move('settled', { ...changes, platformFeeCents: 0, settledAt: d.now }).decision();
  return d
    .set({ ...changes, hold: 'settling', platformFeeCents: feeCents, ...(refundCents > 0 ? { refundedCents: refundCents } : {}) })
    .effect({ kind: 'settle', amountCents: held, feeCents, refundCents: held - paid })
    .decision();
}

/**
 * D17.5, D17.7: a session call is settled where its session's money is decided, in this step: its
 * reservation spent (what it did not pay free again for the session's next calls) and its price's
 * capture out of the session's hold sent to the wallet with it. The session's hold has the price — it
 * was reserved when the call was made — so nothing waits for the wallet's answer, and there is none:
 * the ledger shows the payment once the wallet applies it, the session's hold keeping the money till
 * then, and the session's return waits for every capture (D17.6).
 */
function sessionCallSettled(d: Draft, changes: PurchaseChanges, held: number, paid: number, feeCents: number, refundCents: number): PurchaseDecision {
  const t = d.state;
  d.effect({ kind: 'sessionCallEnded', sessionId: t.sessionId!, reservedCents: held, paidCents: paid });
  if (paid > 0) d.effect({ kind: 'capture', amountCents: paid, feeCents });
  return d.move('settled', { ...changes, hold: 'settled', platformFeeCents: feeCents, settledAt: d.now, ...(refundCents > 0 ? { refundedCents: refundCents } : {}) }).decision();
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
    case 'partial_refund':
      return settlement(d, { statusReason }, c.refundCents);
    case 'provider_redo': {
      const expiresAt = new Date(d.now.getTime() + t.sla.timeoutMs);
      // A metered purchase's usage goes with the delivery it came with: the redo reports its own.
      const metered = t.maxUnits !== null ? { units: null, agreedPriceCents: t.listPriceCents, platformFeeCents: platformFee(t.listPriceCents) } : {};
      return d.effect({ kind: 'schedule', timer: 'transactionExpiry', at: expiresAt })
        .move('executing', { statusReason, expiresAt, output: null, outputDigest: null, deliverySignature: null, deliverySignatureTimestamp: null, deliverySignatureScheme: null, deliverySignatureInput: null, deliveredAt: null, reviewEndsAt: null, deliveryAttempts: 0, ...metered })
        .decision();
    }
  }
}
