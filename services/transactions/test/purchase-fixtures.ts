import type { ContractView, DelegationRules } from '@aex/contracts';
import type { Approval } from '../src/db/schema.js';
import { platformFee } from '../src/domain/pricing.js';
import type { Caller, Delegation, Order, Purchase, PurchaseCommand, PurchaseDecision, PurchaseEffect, PurchaseFacts, PurchasePolicy } from '../src/domain/purchase.js';

// What the purchase's unit tests share: a transaction in every state a committed step leaves it in,
// the agents that ask, the exchange's policy, and the commands of every kind.

export const CONSUMER = '00000000-0000-4000-8000-00000000000c';
export const PROVIDER = '00000000-0000-4000-8000-00000000000p';
export const OWNER = '00000000-0000-4000-8000-00000000000o';
export const STRANGER = '00000000-0000-4000-8000-00000000000s';
export const NOW = new Date('2026-11-27T12:00:00Z');
export const HELD_AT = new Date('2026-11-27T11:00:00Z');

export const caller = (agentId: string, accountId: string, isOwner = false): Caller => ({ agentId, accountId, isOwner, status: 'active' });
export const AS_CONSUMER = caller(CONSUMER, 'acct');
export const AS_PROVIDER = caller(PROVIDER, 'acct-p');
export const AS_OWNER = caller(OWNER, 'acct', true);
export const AS_STRANGER = caller(STRANGER, 'acct-s', true);

export const POLICY: PurchasePolicy = { maxTransactionCents: 10_000_000, maxActivePerAgent: 100, approvalTtlSeconds: 86_400, reviewWindowMs: 60_000, offerExpirySeconds: 300 };

export const base: Purchase = {
  id: '00000000-0000-4000-8000-000000000001', consumerAgentId: CONSUMER, providerAgentId: PROVIDER, consumerAccountId: 'acct', providerAccountId: 'acct-p', serviceId: 'svc',
  serviceRevision: 1, serviceVersion: '1.0.0', serviceName: 'Summariser', providerName: 'Acme', category: 'text', pricing: { model: 'fixed', basePriceCents: 1000 },
  sla: { maxLatencyMs: 60_000, timeoutMs: 3_600_000, maxRetries: 2 }, status: 'initiated', statusReason: null, units: 1, maxUnits: null, inputDigest: null, outputDigest: null, deliverySignature: null, deliverySignatureTimestamp: null, deliverySignatureScheme: null, deliverySignatureInput: null, refundedCents: 0, sessionId: null, autoVerify: false, x402Nonce: null, x402TimeoutSeconds: null, x402Verified: false, queryId: null, listPriceCents: 1000,
  maxPriceCents: null, agreedPriceCents: 1000, platformFeeCents: 50, hold: 'requested', holdAttempt: 1, pendingAcceptBy: null, pendingAcceptPriceCents: null,
  pendingAcceptMessage: null, initiatedAt: HELD_AT, fundsHeldAt: null, expiresAt: null, deliveredAt: null, settledAt: null, reviewEndsAt: null, disputeId: null,
  approval: null, qualityScore: null, notes: null, endingStatus: null, endingReason: null, deliveryAttempts: 0, maxDeliveryAttempts: 3, createdAt: HELD_AT, updatedAt: HELD_AT,
};
const held = { fundsHeldAt: HELD_AT, expiresAt: new Date(HELD_AT.getTime() + 3_600_000), hold: 'held' as const };
const delivered = { ...held, deliveryAttempts: 1, deliveredAt: new Date(HELD_AT.getTime() + 1_000), reviewEndsAt: new Date(NOW.getTime() + 60_000) };
const negotiation = { pricing: { model: 'negotiable' as const, basePriceCents: 1000 }, agreedPriceCents: null, platformFeeCents: null, hold: 'none' as const, holdAttempt: 0 };
/** D10.3: a purchase at the list price waiting for the owner (asked an hour ago, for a day). */
export const APPROVAL: Approval = { rule: 'requireHumanApprovalAboveCents', limit: 500, attempted: 1000, requestedAt: HELD_AT.toISOString(), expiresAt: new Date(HELD_AT.getTime() + 86_400_000).toISOString(), ownerAgentId: OWNER };
const awaiting = { status: 'awaiting_approval' as const, hold: 'none' as const, holdAttempt: 0, approval: APPROVAL };
const approved = { ...awaiting, hold: 'requested' as const, holdAttempt: 1, approval: { ...APPROVAL, decision: 'approved' as const, decidedAt: NOW.toISOString(), decidedBy: OWNER } };
const negotiatedApproval = { ...negotiation, agreedPriceCents: 900, platformFeeCents: platformFee(900), approval: { ...APPROVAL, attempted: 900 } };
/** Terminal means settled: ending with `status` while the wallet returns the price. */
const ending = (status: Purchase['status'], reason: string) => ({ hold: 'returning' as const, endingStatus: status, endingReason: reason });

