import { AppError } from '@aex/contracts';
import { refused, unchanged, type Draft } from './draft.js';
import type { Order, Purchase, PurchaseDecision } from './purchase.js';
import { settle } from './settling.js';

/**
 * D19: a purchase made by an x402 payment. Verify opens it (`open` with `order.x402`) and the
 * wallet holds its price; the resource server settles it once it served the resource; when it
 * never does, the purchase expires `maxTimeoutSeconds` after its hold and the price returns (the
 * transaction expiry of D9.7, at the payment's own time). Its payload is answered valid once:
 * by the verify whose hold was placed at once, or — when the hold waited for an approval (D10.3)
 * or for the wallet — by the first verify of the same payload once it is held (`x402Claim`).
 */

/**
 * D19.1: what an x402 payment may buy: the service's price of one unit, exactly the amount the
 * payer signed (no negotiation, no metering: the amount is agreed before the request is served).
 */
export function x402OrderRefusal(order: Order, priceCents: number): AppError | null {
  const x = order.x402;
  if (!x) return null;
  if (order.contract.pricing.model === 'negotiable') {
    return new AppError('VALIDATION_ERROR', 'A negotiable service is not sold through x402: its price is agreed by negotiation.', { field: '/body/paymentRequirements/extra/serviceId' });
  }
  if (x.amountCents !== priceCents) {
    return new AppError('VALIDATION_ERROR', `The amount (${x.amountCents} cents) is not the service's price (${priceCents} cents).`, { field: '/body/paymentRequirements/amount', details: { priceCents } });
  }
  return null;
}

/** D19.2: when the hold of an x402 purchase is placed — its own timeout, and whether the verify that waits for it answers valid. */
export function x402Held(t: Purchase, at: Date): { expiresAt: Date; x402Verified?: boolean } {
  if (t.x402TimeoutSeconds === null) return { expiresAt: new Date(at.getTime() + t.sla.timeoutMs) };
  // A hold placed after an approval was asked after its verify had answered: the payload's next verify claims it.
  return { expiresAt: new Date(at.getTime() + t.x402TimeoutSeconds * 1000), x402Verified: t.status !== 'awaiting_approval' };
}

const notAPayment = () => new AppError('NOT_FOUND', 'No such x402 payment.');

/** D19.2: a verify of a payload already used: valid once, when its price is held and no verify answered valid yet. */
export function x402Claim(t: Purchase, d: Draft): PurchaseDecision {
  if (t.x402TimeoutSeconds === null) return refused(notAPayment());
  if (t.x402Verified) return refused(new AppError('CONFLICT', 'This payment was verified already: its nonce is used.', { details: { status: t.status, reason: 'nonce_already_used' } }));
  if (t.status === 'awaiting_approval') return refused(new AppError('INVALID_STATE', 'This payment awaits the approval of the payer\'s account owner.', { details: { status: t.status, reason: 'approval_required' } }));
  if (t.status !== 'funds_held' || t.hold !== 'held') {
    return refused(new AppError('INVALID_STATE', `This payment cannot be verified again: its transaction is ${t.status}.`, { details: { status: t.status, reason: 'nonce_already_used' } }));
  }
  return d.set({ x402Verified: true }).decision();
}

/**
 * D19.2: the resource server settles a verified payment — the resource was served (`delivered`,
 * with no output: the response went to the payer over HTTP) and the hold captured at once (D13.3,
 * the platform fee as for any purchase), `settled` with its receipt (D18.2) once the wallet
 * confirms. A settle repeated while or after it settles changes nothing (the same reference).
 */
export function x402Settle(t: Purchase, d: Draft): PurchaseDecision {
  if (t.x402TimeoutSeconds === null) return refused(notAPayment());
  if (t.status === 'settled' || (t.status === 'delivered' && t.hold === 'settling')) return unchanged;
  if (!t.x402Verified) return refused(new AppError('INVALID_STATE', 'This payment was not verified: verify it first.', { details: { status: t.status, reason: 'payment_not_verified' } }));
  if (t.status !== 'funds_held' || t.hold !== 'held') {
    const reason = t.status === 'expired' ? 'payment_expired' : 'invalid_state';
    return refused(new AppError('INVALID_STATE', `A payment whose transaction is ${t.status} cannot be settled.`, { details: { status: t.status, reason } }));
  }
  return settle(d.move('delivered', { deliveredAt: d.now, deliveryAttempts: t.deliveryAttempts + 1 }), {});
}
