import { AppError } from '@aex/contracts';
import type { Approval } from '../db/schema.js';
import { refused, type Draft } from './draft.js';
import { decideNegotiationMessage } from './negotiation.js';
import { approvalAsked, limitRefusal } from './opening.js';
import { platformFee, usedPrice } from './pricing.js';
import type { Purchase, PurchaseChanges, PurchaseCommand, PurchaseDecision, PurchaseFacts, PurchasePolicy } from './purchase.js';
import { settle } from './settling.js';
import { actionRefusal } from './state-machine.js';

type Command<K extends PurchaseCommand['kind']> = Extract<PurchaseCommand, { kind: K }>;

/**
 * D9.7: a delivery, its output checked against the pinned contract before the step (`outputErrors`).
 * Invalid output still moves the status; `failed`, the hold returned, once the attempts are spent.
 * A valid one is settled by itself when the review window ends with neither verify nor dispute.
 */
export function deliver(t: Purchase, c: Command<'deliver'>, d: Draft, policy: PurchasePolicy): PurchaseDecision {
  const no = actionRefusal('deliver', t.status);
  if (no) return refused(no);
  if (!c.outputErrors) throw new Error('a delivery is decided once its output was checked against the contract');
  const attempts = t.deliveryAttempts + 1;
  if (c.outputErrors.length > 0) {
    return d.move(attempts >= t.maxDeliveryAttempts ? 'failed' : 'validation_failed', { deliveryAttempts: attempts, statusReason: 'output_validation_failed' }).decision();
  }
  const reviewEndsAt = new Date(d.now.getTime() + policy.reviewWindowMs);
  // D17.5: a call of a session with autoVerify settles on a valid delivery, no review window.
  if (t.autoVerify) return settle(d.move('delivered', { output: c.output, deliveredAt: d.now, deliveryAttempts: attempts, ...usageCharged(t, c.usage), ...delivery(c) }), {});
  return d
    .move('delivered', {
      output: c.output, deliveredAt: d.now, deliveryAttempts: attempts, reviewEndsAt, ...usageCharged(t, c.usage), ...delivery(c),
    })
    .effect({ kind: 'schedule', timer: 'reviewWindow', at: reviewEndsAt })
    .decision();
}

/** D18.2, D20.3: what the receipt keeps of a valid delivery: its output's digest and the provider's signature of it, with its scheme. */
const delivery = (c: Command<'deliver'>): PurchaseChanges => ({
  outputDigest: c.outputDigest ?? null,
  deliverySignature: c.signature?.signature ?? null,
  deliverySignatureTimestamp: c.signature?.timestamp ?? null,
  deliverySignatureScheme: c.signature?.scheme ?? null,
  deliverySignatureInput: c.signature?.input ?? null,
});

/**
 * D17.2: a metered delivery's units and their price with its fee (what a settlement pays); nothing
 * for a purchase of a known size. The usage was checked before the step (`usageRefusal`).
 */
function usageCharged(t: Purchase, usage: { units: number } | undefined): PurchaseChanges {
  if (t.maxUnits === null) return {};
  if (!usage || usage.units > t.maxUnits) throw new Error(`a metered delivery of transaction ${t.id} decided without its usage checked`);
  const price = usedPrice(t.pricing, usage.units);
  return { units: usage.units, agreedPriceCents: price, platformFeeCents: platformFee(price) };
}

/**
 * D17.2, before the step: a metered purchase's delivery says what it used (0 ≤ units ≤ maxUnits), a
 * purchase of a known size's does not; either refusal uses no delivery attempt.
 */
export function usageRefusal(t: Pick<Purchase, 'maxUnits'>, usage: { units: number } | undefined): AppError | null {
  if (t.maxUnits === null) {
    return usage ? new AppError('VALIDATION_ERROR', 'usage is reported for a metered purchase (bought with maxUnits) only.', { field: '/body/usage' }) : null;
  }
  if (!usage) return new AppError('VALIDATION_ERROR', `This purchase is metered: say what was used with usage: { units } (0 to ${t.maxUnits}).`, { field: '/body/usage', details: { maxUnits: t.maxUnits } });
  if (usage.units > t.maxUnits) {
    return new AppError('VALIDATION_ERROR', `usage.units is at most the purchase's maxUnits (${t.maxUnits}).`, { field: '/body/usage/units', details: { maxUnits: t.maxUnits } });
  }
  return null;
}

/** D9.7, D9.12: the consumer accepts the output; the wallet is asked to settle. */
export function verify(t: Purchase, c: Command<'verify'>, d: Draft): PurchaseDecision {
  const no = actionRefusal('verify', t.status);
  if (no) return refused(no);
  // D9.14: another verify, or the review window's end, asked for the settlement first.
  if (t.hold === 'settling') return refused(new AppError('INVALID_STATE', 'This transaction is already being settled: another verify or the end of its review window came first.', { details: { status: t.status, settlement: 'in_progress' } }));
  return settle(d.effect({ kind: 'cancelTimers', timers: ['reviewWindow'] }), { qualityScore: c.qualityScore, notes: c.notes });
}

/**
 * D11: a negotiation message; turn and message rules are `decideNegotiationMessage`'s. An accept
 * agrees to the latest offer's price, checked against the consumer's rules at that price (D10.2, on
 * the totals read under its lock): then the hold is asked for — or, when the price needs the
 * owner's approval, it waits for it, recorded as agreed (D10.3).
 */