/** Every state a transaction is left in by a committed step: its status and hold, and the variants that decide differently. */
export const STATES: Record<string, Partial<Purchase>> = {
  'initiated/requested': {},
  'initiated/returning → cancelled': { ...ending('cancelled', 'cancelled_by_consumer') },
  'negotiating/none': { ...negotiation, status: 'negotiating' },
  'negotiating/requested, accept pending': { ...negotiation, status: 'negotiating', hold: 'requested', holdAttempt: 1, pendingAcceptBy: PROVIDER, pendingAcceptPriceCents: 900 },
  'negotiating/refused': { ...negotiation, status: 'negotiating', hold: 'refused', holdAttempt: 1 },
  'negotiating/returning → cancelled': { ...negotiation, status: 'negotiating', holdAttempt: 1, agreedPriceCents: 900, platformFeeCents: platformFee(900), ...ending('cancelled', 'cancelled_by_consumer') },
  'awaiting_approval/none': awaiting,
  'awaiting_approval/none, negotiated': { ...awaiting, ...negotiatedApproval },
  'awaiting_approval/requested': approved,
  'awaiting_approval/requested, negotiated': { ...approved, ...negotiatedApproval, hold: 'requested', holdAttempt: 1 },
  'awaiting_approval/requested, its time run out': { ...approved, approval: { ...approved.approval, expiresAt: new Date(NOW.getTime() - 1).toISOString() } },
  'awaiting_approval/refused': { ...awaiting, hold: 'refused', holdAttempt: 1 },
  'awaiting_approval/returning → cancelled': { ...approved, ...ending('cancelled', 'approval_denied') },
  'funds_held/held': { ...held, status: 'funds_held' },
  'funds_held/returning → cancelled': { ...held, status: 'funds_held', ...ending('cancelled', 'cancelled_by_provider') },
  'executing/held': { ...held, status: 'executing' },
  'executing/returning → expired': { ...held, status: 'executing', ...ending('expired', 'sla_timeout') },
  'validation_failed/held': { ...held, status: 'validation_failed', deliveryAttempts: 1 },
  'validation_failed/held, last attempt left': { ...held, status: 'validation_failed', deliveryAttempts: 2 },
  'validation_failed/returning → failed': { ...held, status: 'validation_failed', deliveryAttempts: 3, ...ending('failed', 'output_validation_failed') },
  'delivered/held': { ...delivered, status: 'delivered' },
  'delivered/held, disputed before': { ...delivered, status: 'delivered', disputeId: 'd1' },
  'delivered/settling': { ...delivered, status: 'delivered', hold: 'settling' },
  'disputed/held': { ...delivered, status: 'disputed', disputeId: 'd1', reviewEndsAt: null },
  'disputed/settling': { ...delivered, status: 'disputed', disputeId: 'd1', reviewEndsAt: null, hold: 'settling' },
  'disputed/returning → failed': { ...delivered, status: 'disputed', disputeId: 'd1', reviewEndsAt: null, ...ending('failed', 'dispute_consumer_wins') },
  'settled/settled': { ...delivered, status: 'settled', hold: 'settled' },
  'cancelled/none': { ...negotiation, status: 'cancelled' },
  'cancelled/returned': { status: 'cancelled', hold: 'returned' },
  'cancelled/refused': { ...negotiation, status: 'cancelled', hold: 'refused', holdAttempt: 1 },
  'expired/returned': { ...held, status: 'expired', hold: 'returned' },
  'failed/refused': { status: 'failed', hold: 'refused' },
  'failed/returned': { ...delivered, status: 'failed', hold: 'returned' },
};

export const stateOf = (name: string): Purchase => ({ ...base, ...STATES[name] });
export const key = (t: Pick<Purchase, 'status' | 'hold' | 'endingStatus'>) => `${t.status}/${t.hold}${t.endingStatus ? ` → ${t.endingStatus}` : ''}`;

/** The consumer's rules: approving everything, or asking for prices above 500 cents (D10.3). */
export const delegation = (rules: DelegationRules = {}): Delegation => ({ rules, ownerAgentId: OWNER });
export const STRICT = delegation({ requireHumanApprovalAboveCents: 500 });

/** The latest message of a negotiation the consumer opened at 800 cents. */
export const consumerOffer = { fromAgentId: CONSUMER, round: 1, messageType: 'initial_offer' as const, priceCents: 800 };
/** The totals read under the parties' locks: nothing in progress, nothing spent. */
export const QUIET = { consumerActive: 0, providerActive: 0, spentLast24hCents: 0 };
/** The facts every command here is decided with. */
export const FACTS: PurchaseFacts = { last: consumerOffer, totals: QUIET };

export const negotiate = (body: Extract<PurchaseCommand, { kind: 'negotiate' }>['body'], d?: ReturnType<typeof delegation>): PurchaseCommand =>
  ({ kind: 'negotiate', caller: AS_PROVIDER, body, ...(d && { delegation: d }) });

