import { AppError, type DelegationRules, type DisputeOutcome, type NegotiateBody, type Static, type TransactionEventData, type TransactionStatus, type TrustOutcome } from '@aex/contracts';
import type { Decision } from '@aex/platform';
import type { Approval, HoldState, TransactionRow } from '../db/schema.js';
import { approvalNeeded, type ApprovalNeed } from './delegation.js';
import { decideNegotiationMessage, type LastMessage } from './negotiation.js';
import { platformFee } from './pricing.js';
import { actionRefusal, canMove, isAllowed, isTerminal } from './state-machine.js';

/**
 * The purchase as a pure decision (D9, D11, D12.8, D15.2): given a transaction's state and a command
 * — a request, the wallet's answer, a timer — `decidePurchase` says whether it is refused, changes
 * nothing, or which columns change and which effects go with them. No I/O: the step runner
 * (`runStep`) reads and writes, the repository makes the effects.
 */

/** The transaction as decisions see it: the row without the parts whose size the caller chooses. */
export type Purchase = Omit<TransactionRow, 'input' | 'output' | 'metadata'>;
/** The columns a decision writes (`output` only by a valid delivery, and its undoing by a redo). */
export type PurchaseChanges = Partial<Omit<TransactionRow, 'input' | 'metadata'>>;

/** Durable timer kinds of the purchase (ARCHITECTURE "Timers"), as stored. */
export const TIMERS = { offerExpiry: 'offer_expiry', transactionExpiry: 'transaction_expiry', reviewWindow: 'review_window', disputeDeadline: 'dispute_deadline', approvalExpiry: 'approval_expiry' } as const;
export type PurchaseTimer = Exclude<keyof typeof TIMERS, 'disputeDeadline'>;

export type PurchaseEffect =
  /** Ask the wallet to hold the price (each attempt numbered: an accept refused for funds may come again). */
  | { kind: 'holdFunds'; amountCents: number; attempt: number }
  /** Ask the wallet to give the held price back to the consumer. */
  | { kind: 'returnHold' }
  /** Ask the wallet to pay the held price to the provider, minus the fee, after `refundCents` back to the consumer (D13.3, D12.8). */
  | { kind: 'settle'; amountCents: number; feeCents: number; refundCents: number }
  | { kind: 'schedule'; timer: PurchaseTimer; at: Date; payload?: { round: number } }
  | { kind: 'cancelTimers'; timers: readonly PurchaseTimer[] }
  /** The latest offer's expiry again (an accept refused for funds leaves the negotiation as it was, D9.7). */
  | { kind: 'restoreOfferExpiry' }
  /** A negotiation message, at `round` (D11). */
  | { kind: 'recordMessage'; fromAgentId: string; messageType: NegotiateBody['type']; round: number; terms: Record<string, unknown>; message: string | null; expiresAt: Date | null }
  /** The pending accept, recorded once its hold is placed, after the latest message. */
  | { kind: 'recordAccept'; fromAgentId: string; message: string | null }
  /** `transaction.<status>` for both parties (D14.1). */
  | { kind: 'announce'; event: Static<typeof TransactionEventData> }
  /** What the provider's trust counts (D15.2). */
  | { kind: 'trustOutcome'; outcome: TrustOutcome; qualityScore: number | null; late: boolean };

/**
 * D10.3: who approves the consumer's purchases and how long they wait — with the rules in force,
 * which say whether a price needs the approval (`approvalNeeded`).
 */
export interface Approver {
  rules: DelegationRules;
  ownerAgentId: string;
  ttlSeconds: number;
}

export type PurchaseCommand =
  | { kind: 'holdPlaced'; attempt: number; at: Date }
  | { kind: 'holdRefused'; attempt: number; reason: string }
  | { kind: 'holdReturned' }
  | { kind: 'holdSettled'; at: Date }
  | { kind: 'start' }
  | { kind: 'deliver'; valid: boolean; output: Record<string, unknown>; reviewWindowMs: number }
  | { kind: 'verify'; qualityScore: number | null; notes: string | null }
  | { kind: 'cancel'; by: 'consumer' | 'provider' }
  /** A negotiation message (D11); `last` is the latest message, read with the transaction locked. */
  | { kind: 'negotiate'; by: string; body: NegotiateBody; last: LastMessage; expiresInSeconds: number; maxTransactionCents: number; approver: Approver | null }
  /** D10.3: the consumer's account owner decides; `reason` says why it denies. */
  | { kind: 'approve'; by: string }
  | { kind: 'deny'; by: string; reason: string | null }
  | { kind: 'approvalExpired' }
  | { kind: 'offerExpired'; round: number; latestRound: number | null }
  | { kind: 'expire' }
  | { kind: 'reviewWindowEnded' }
  | { kind: 'openDispute'; disputeId: string }
  | { kind: 'resolveDispute'; outcome: DisputeOutcome; refundCents: number };