export function negotiate(t: Purchase, c: Command<'negotiate'>, facts: PurchaseFacts, policy: PurchasePolicy, d: Draft): PurchaseDecision {
  const no = actionRefusal('negotiate', t.status);
  if (no) return refused(no);
  if (t.pendingAcceptBy) return refused(new AppError('INVALID_STATE', 'An accept of this negotiation is waiting for the consumer\'s funds to be held.', { details: { status: t.status, pending: 'accept' } }));
  if (!facts.last) throw new Error('a negotiation message is decided on the negotiation\'s latest message');
  const ruling = decideNegotiationMessage(facts.last, c.caller.agentId, c.body, t.pricing, policy.maxTransactionCents);
  if (ruling.kind === 'refused') return refused(new AppError(ruling.code, ruling.message, ruling.field ? { field: ruling.field } : {}));
  if (ruling.agreedPriceCents !== null) return accept(t, c, ruling.agreedPriceCents, ruling.round, facts, policy, d);
  const expiresAt = ruling.ends ? null : new Date(d.now.getTime() + (c.body.expiresInSeconds ?? policy.offerExpirySeconds) * 1000);
  d.effect({ kind: 'recordMessage', fromAgentId: c.caller.agentId, messageType: c.body.type, round: ruling.round, terms: c.body.terms, message: c.body.message ?? null, expiresAt });
  if (ruling.ends) return d.move('cancelled', { statusReason: ruling.ends }).decision();
  // D11.4: the new offer's expiry replaces the previous one's. The row moves too, so that a step
  // decided on it before this message finds it moved on.
  return d.set({}).effect({ kind: 'schedule', timer: 'offerExpiry', at: expiresAt!, payload: { round: ruling.round } }).decision();
}

function accept(t: Purchase, c: Command<'negotiate'>, agreed: number, round: number, facts: PurchaseFacts, policy: PurchasePolicy, d: Draft): PurchaseDecision {
  if (!c.delegation) throw new Error('an accept is decided with the consumer\'s delegation');
  const limited = limitRefusal(facts, c.delegation, { category: t.category, priceCents: agreed }, policy, false);
  if (limited) return refused(limited);
  const approval = approvalAsked(c.delegation, agreed, policy, d.now);
  if (approval) {
    // D10.3: the price is agreed and the accept recorded; the hold waits for the owner's approval.
    return d
      .effect(
        { kind: 'recordMessage', fromAgentId: c.caller.agentId, messageType: 'accept', round, terms: {}, message: c.body.message ?? null, expiresAt: null },
        { kind: 'cancelTimers', timers: ['offerExpiry'] },
        { kind: 'schedule', timer: 'approvalExpiry', at: new Date(approval.expiresAt) },
      )
      .move('awaiting_approval', { agreedPriceCents: agreed, platformFeeCents: platformFee(agreed), approval })
      .decision();
  }
  // An accept is pending until the wallet holds the agreed price; recorded then (holdPlaced).
  const attempt = t.holdAttempt + 1;
  return d
    .set({ hold: 'requested', holdAttempt: attempt, pendingAcceptBy: c.caller.agentId, pendingAcceptPriceCents: agreed, pendingAcceptMessage: c.body.message ?? null })
    .effect({ kind: 'holdFunds', amountCents: agreed, attempt })
    .decision();
}

/**
 * D10.3: approved by the owner — D10.2 again without the approval rule (403, still waiting), then the
 * hold is asked for; the purchase moves once the wallet holds it (402 leaves it waiting).
 */
export function approve(t: Purchase, c: Command<'approve'>, facts: PurchaseFacts, policy: PurchasePolicy, d: Draft): PurchaseDecision {
  const no = actionRefusal('approve', t.status);
  if (no) return refused(no);
  if (t.hold === 'requested') return refused(new AppError('INVALID_STATE', 'This purchase was approved already; its funds are being held.', { details: { status: t.status, approval: 'in_progress' } }));
  if (!c.delegation) throw new Error('an approval is decided with the consumer\'s delegation');
  const limited = limitRefusal(facts, c.delegation, { category: t.category, priceCents: t.agreedPriceCents! }, policy, false);
  if (limited) return refused(limited);
  const attempt = t.holdAttempt + 1;
  return d
    .set({ hold: 'requested', holdAttempt: attempt, approval: { ...t.approval!, decision: 'approved', decidedAt: d.now.toISOString(), decidedBy: c.caller.agentId } })
    .effect({ kind: 'holdFunds', amountCents: t.agreedPriceCents!, attempt })
    .decision();
}

/** D10.3: denied by the owner; cancelled, with the reason, and any hold on its way returned. */
export function deny(t: Purchase, c: Command<'deny'>, d: Draft): PurchaseDecision {
  const no = actionRefusal('deny', t.status);
  if (no) return refused(no);
  const decided: Approval = { ...d.undecidedApproval(), decision: 'denied', decidedAt: d.now.toISOString(), decidedBy: c.caller.agentId, ...(c.reason ? { reason: c.reason } : {}) };
  return d.move('cancelled', { statusReason: 'approval_denied', approval: decided }).decision();
}

/** D12.1: the consumer disputes a delivery; the review window stops, the hold stays. A transaction is disputed once. */
export function openDispute(t: Purchase, c: Command<'openDispute'>, d: Draft): PurchaseDecision {
  const no = actionRefusal('dispute', t.status);
  if (no) return refused(no);
  if (t.disputeId) return refused(new AppError('INVALID_STATE', 'This transaction was disputed once already; verify it, or let its review window settle it.', { details: { status: t.status, disputeId: t.disputeId } }));
  if (t.hold !== 'held') return refused(new AppError('INVALID_STATE', 'The settlement of this transaction is already under way.', { details: { status: t.status } }));
  return d.effect({ kind: 'cancelTimers', timers: ['reviewWindow'] }).move('disputed', { disputeId: c.disputeId, reviewEndsAt: null }).decision();
}

