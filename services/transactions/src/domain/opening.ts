import { AppError, listPrice } from '@aex/contracts';
import type { Approval } from '../db/schema.js';
import { approvalNeeded, delegationRefusal } from './delegation.js';
import { announcement, refused } from './draft.js';
import { offerRefusal } from './offers.js';
import { platformFee } from './pricing.js';
import { x402OrderRefusal } from './x402-payment.js';
import type { Caller, Delegation, Order, Purchase, PurchaseDecision, PurchaseEffect, PurchaseFacts, PurchasePolicy } from './purchase.js';

/** D10.3: the approval a price needs — asked now, expiring after the policy's time — or null when the rules approve it. */
export function approvalAsked(delegation: Delegation, priceCents: number, policy: PurchasePolicy, now: Date): Approval | null {
  const need = approvalNeeded(delegation.rules, priceCents);
  if (!need) return null;
  return { ...need, requestedAt: now.toISOString(), expiresAt: new Date(now.getTime() + policy.approvalTtlSeconds * 1000).toISOString(), ownerAgentId: delegation.ownerAgentId };
}

/**
 * D9.6 then D10.2, as the totals read under the parties' locks say: 409 LIMIT_REACHED when either
 * party has `maxActivePerAgent` transactions in progress already; 403 DELEGATION_EXCEEDED when the
 * consumer's rules refuse the price (a price that needs a human's approval passes: it waits, D10.3).
 */
export function limitRefusal(facts: PurchaseFacts, delegation: Delegation, attempt: { category: string; priceCents: number }, policy: PurchasePolicy, checkActive: boolean): AppError | null {
  const totals = facts.totals;
  if (!totals) throw new Error('the limits are decided on the totals read under the parties\' locks');
  const limit = policy.maxActivePerAgent;
  if (checkActive) {
    for (const [party, n] of [['consumer', totals.consumerActive], ['provider', totals.providerActive]] as const) {
      if (n >= limit) {
        const who = party === 'consumer' ? 'You have' : 'The provider has';
        return new AppError('LIMIT_REACHED', `${who} ${limit} transactions in progress already; finish or cancel some first.`, { details: { limit, party } });
      }
    }
  }
  const refusal = delegationRefusal(delegation.rules, { ...attempt, spentLast24hCents: totals.spentLast24hCents });
  return refusal && new AppError(refusal.code, refusal.message, { details: refusal.details });
}

/**
 * A new purchase (D9.1–D9.6, D10, D11.4), refused in this order: a deactivated buyer (D6.5), the
 * buyer's own service, a service or provider not active, input failing the contract, units or a price
 * the service does not sell, an opening offer outside the service's bounds or the exchange's ceiling,
 * the parties' transactions in progress (D9.6), the buyer's delegation rules (D10.2). Otherwise: at
 * the list price, the hold asked of the wallet (attempt 1), price and fee agreed — or, when the price
 * needs the owner's approval, waiting for it with nothing held (D10.3); negotiating (D9.4), the
 * consumer's opening offer as round 1, nothing agreed. A delivery may be tried `1 + sla.maxRetries`
 * times (D9.7).
 */