export type PurchaseDecision = Decision<PurchaseChanges, PurchaseEffect>;

/**
 * Where the money of a transaction stands in the wallet, as this service knows it (the saga's state,
 * D9.9), and the only moves it makes. `requested`, `returning` and `settling` are commands sent and
 * not yet answered.
 */
export const HOLD_MOVES: Readonly<Record<HoldState, readonly HoldState[]>> = {
  none: ['requested'],
  // Placed; refused; or the transaction ended before the answer (returned once placed, or refused).
  requested: ['held', 'refused', 'returning'],
  held: ['settling', 'returning'],
  // Refused for funds: a later accept asks again.
  refused: ['requested'],
  // The wallet returned it; or refused a hold it had not placed, so nothing was held.
  returning: ['returned'],
  returned: [],
  settling: ['settled'],
  settled: [],
};

export const canMoveHold = (from: HoldState, to: HoldState) => from === to || HOLD_MOVES[from].includes(to);

const unchanged: PurchaseDecision = { kind: 'unchanged' };
const refused = (error: AppError): PurchaseDecision => ({ kind: 'refused', error });

/** A decision being built: the state as it stands after the changes so far, and the effects. */
class Draft {
  readonly changes: PurchaseChanges = {};
  readonly effects: PurchaseEffect[] = [];
  state: Purchase;

  constructor(readonly from: Purchase, readonly now: Date) {
    this.state = from;
  }

  set(changes: PurchaseChanges): this {
    if (changes.hold !== undefined && !canMoveHold(this.state.hold, changes.hold)) {
      throw new Error(`transaction ${this.state.id}: no hold move from ${this.state.hold} to ${changes.hold}`);
    }
    Object.assign(this.changes, changes, { updatedAt: this.now });
    this.state = { ...this.state, ...changes, updatedAt: this.now } as Purchase;
    return this;
  }

  effect(...effects: PurchaseEffect[]): this {
    this.effects.push(...effects);
    return this;
  }

  /**
   * A status move (D9.7): refused by the state machine only through a bug. Announced to both parties;
   * reaching a terminal status with money held, or a hold on its way, sends it back, and drops the
   * transaction's timers; a trust outcome is recorded when the provider's record counts it.
   */
  move(to: TransactionStatus, patch: PurchaseChanges = {}): this {
    const from = this.state.status;
    if (!canMove(from, to)) throw new Error(`transaction ${this.state.id}: no move from ${from} to ${to}`);
    const hold = patch.hold ?? this.state.hold;
    const returning = isTerminal(to) && (hold === 'requested' || hold === 'held');
    this.set({ statusReason: null, ...patch, status: to, ...(returning ? { hold: 'returning' as const } : {}) });
    if (returning) this.effect({ kind: 'returnHold' });
    if (isTerminal(to)) this.effect({ kind: 'cancelTimers', timers: ['offerExpiry', 'transactionExpiry', 'reviewWindow', 'approvalExpiry'] });
    this.effect({ kind: 'announce', event: announcement(this.state, from) });
    const outcome = trustOutcome(this.state);
    if (outcome) this.effect(outcome);
    return this;
  }

  decision(): PurchaseDecision {
    return { kind: 'changed', changes: this.changes, effects: this.effects };
  }
}

/**
 * The event of the transaction as it now is, entering its status from `previousStatus`. Waiting for
 * an approval, it names the consumer's account owner agent, who is told too (D10.3).
 */
export function announcement(t: Purchase, previousStatus: TransactionStatus | null): Static<typeof TransactionEventData> {
  return {
    transactionId: t.id, status: t.status, previousStatus, statusReason: t.statusReason, consumerAgentId: t.consumerAgentId,
    providerAgentId: t.providerAgentId, serviceId: t.serviceId, agreedPriceCents: t.agreedPriceCents, platformFeeCents: t.platformFeeCents,
    ...(t.status === 'awaiting_approval' && t.approval ? { ownerAgentId: t.approval.ownerAgentId } : {}),
  };
}

