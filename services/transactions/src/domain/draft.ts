import type { AppError, Static, TransactionEventData, TransactionStatus } from '@aex/contracts';
import type { Approval } from '../db/schema.js';
import { canMoveHold } from './hold-moves.js';
import { heldCents, platformFee } from './pricing.js';
import type { Purchase, PurchaseChanges, PurchaseDecision, PurchaseEffect, PurchaseTimer } from './purchase.js';
import { canMove, isTerminal } from './state-machine.js';

export const unchanged: PurchaseDecision = { kind: 'unchanged' };
export const refused = (error: AppError): PurchaseDecision => ({ kind: 'refused', error });

/** Every timer of a purchase: dropped when it ends. */
const ALL_TIMERS: readonly PurchaseTimer[] = ['offerExpiry', 'transactionExpiry', 'reviewWindow', 'approvalExpiry'];

/** A decision being built: the state as it stands after the changes so far, and the effects. */
export class Draft {
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
   * a terminal status drops the transaction's timers; a trust outcome is recorded when the provider's
   * record counts it. Terminal means settled: a move to a terminal status while the price is held or
   * on its way (`requested`, `held`) does not move yet — the wallet is asked to return the price, and
   * the transaction ends with this status once it confirms (`returned`).
   */
  move(to: TransactionStatus, patch: PurchaseChanges = {}): this {
    const from = this.state.status;
    if (!canMove(from, to)) throw new Error(`transaction ${this.state.id}: no move from ${from} to ${to}`);
    const hold = patch.hold ?? this.state.hold;
    if (isTerminal(to) && hold === 'held' && this.state.sessionId) return this.releasedToSession(to, patch);
    if (isTerminal(to) && (hold === 'requested' || hold === 'held')) return this.endOnceReturned(to, patch);
    this.set({ statusReason: null, ...patch, status: to });
    if (isTerminal(to)) this.effect({ kind: 'cancelTimers', timers: ALL_TIMERS });
    // D18.2: a purchase that ends after its money was held has a receipt, announced with its end.
    if (isTerminal(to) && this.state.fundsHeldAt !== null) this.effect({ kind: 'receipt' });
    this.effect({ kind: 'announce', event: announcement(this.state, from) });
    const outcome = trustOutcome(this.state);
    if (outcome) this.effect(outcome);
    return this;
  }

  /**
   * D17.5: a session call ending unpaid gives its reservation back to its session in the same step —
   * the money never left the session's hold, so nothing waits for the wallet.
   */
  private releasedToSession(to: TransactionStatus, patch: PurchaseChanges): this {
    const t = this.state;
    this.effect({ kind: 'sessionCallEnded', sessionId: t.sessionId!, reservedCents: heldCents(t), paidCents: 0 });
    return this.move(to, { ...patch, hold: 'returned' });
  }

  /** The wallet confirmed the price returned: a transaction ending (`endingStatus`) ends now. */
  returned(): this {
    const { endingStatus, endingReason } = this.state;
    if (!endingStatus) return this.set({ hold: 'returned' });
    return this.move(endingStatus, { hold: 'returned', statusReason: endingReason, endingStatus: null, endingReason: null });
  }

  /**
   * The move to `to` waits for the wallet (terminal means settled, D9.7, D9.9): the price is asked
   * back, the transaction keeps its status and takes no more requests, its timers are dropped; the
   * other changes of the move are made now, its reason when it ends.
   */
  private endOnceReturned(to: TransactionStatus, patch: PurchaseChanges): this {
    const { statusReason, ...now } = patch;
    this.set({ ...now, hold: 'returning', endingStatus: to, endingReason: statusReason ?? null });
    return this.effect({ kind: 'returnHold' }, { kind: 'cancelTimers', timers: ALL_TIMERS });
  }

  /** D9.4: whether the purchase was bought through a negotiation (its approval then moves it through `matched`). */
  negotiated(): boolean {
    const t = this.state;
    return t.pricing.model === 'negotiable' || (t.maxPriceCents !== null && t.maxPriceCents !== t.listPriceCents);
  }

  /**
   * The changes that make a pending accept's price the agreed one (D11.2, with its fee, D9.11): when
   * its hold is placed, and when the transaction is cancelled while the hold was on its way (the
   * price held and returned is then the one the transaction shows).
   */
  agreedPendingAccept(): PurchaseChanges {
    const t = this.state;
    return t.pendingAcceptBy && t.pendingAcceptPriceCents !== null
      ? { agreedPriceCents: t.pendingAcceptPriceCents, platformFeeCents: platformFee(t.pendingAcceptPriceCents), pendingAcceptBy: null, pendingAcceptPriceCents: null, pendingAcceptMessage: null }
      : {};
  }

  /** The approval as it was before a decision that did not hold (an approval whose hold was refused, D10.3). */
  undecidedApproval(): Approval {
    const { decidedAt: _at, decidedBy: _by, decision: _decision, reason: _reason, ...asked } = this.state.approval!;
    return asked;
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