export function openPurchase(caller: Caller, order: Order, facts: PurchaseFacts, policy: PurchasePolicy, now: Date): PurchaseDecision {
  const { contract } = order;
  if (caller.status !== 'active') return refused(new AppError('AGENT_INACTIVE', 'A deactivated agent cannot start anything new.', { details: { status: caller.status } }));
  if (contract.agentId === caller.agentId) return refused(new AppError('VALIDATION_ERROR', 'An agent may not buy its own service.', { field: '/body/serviceId' }));
  if (contract.status !== 'active' || contract.providerStatus !== 'active') {
    return refused(new AppError('SERVICE_NOT_ACTIVE', 'The service or its provider is not active.', { details: { serviceStatus: contract.status, providerStatus: contract.providerStatus } }));
  }
  if (order.inputErrors.length > 0) return refused(AppError.many(order.inputErrors.slice(0, 20)));
  const metered = meteredRefusal(contract.pricing.model, order);
  if (metered) return refused(metered);
  const units = order.maxUnits ?? order.units ?? 1;
  const price = listPrice(contract.pricing, units, policy.maxTransactionCents);
  if (!price.ok) return refused(new AppError('VALIDATION_ERROR', price.message, { field: order.maxUnits !== undefined ? '/body/maxUnits' : '/body/units' }));
  if (order.maxUnits !== undefined && order.maxPriceCents !== undefined && order.maxPriceCents !== price.cents) {
    return refused(new AppError('VALIDATION_ERROR', `A metered purchase is bought at the price of its maxUnits (${price.cents} cents); it is not negotiated.`, { field: '/body/maxPriceCents', details: { heldCents: price.cents } }));
  }
  if (order.session) return sessionCall(caller, order, units, price.cents, now);
  const x402 = x402OrderRefusal(order, price.cents);
  if (x402) return refused(x402);
  // D9.4: negotiation when the service is negotiable or the consumer names another price.
  const negotiating = contract.pricing.model === 'negotiable' || (order.maxPriceCents !== undefined && order.maxPriceCents !== price.cents);
  const offered = negotiating ? order.maxPriceCents ?? price.cents : price.cents;
  const outside = negotiating ? offerRefusal(contract.pricing, offered, policy.maxTransactionCents) : null;
  if (outside) return refused(new AppError('VALIDATION_ERROR', outside.message, { field: '/body/maxPriceCents', details: outside.details }));
  const limited = limitRefusal(facts, order.delegation, { category: contract.category, priceCents: offered }, policy, true);
  if (limited) return refused(limited);
  const t = initiated(caller, order, units, price.cents, negotiating, now);
  const opened = opening(t, order, negotiating ? { priceCents: offered, expiresAt: new Date(now.getTime() + policy.offerExpirySeconds * 1000) } : null, policy, now);
  return { kind: 'changed', changes: { ...opened.state, input: order.input, output: null, metadata: order.metadata }, effects: opened.effects };
}

/**
 * D17.1: a metered purchase (`maxUnits`) is of a service priced per unit or in tiers, names no
 * `units`, and is bought at the price of its most units: a `maxPriceCents` other than that would
 * open a negotiation (D9.4), which a price known only after the work does not have.
 */
function meteredRefusal(model: Order['contract']['pricing']['model'], order: Order): AppError | null {
  if (order.maxUnits === undefined) return null;
  if (order.units !== undefined) return new AppError('VALIDATION_ERROR', 'Give units (a purchase of a known size) or maxUnits (a metered purchase), not both.', { field: '/body/maxUnits' });
  if (model !== 'per_unit' && model !== 'tiered') {
    return new AppError('VALIDATION_ERROR', `maxUnits applies to per_unit and tiered pricing; this service's pricing is ${model}.`, { field: '/body/maxUnits', details: { pricingModel: model } });
  }
  return null;
}

/**
 * D17.5: a call in an open session, held at once with no saga of its own — its price (a metered
 * call's, of its maxUnits) reserved from the session's budget in the same step, which refuses it
 * (402, 409) when the session cannot pay. It is not negotiated, and the session's opening was judged
 * against the buyer's rules: a call inside it needs no approval and counts against no other limit.
 */
function sessionCall(caller: Caller, order: Order, units: number, priceCents: number, now: Date): PurchaseDecision {
  if (order.maxPriceCents !== undefined && order.maxPriceCents !== priceCents) {
    return refused(new AppError('VALIDATION_ERROR', `A session call is bought at the list price (${priceCents} cents); it is not negotiated.`, { field: '/body/maxPriceCents' }));
  }
  const t = initiated(caller, order, units, priceCents, false, now);
  const expiresAt = new Date(now.getTime() + t.sla.timeoutMs);
  const held: Purchase = { ...t, status: 'funds_held', hold: 'held', fundsHeldAt: now, expiresAt, sessionId: order.session!.id, autoVerify: order.session!.autoVerify };
  const effects: PurchaseEffect[] = [
    { kind: 'reserve', sessionId: held.sessionId!, amountCents: priceCents },
    { kind: 'announce', event: announcement(t, null) },
    { kind: 'announce', event: announcement(held, 'initiated') },
    { kind: 'schedule', timer: 'transactionExpiry', at: expiresAt },
  ];
  return { kind: 'changed', changes: { ...held, input: order.input, output: null, metadata: order.metadata }, effects };
}