/** D10.3: the approval a price needs — asked now, expiring `ttlSeconds` later — or null when the rules approve it. */
export function approvalAsked(approver: Approver, priceCents: number, now: Date): Approval | null {
  const need: ApprovalNeed | null = approvalNeeded(approver.rules, priceCents);
  if (!need) return null;
  return { ...need, requestedAt: now.toISOString(), expiresAt: new Date(now.getTime() + approver.ttlSeconds * 1000).toISOString(), ownerAgentId: approver.ownerAgentId };
}

/** D9.4: whether the purchase was bought through a negotiation (its approval then moves it through `matched`). */
const negotiated = (t: Purchase) => t.pricing.model === 'negotiable' || (t.maxPriceCents !== null && t.maxPriceCents !== t.listPriceCents);

/** The approval as it was before a decision that did not hold (an approval whose hold was refused, D10.3). */
function undecided(a: Approval): Approval {
  const { decidedAt: _at, decidedBy: _by, decision: _decision, reason: _reason, ...asked } = a;
  return asked;
}

/**
 * D15.2: the provider's trust counts a transaction that ends after its price was held — settled,
 * failed (its output never passed, or a dispute the consumer won) or expired; one that failed before
 * any hold (the consumer's funds) or was cancelled says nothing about the provider. Late: delivered
 * more than `sla.maxLatencyMs` after the hold.
 */
export function trustOutcome(t: Purchase): Extract<PurchaseEffect, { kind: 'trustOutcome' }> | undefined {
  if (t.fundsHeldAt === null || (t.status !== 'settled' && t.status !== 'failed' && t.status !== 'expired')) return undefined;
  const late = t.deliveredAt !== null && t.deliveredAt.getTime() - t.fundsHeldAt.getTime() > t.sla.maxLatencyMs;
  const outcome = t.status === 'failed' && t.statusReason === 'dispute_consumer_wins' ? 'dispute_lost' : t.status;
  return { kind: 'trustOutcome', outcome, qualityScore: t.qualityScore, late };
}

/**
 * The changes that make a pending accept's price the agreed one (D11.2, with its fee, D9.11): when
 * its hold is placed, and when the transaction is cancelled while the hold was on its way (the
 * price held and returned is then the one the transaction shows).
 */
const agreedPendingAccept = (t: Purchase): PurchaseChanges => (t.pendingAcceptBy && t.pendingAcceptPriceCents !== null
  ? { agreedPriceCents: t.pendingAcceptPriceCents, platformFeeCents: platformFee(t.pendingAcceptPriceCents), pendingAcceptBy: null, pendingAcceptPriceCents: null, pendingAcceptMessage: null }
  : {});

/** What a new purchase is made of: who buys what, at which list price, and the opening offer if it negotiates. */
export type Opening = Pick<Purchase, 'id' | 'consumerAgentId' | 'providerAgentId' | 'consumerAccountId' | 'providerAccountId' | 'serviceId' | 'serviceRevision' | 'serviceVersion' | 'category' | 'pricing' | 'sla' | 'units' | 'listPriceCents' | 'maxPriceCents'> & {
  /** D9.4: the consumer's opening offer and when it expires; null buys at the list price. */
  offer: { priceCents: number; expiresAt: Date } | null;
  /** D10.3: who approves the consumer's purchases; a purchase at the list price may need it. An opening offer never does: its accept may. */
  approver: Approver;
};

/**
 * A new purchase: its first state and effects (D9.1–D9.4). At the list price it asks the wallet for
 * the hold (attempt 1), its price and fee agreed; negotiating, it opens with the consumer's offer and
 * agrees nothing yet. A delivery may be tried `1 + sla.maxRetries` times (D9.7).
 */