/** Requests are refused where they do not apply; the wallet's answers and timers change nothing there. */
export type Kind = 'request' | 'answer' | 'dispute resolution';
export const COMMANDS: Record<string, { kind: Kind; command: PurchaseCommand }> = {
  'hold placed': { kind: 'answer', command: { kind: 'holdPlaced', attempt: 1, at: HELD_AT } },
  'hold placed, stale attempt': { kind: 'answer', command: { kind: 'holdPlaced', attempt: 0, at: HELD_AT } },
  'hold refused': { kind: 'answer', command: { kind: 'holdRefused', attempt: 1, reason: 'insufficient_funds' } },
  'hold returned': { kind: 'answer', command: { kind: 'holdReturned' } },
  'hold settled': { kind: 'answer', command: { kind: 'holdSettled', at: NOW } },
  start: { kind: 'request', command: { kind: 'start', caller: AS_PROVIDER } },
  'deliver valid output': { kind: 'request', command: { kind: 'deliver', caller: AS_PROVIDER, output: { ok: true }, outputErrors: [] } },
  'deliver invalid output': { kind: 'request', command: { kind: 'deliver', caller: AS_PROVIDER, output: { ok: false }, outputErrors: [{ code: 'OUTPUT_VALIDATION_FAILED', message: 'no', field: '/output/ok' }] } },
  verify: { kind: 'request', command: { kind: 'verify', caller: AS_CONSUMER, qualityScore: 90, notes: null } },
  cancel: { kind: 'request', command: { kind: 'cancel', caller: AS_CONSUMER } },
  'counter-offer': { kind: 'request', command: negotiate({ type: 'counter_offer', terms: { priceCents: 900 } }) },
  accept: { kind: 'request', command: negotiate({ type: 'accept', terms: {} }, delegation()) },
  'accept at a price needing approval': { kind: 'request', command: negotiate({ type: 'accept', terms: {} }, STRICT) },
  approve: { kind: 'request', command: { kind: 'approve', caller: AS_OWNER, delegation: delegation() } },
  deny: { kind: 'request', command: { kind: 'deny', caller: AS_OWNER, reason: 'too dear' } },
  'approval expired': { kind: 'answer', command: { kind: 'approvalExpired' } },
  'offer expired': { kind: 'answer', command: { kind: 'offerExpired', round: 1 } },
  'offer expired, a newer offer since': { kind: 'answer', command: { kind: 'offerExpired', round: 0 } },
  'transaction expired': { kind: 'answer', command: { kind: 'expire' } },
  'review window ended': { kind: 'answer', command: { kind: 'reviewWindowEnded' } },
  'open dispute': { kind: 'request', command: { kind: 'openDispute', caller: AS_CONSUMER, disputeId: 'd2' } },
  'dispute: consumer wins': { kind: 'dispute resolution', command: { kind: 'resolveDispute', outcome: 'consumer_wins', refundCents: 1000 } },
  'dispute: provider wins': { kind: 'dispute resolution', command: { kind: 'resolveDispute', outcome: 'provider_wins', refundCents: 0 } },
  'dispute: partial refund': { kind: 'dispute resolution', command: { kind: 'resolveDispute', outcome: 'partial_refund', refundCents: 300 } },
  'dispute: provider redoes': { kind: 'dispute resolution', command: { kind: 'resolveDispute', outcome: 'provider_redo', refundCents: 0 } },
};

export const effectsOf = <K extends PurchaseEffect['kind']>(d: PurchaseDecision, kind: K) =>
  (d.kind === 'changed' ? d.effects.filter((e) => e.kind === kind) : []) as Extract<PurchaseEffect, { kind: K }>[];

export function changed(d: PurchaseDecision) {
  if (d.kind !== 'changed') throw new Error(`expected a change, got ${d.kind}${d.kind === 'refused' ? `: ${d.error.message}` : ''}`);
  return d;
}

export const after = (t: Purchase, d: PurchaseDecision): Purchase => ({ ...t, ...changed(d).changes } as Purchase);

/** A service's contract as the catalog gives it. */
export const contract = (over: Partial<ContractView> = {}): ContractView => ({
  serviceId: 'svc', agentId: PROVIDER, providerAccountId: 'acct-p', name: 'Summariser', providerName: 'Acme', revision: 1, version: '1.0.0', category: 'text', status: 'active', providerStatus: 'active',
  inputSchema: {}, outputSchema: {}, pricing: { model: 'fixed', basePriceCents: 1000 }, sla: { maxLatencyMs: 60_000, timeoutMs: 3_600_000, maxRetries: 2 }, ...over,
});

/** A purchase asked for by the consumer (POST /v1/transactions). */
export const order = (over: Partial<Order> = {}): Order => ({
  id: base.id, contract: contract(), delegation: delegation(), inputErrors: [], input: { text: 'hi' }, units: undefined, maxPriceCents: undefined, metadata: {}, ...over,
});