/** The purchase as it is created, before anything happens to it. */
function initiated(caller: Caller, order: Order, units: number, listPriceCents: number, negotiating: boolean, now: Date): Purchase {
  const { contract } = order;
  return {
    id: order.id, consumerAgentId: caller.agentId, providerAgentId: contract.agentId, consumerAccountId: caller.accountId, providerAccountId: contract.providerAccountId,
    serviceId: contract.serviceId, serviceRevision: contract.revision, serviceVersion: contract.version, serviceName: contract.name, providerName: contract.providerName, category: contract.category, pricing: contract.pricing, sla: contract.sla,
    status: 'initiated', statusReason: null, units: order.maxUnits !== undefined ? null : units, maxUnits: order.maxUnits ?? null, listPriceCents, maxPriceCents: order.maxPriceCents ?? null,
    agreedPriceCents: negotiating ? null : listPriceCents, platformFeeCents: negotiating ? null : platformFee(listPriceCents),
    hold: 'none', holdAttempt: 0, pendingAcceptBy: null, pendingAcceptPriceCents: null, pendingAcceptMessage: null,
    initiatedAt: now, fundsHeldAt: null, expiresAt: null, deliveredAt: null, settledAt: null, reviewEndsAt: null, disputeId: null, approval: null,
    qualityScore: null, notes: null, endingStatus: null, endingReason: null, deliveryAttempts: 0, maxDeliveryAttempts: 1 + (contract.sla.maxRetries ?? 2),
    inputDigest: order.inputDigest ?? null, outputDigest: null, deliverySignature: null, deliverySignatureTimestamp: null, deliverySignatureScheme: null, deliverySignatureInput: null, refundedCents: 0,
    sessionId: null, autoVerify: false, createdAt: now, updatedAt: now,
    x402Nonce: order.x402?.nonce ?? null, x402TimeoutSeconds: order.x402?.timeoutSeconds ?? null, x402Verified: false,
    queryId: order.queryId ?? null,
  };
}

/** Where a new purchase goes first: the hold asked, an approval awaited, or a negotiation opened. */
function opening(t: Purchase, order: Order, offer: { priceCents: number; expiresAt: Date } | null, policy: PurchasePolicy, now: Date): { state: Purchase; effects: PurchaseEffect[] } {
  const effects: PurchaseEffect[] = [{ kind: 'announce', event: announcement(t, null) }];
  // D10.3: at the list price, a price the rules do not approve waits for the owner, with no hold yet.
  // An opening offer never does: its accept may.
  const approval = offer ? null : approvalAsked(order.delegation, t.listPriceCents, policy, now);
  if (approval) {
    const awaiting: Purchase = { ...t, status: 'awaiting_approval', approval };
    effects.push({ kind: 'announce', event: announcement(awaiting, 'initiated') }, { kind: 'schedule', timer: 'approvalExpiry', at: new Date(approval.expiresAt) });
    return { state: awaiting, effects };
  }
  if (!offer) {
    effects.push({ kind: 'holdFunds', amountCents: t.listPriceCents, attempt: 1 });
    return { state: { ...t, hold: 'requested', holdAttempt: 1 }, effects };
  }
  // D9.4: the creation records the consumer's opening offer itself (round 1), and says why the
  // purchase negotiates: a consumer naming a maxPriceCents other than the list price opens a
  // negotiation at that price instead of buying, which surprises if unexplained.
  const negotiating: Purchase = { ...t, status: 'negotiating', statusReason: t.pricing.model === 'negotiable' ? 'negotiable_pricing' : 'max_price_differs_from_list_price' };
  effects.push(
    { kind: 'recordMessage', fromAgentId: t.consumerAgentId, messageType: 'initial_offer', round: 1, terms: { priceCents: offer.priceCents }, message: null, expiresAt: offer.expiresAt },
    { kind: 'schedule', timer: 'offerExpiry', at: offer.expiresAt, payload: { round: 1 } },
    { kind: 'announce', event: announcement(negotiating, 'initiated') },
  );
  return { state: negotiating, effects };
}