export function openPurchase(o: Opening, now: Date): { state: Purchase; effects: PurchaseEffect[] } {
  const { offer, approver, ...fields } = o;
  // D10.3: at the list price, a price the rules do not approve waits for the owner, with no hold yet.
  const approval = offer ? null : approvalAsked(approver, o.listPriceCents, now);
  const holding = !offer && !approval;
  const t: Purchase = {
    ...fields, status: 'initiated', statusReason: null,
    agreedPriceCents: offer ? null : o.listPriceCents, platformFeeCents: offer ? null : platformFee(o.listPriceCents),
    hold: holding ? 'requested' : 'none', holdAttempt: holding ? 1 : 0,
    pendingAcceptBy: null, pendingAcceptPriceCents: null, pendingAcceptMessage: null,
    initiatedAt: now, fundsHeldAt: null, expiresAt: null, deliveredAt: null, settledAt: null, reviewEndsAt: null, disputeId: null, approval: null,
    qualityScore: null, notes: null, deliveryAttempts: 0, maxDeliveryAttempts: 1 + (o.sla.maxRetries ?? 2), createdAt: now, updatedAt: now,
  };
  const effects: PurchaseEffect[] = [{ kind: 'announce', event: announcement(t, null) }];
  if (approval) {
    const awaiting: Purchase = { ...t, status: 'awaiting_approval', approval };
    effects.push({ kind: 'announce', event: announcement(awaiting, 'initiated') }, { kind: 'schedule', timer: 'approvalExpiry', at: new Date(approval.expiresAt) });
    return { state: awaiting, effects };
  }
  if (!offer) {
    effects.push({ kind: 'holdFunds', amountCents: o.listPriceCents, attempt: t.holdAttempt });
    return { state: t, effects };
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

/** What `command` does to the purchase in state `t` at `now`. */
export function decidePurchase(t: Purchase, command: PurchaseCommand, now: Date): PurchaseDecision {
  const draft = () => new Draft(t, now);
  switch (command.kind) {
    case 'holdPlaced': {
      // Only the answer the transaction waits for: late, repeated or stale answers change nothing. A
      // hold placed for a transaction that ended meanwhile is already being returned (the move sent it).
      if (t.hold !== 'requested' || command.attempt !== t.holdAttempt) return unchanged;
      const d = draft();
      if (t.status === 'awaiting_approval') {
        // D10.3: approved; after a negotiation `awaiting_approval → matched → funds_held`, as an accept would go.
        d.effect({ kind: 'cancelTimers', timers: ['approvalExpiry'] });
        if (negotiated(t)) d.move('matched');
      }
      if (t.status === 'negotiating' && t.pendingAcceptBy) {
        // The pending accept is recorded now: `negotiating → matched → funds_held`, both announced (D9.7).
        d.effect({ kind: 'recordAccept', fromAgentId: t.pendingAcceptBy, message: t.pendingAcceptMessage }, { kind: 'cancelTimers', timers: ['offerExpiry'] });
        d.move('matched', agreedPendingAccept(t));
      }
      if (d.state.status !== 'initiated' && d.state.status !== 'matched' && d.state.status !== 'awaiting_approval') throw new Error(`hold placed for transaction ${t.id} in status ${t.status}`);
      // D9.5: the transaction expires `sla.timeoutMs` after its funds are held.
      const expiresAt = new Date(command.at.getTime() + t.sla.timeoutMs);
      d.move('funds_held', { hold: 'held', fundsHeldAt: command.at, expiresAt });
      return d.effect({ kind: 'schedule', timer: 'transactionExpiry', at: expiresAt }).decision();
    }
    case 'holdRefused': {
      // A refusal of a hold already being returned (the transaction ended before the wallet saw it): nothing was held.
      if (t.hold === 'returning') return draft().set({ hold: 'returned' }).decision();
      if (t.hold !== 'requested' || command.attempt !== t.holdAttempt) return unchanged;
      if (t.status === 'awaiting_approval') {
        // D10.3: an approval whose hold is refused leaves the purchase waiting, undecided — cancelled
        // when its time ran out meanwhile (its timer found the hold on its way and left it).
        const d = draft().set({ hold: 'refused', approval: undecided(t.approval!) });
        return (now >= new Date(t.approval!.expiresAt) ? d.move('cancelled', { statusReason: 'approval_expired' }) : d).decision();
      }
      // A new transaction fails (402 to its creator); a pending accept is dropped and the negotiation
      // goes on as before it (D9.7), its latest offer expiring when it would have.
      if (t.status === 'initiated') return draft().move('failed', { hold: 'refused', statusReason: command.reason }).decision();
      return draft().set({ hold: 'refused', pendingAcceptBy: null, pendingAcceptPriceCents: null, pendingAcceptMessage: null }).effect({ kind: 'restoreOfferExpiry' }).decision();
    }
    case 'holdReturned':
      return t.hold === 'returning' ? draft().set({ hold: 'returned' }).decision() : unchanged;
    case 'holdSettled':
      // The reason the settlement was asked for (`review_window_ended`, a dispute's outcome, none for a verify) stays.
      return t.hold === 'settling' ? draft().move('settled', { hold: 'settled', settledAt: command.at, statusReason: t.statusReason }).decision() : unchanged;
    case 'start': {
      const no = actionRefusal('start', t.status);
      return no ? refused(no) : draft().move('executing').decision();
    }
    case 'deliver': {
      // D9.7: invalid output still moves the status; `failed`, the hold returned, once the attempts are spent.
      const no = actionRefusal('deliver', t.status);
      if (no) return refused(no);
      const attempts = t.deliveryAttempts + 1;
      if (!command.valid) {
        return draft().move(attempts >= t.maxDeliveryAttempts ? 'failed' : 'validation_failed', { deliveryAttempts: attempts, statusReason: 'output_validation_failed' }).decision();
      }
      // Settled by itself when the review window ends with neither verify nor dispute.
      const reviewEndsAt = new Date(now.getTime() + command.reviewWindowMs);
      return draft()
        .move('delivered', { output: command.output, deliveredAt: now, deliveryAttempts: attempts, reviewEndsAt })
        .effect({ kind: 'schedule', timer: 'reviewWindow', at: reviewEndsAt })
        .decision();
    }
    case 'verify': {
      const no = actionRefusal('verify', t.status);
      if (no) return refused(no);
      // D9.14: another verify, or the review window's end, asked for the settlement first.
      if (t.hold === 'settling') return refused(new AppError('INVALID_STATE', 'This transaction is already being settled: another verify or the end of its review window came first.', { details: { status: t.status, settlement: 'in_progress' } }));
      return settle(draft().effect({ kind: 'cancelTimers', timers: ['reviewWindow'] }), { qualityScore: command.qualityScore, notes: command.notes });
    }
    case 'cancel': {
      const no = actionRefusal('cancel', t.status);
      // Cancelled while an accept waited for its hold: the price both agreed to is the one held and returned.
      return no ? refused(no) : draft().move('cancelled', { statusReason: `cancelled_by_${command.by}`, ...agreedPendingAccept(t) }).decision();
    }
    case 'negotiate':
      return negotiate(t, command, draft());
    case 'approve': {
      const no = actionRefusal('approve', t.status);
      if (no) return refused(no);
      if (t.hold === 'requested') return refused(new AppError('INVALID_STATE', 'This purchase was approved already; its funds are being held.', { details: { status: t.status, approval: 'in_progress' } }));
      // D10.3: the hold is asked for now; the purchase moves once the wallet holds it (402 leaves it waiting).
      const attempt = t.holdAttempt + 1;
      return draft()
        .set({ hold: 'requested', holdAttempt: attempt, approval: { ...t.approval!, decision: 'approved', decidedAt: now.toISOString(), decidedBy: command.by } })
        .effect({ kind: 'holdFunds', amountCents: t.agreedPriceCents!, attempt })
        .decision();
    }
    case 'deny': {
      const no = actionRefusal('deny', t.status);
      if (no) return refused(no);
      const decided: Approval = { ...undecided(t.approval!), decision: 'denied', decidedAt: now.toISOString(), decidedBy: command.by, ...(command.reason ? { reason: command.reason } : {}) };
      return draft().move('cancelled', { statusReason: 'approval_denied', approval: decided }).decision();
    }
    case 'approvalExpired':
      // D10.3: undecided in time. An approval whose hold is on its way is settled by the wallet's answer.
      return t.status === 'awaiting_approval' && t.hold !== 'requested' ? draft().move('cancelled', { statusReason: 'approval_expired' }).decision() : unchanged;
    case 'offerExpired':
      // D11.4: the latest offer went unanswered; an accept waiting for its hold, or a newer offer, keeps it going.
      if (t.status !== 'negotiating' || t.pendingAcceptBy || command.latestRound !== command.round) return unchanged;
      return draft().move('cancelled', { statusReason: 'offer_expired' }).decision();
    case 'expire':
      // D9.7: no valid delivery by `expiresAt`.
      return isAllowed('expire', t.status) ? draft().move('expired', { statusReason: 'sla_timeout' }).decision() : unchanged;
    case 'reviewWindowEnded':
      // Delivered, and neither verified nor disputed: settled as a verify would, the reason kept through to `settled`.
      return t.status === 'delivered' && t.hold === 'held' ? settle(draft(), { statusReason: 'review_window_ended' }) : unchanged;
    case 'openDispute': {
      const no = actionRefusal('dispute', t.status);
      if (no) return refused(no);
      if (t.disputeId) return refused(new AppError('INVALID_STATE', 'This transaction was disputed once already; verify it, or let its review window settle it.', { details: { status: t.status, disputeId: t.disputeId } }));
      if (t.hold !== 'held') return refused(new AppError('INVALID_STATE', 'The settlement of this transaction is already under way.', { details: { status: t.status } }));
      // D12.1: the review window stops; the hold stays.
      return draft().effect({ kind: 'cancelTimers', timers: ['reviewWindow'] }).move('disputed', { disputeId: command.disputeId, reviewEndsAt: null }).decision();
    }
    case 'resolveDispute':
      return resolveDispute(t, command, draft());
  }
}

/** The settlement asked of the wallet: the agreed price to the provider minus the fee (D13.3). */
function settle(d: Draft, changes: PurchaseChanges): PurchaseDecision {
  const t = d.state;
  if (t.hold !== 'held') throw new Error(`transaction ${t.id} in ${t.status} settled with hold ${t.hold}`);
  return d
    .set({ ...changes, hold: 'settling' })
    .effect({ kind: 'settle', amountCents: t.agreedPriceCents!, feeCents: t.platformFeeCents ?? 0, refundCents: 0 })
    .decision();
}

/** D11: turn and message rules are `decideNegotiationMessage`'s; here is what the message does to the purchase. */
function negotiate(t: Purchase, c: Extract<PurchaseCommand, { kind: 'negotiate' }>, d: Draft): PurchaseDecision {
  const no = actionRefusal('negotiate', t.status);
  if (no) return refused(no);
  if (t.pendingAcceptBy) return refused(new AppError('INVALID_STATE', 'An accept of this negotiation is waiting for the consumer\'s funds to be held.', { details: { status: t.status, pending: 'accept' } }));
  const ruling = decideNegotiationMessage(c.last, c.by, c.body, t.pricing, c.maxTransactionCents);
  if (ruling.kind === 'refused') return refused(new AppError(ruling.code, ruling.message, ruling.field ? { field: ruling.field } : {}));
  if (ruling.agreedPriceCents !== null) {
    const approval = c.approver ? approvalAsked(c.approver, ruling.agreedPriceCents, d.now) : null;
    if (approval) {
      // D10.3: the price is agreed and the accept recorded; the hold waits for the owner's approval.
      return d
        .effect(
          { kind: 'recordMessage', fromAgentId: c.by, messageType: 'accept', round: ruling.round, terms: {}, message: c.body.message ?? null, expiresAt: null },
          { kind: 'cancelTimers', timers: ['offerExpiry'] },
          { kind: 'schedule', timer: 'approvalExpiry', at: new Date(approval.expiresAt) },
        )
        .move('awaiting_approval', { agreedPriceCents: ruling.agreedPriceCents, platformFeeCents: platformFee(ruling.agreedPriceCents), approval })
        .decision();
    }
    // An accept is pending until the wallet holds the agreed price; recorded then (holdPlaced).
    const attempt = t.holdAttempt + 1;
    return d
      .set({ hold: 'requested', holdAttempt: attempt, pendingAcceptBy: c.by, pendingAcceptPriceCents: ruling.agreedPriceCents, pendingAcceptMessage: c.body.message ?? null })
      .effect({ kind: 'holdFunds', amountCents: ruling.agreedPriceCents, attempt })
      .decision();
  }
  const expiresAt = ruling.ends ? null : new Date(d.now.getTime() + c.expiresInSeconds * 1000);
  d.effect({ kind: 'recordMessage', fromAgentId: c.by, messageType: c.body.type, round: ruling.round, terms: c.body.terms, message: c.body.message ?? null, expiresAt });
  if (ruling.ends) return d.move('cancelled', { statusReason: ruling.ends }).decision();
  // D11.4: the new offer's expiry replaces the previous one's.
  return d.set({}).effect({ kind: 'schedule', timer: 'offerExpiry', at: expiresAt!, payload: { round: ruling.round } }).decision();
}

/** D12.8: what a dispute's outcome does to the transaction and, through the wallet, to the money. */
function resolveDispute(t: Purchase, c: Extract<PurchaseCommand, { kind: 'resolveDispute' }>, d: Draft): PurchaseDecision {
  // A dispute is resolved once, while its transaction waits with the price held.
  if (t.status !== 'disputed' || t.hold !== 'held') throw new Error(`dispute of transaction ${t.id} resolved in status ${t.status} with hold ${t.hold}`);
  const statusReason = `dispute_${c.outcome}`;
  switch (c.outcome) {
    case 'consumer_wins':
      // `failed` with the hold held: the move returns it.
      return d.move('failed', { statusReason }).decision();
    case 'provider_wins':
    case 'partial_refund': {
      // The refund back to the consumer, the rest paid with the fee on the rest.
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
