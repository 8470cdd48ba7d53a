import { AppError, type RequestSignature, type AgentStatus, type ContractView, type DelegationRules, type DisputeOutcome, type ErrorEntry, type NegotiateBody, type Static, type TransactionEventData, type TrustOutcome } from '@aex/contracts';
import type { Decision } from '@aex/platform';
import type { TransactionRow } from '../db/schema.js';
import { accessRefusal, requestOf } from './purchase-access.js';
import { Draft, refused, unchanged } from './draft.js';
import type { LastMessage } from './negotiation.js';
import { openPurchase } from './opening.js';
import { approve, deliver, deny, negotiate, openDispute, verify } from './purchase-requests.js';
import { resolveDispute, settle } from './settling.js';
import { actionRefusal, isAllowed } from './state-machine.js';
import { x402Claim, x402Held, x402Settle } from './x402-payment.js';

/**
 * The purchase as a pure decision (D9, D10, D11, D12.8, D15.2): given a transaction's state and a
 * command — a request, the wallet's answer, a timer — with the facts read for it, `decidePurchase`
 * says whether it is refused, changes nothing, or which columns change and which effects go with
 * them. Every rule of a purchase is decided here: who may act, the status, the price and its bounds,
 * the limits and the delegation rules on the totals given. No I/O: the aggregate runner reads and
 * writes, the repository makes the effects.
 */

/** The transaction as decisions see it: the row without the parts whose size the caller chooses. */
export type Purchase = Omit<TransactionRow, 'input' | 'output' | 'metadata'>;
/** The columns a decision writes: all of them for a new purchase, some of them for a step. */
export type PurchaseChanges = Partial<TransactionRow>;

/** Durable timer kinds of the purchase (docs/messaging.md "Durable timers"), as stored. */
export const TIMERS = { offerExpiry: 'offer_expiry', transactionExpiry: 'transaction_expiry', reviewWindow: 'review_window', disputeDeadline: 'dispute_deadline', approvalExpiry: 'approval_expiry' } as const;
export type PurchaseTimer = Exclude<keyof typeof TIMERS, 'disputeDeadline'>;

export type PurchaseEffect =
  /** Ask the wallet to hold the price (each attempt numbered: an accept refused for funds may come again). */
  | { kind: 'holdFunds'; amountCents: number; attempt: number }
  /** Ask the wallet to give the held price back to the consumer. */
  | { kind: 'returnHold' }
  /** Ask the wallet to pay the held price to the provider, minus the fee, after `refundCents` back to the consumer (D13.3, D12.8). */
  | { kind: 'settle'; amountCents: number; feeCents: number; refundCents: number }
  /** D17.5: a session call's price (less the fee to the platform) captured out of its session's hold. */
  | { kind: 'capture'; amountCents: number; feeCents: number }
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
  /** D17.5: a session call's price reserved from its session's budget (refused there: the call is not made). */
  | { kind: 'reserve'; sessionId: string; amountCents: number }
  /** D17.5: a session call settled (`paidCents` of its reservation paid) or ended unpaid (`paidCents` 0). */
  | { kind: 'sessionCallEnded'; sessionId: string; reservedCents: number; paidCents: number }
  /** D18.2: the receipt of a purchase that ended after its money was held, made with the step. */
  | { kind: 'receipt' }
  /** What the provider's trust counts (D15.2). */
  | { kind: 'trustOutcome'; outcome: TrustOutcome; qualityScore: number | null; late: boolean };

/** Who makes a request: the authenticated agent (D2), as the gateway vouches for it. */
export interface Caller {
  agentId: string;
  accountId: string;
  isOwner: boolean;
  status: AgentStatus;
}

/**
 * The consumer's rules in force (D10.1) and its account's owner agent, who approves what they do not
 * (D10.3): read from identity before the step, never while it holds a lock.
 */
export interface Delegation {
  rules: DelegationRules;
  ownerAgentId: string;
}

/** What the exchange's configuration sets for every purchase (D16), read once at start. */
export interface PurchasePolicy {
  /** No transaction may cost more (MAX_TRANSACTION_CENTS). */
  maxTransactionCents: number;
  /** D9.6: transactions in progress per agent (MAX_ACTIVE_TRANSACTIONS_PER_AGENT). */
  maxActivePerAgent: number;
  /** D10.3: how long a purchase waits for its owner's approval (APPROVAL_TTL_SECONDS). */
  approvalTtlSeconds: number;
  /** D9.7: how long a delivered purchase waits for a verify or a dispute (REVIEW_WINDOW_SECONDS). */
  reviewWindowMs: number;
  /** D9.4 / D11.4: how long an offer stands unless its message says otherwise. */
  offerExpirySeconds: number;
}

/** A purchase asked for (POST /v1/transactions): the contract it is bought under, as the catalog gave it. */
export interface Order {
  /** The new transaction's id. */
  id: string;
  contract: ContractView;
  delegation: Delegation;
  /** The input's violations of the contract's inputSchema (D9.2); empty when it passes. */
  inputErrors: readonly ErrorEntry[];
  input: Record<string, unknown>;
  /** D18.2: the input's digest (`jsonDigest`). */
  inputDigest?: string;
  units: number | undefined;
  /** D17.1: a metered purchase's most units. */
  maxUnits?: number | undefined;
  maxPriceCents: number | undefined;
  metadata: Record<string, unknown>;
  /** D17.5: a call in this open session, paid from its budget (the session's rules were checked when it opened). */
  session?: { id: string; autoVerify: boolean; queryId?: string | null };
  /** D19.2: a payment verified by the x402 facilitator: the amount signed, its nonce, its timeout. */
  x402?: { amountCents: number; nonce: string; timeoutSeconds: number };
  /** D22.2: the discover the purchase came from (a session call's, its session's unless it names its own). */
  queryId?: string | undefined;
}

export type PurchaseCommand =
  | { kind: 'open'; caller: Caller; order: Order }
  | { kind: 'start'; caller: Caller }
  /** `outputErrors`: the output's violations of the pinned contract's outputSchema, once checked (empty: valid). */
  | {
    kind: 'deliver'; caller: Caller; output: Record<string, unknown>; usage?: { units: number } | undefined; outputErrors?: readonly ErrorEntry[];
    /** D18.2: the output's digest, and the provider's signature of the request, for the receipt. */
    outputDigest?: string; signature?: RequestSignature | undefined;
  }
  | { kind: 'verify'; caller: Caller; qualityScore: number | null; notes: string | null }
  | { kind: 'cancel'; caller: Caller }
  /** A negotiation message (D11); an accept is decided with the consumer's delegation (D10.2). */
  | { kind: 'negotiate'; caller: Caller; body: NegotiateBody; delegation?: Delegation }
  /** D10.3: the consumer's account owner decides; approving re-checks the rules without the approval's. */
  | { kind: 'approve'; caller: Caller; delegation?: Delegation }
  | { kind: 'deny'; caller: Caller; reason: string | null }
  | { kind: 'openDispute'; caller: Caller; disputeId: string }
  /** D19.2: the provider's facilitator verify of a payload whose purchase exists, and its settle. */
  | { kind: 'x402Claim'; caller: Caller }
  | { kind: 'x402Settle'; caller: Caller }
  | { kind: 'holdPlaced'; attempt: number; at: Date }
  | { kind: 'holdRefused'; attempt: number; reason: string }
  | { kind: 'holdReturned' }
  | { kind: 'holdSettled'; at: Date }
  | { kind: 'approvalExpired' }
  | { kind: 'offerExpired'; round: number }
  | { kind: 'expire' }
  | { kind: 'reviewWindowEnded' }
  | { kind: 'resolveDispute'; outcome: DisputeOutcome; refundCents: number };

/** What a command needs besides the transaction, read in the step's transaction. */
export interface PurchaseFacts {
  /** D11: the negotiation's latest message. */
  last?: LastMessage | undefined;
  /**
   * Read under the parties' locks (D9.6, D10.2): their transactions in progress, and the consumer's
   * spending in the rolling 24 h — this transaction left out of both.
   */
  totals?: { consumerActive: number; providerActive: number; spentLast24hCents: number } | undefined;
}

export type PurchaseDecision = Decision<PurchaseChanges, PurchaseEffect>;

/** The facts a command needs read (`PurchaseFacts`), and under which parties' locks. */
export function factsNeeded(t: Purchase | undefined, c: PurchaseCommand): { last: boolean; lockTotals: string[] | null; spend: boolean } {
  switch (c.kind) {
    case 'open':
      // A session call is bounded by its session's budget, checked against the rules when it opened.
      if (c.order.session) return { last: false, lockTotals: null, spend: false };
      return { last: false, lockTotals: [c.caller.agentId, c.order.contract.agentId], spend: c.order.delegation.rules.maxDailySpendCents !== undefined };
    case 'negotiate': {
      const accepting = c.body.type === 'accept' && t !== undefined;
      return { last: true, lockTotals: accepting ? [t.consumerAgentId] : null, spend: accepting && c.delegation?.rules.maxDailySpendCents !== undefined };
    }
    case 'approve':
      return { last: false, lockTotals: t ? [t.consumerAgentId] : null, spend: c.delegation?.rules.maxDailySpendCents !== undefined };
    case 'offerExpired':
      return { last: true, lockTotals: null, spend: false };
    default:
      return { last: false, lockTotals: null, spend: false };
  }
}

export { canMoveHold, HOLD_MOVES, moneyInFlight } from './hold-moves.js';

/** The commands that are the wallet's answers to the saga's commands (D9.9). */
const WALLET_ANSWERS: ReadonlySet<PurchaseCommand['kind']> = new Set(['holdPlaced', 'holdRefused', 'holdReturned', 'holdSettled']);

/** What `command` does to the purchase `t` (undefined: none yet) at `now`, with the facts read for it. */
export function decidePurchase(t: Purchase | undefined, c: PurchaseCommand, facts: PurchaseFacts, policy: PurchasePolicy, now: Date): PurchaseDecision {
  const denied = accessRefusal(t, c);
  if (denied) return refused(denied);
  if (c.kind === 'open') return openPurchase(c.caller, c.order, facts, policy, now);
  if (!t) throw new Error(`${c.kind} of a purchase that does not exist`);
  // Terminal means settled (D9.7, D9.9): a transaction ending while the wallet returns its price
  // takes no new request, and its timers have nothing left to do; only the wallet's answer ends it.
  if (t.endingStatus && !WALLET_ANSWERS.has(c.kind) && c.kind !== 'resolveDispute') {
    return requestOf(c) ? refused(new AppError('INVALID_STATE', `This transaction is ending (${t.endingStatus}): its price is being returned.`, { details: { status: t.status, ending: t.endingStatus } })) : unchanged;
  }
  const d = new Draft(t, now);
  switch (c.kind) {
    case 'holdPlaced':
      return holdPlaced(t, c, d);
    case 'holdRefused':
      return holdRefused(t, c, d, now);
    case 'holdReturned':
      return t.hold === 'returning' ? d.returned().decision() : unchanged;
    case 'holdSettled':
      // The reason the settlement was asked for (`review_window_ended`, a dispute's outcome, none for a verify) stays.
      if (t.hold !== 'settling') return unchanged;
      return d.move('settled', { hold: 'settled', settledAt: c.at, statusReason: t.statusReason }).decision();
    case 'start': {
      const no = actionRefusal('start', t.status);
      return no ? refused(no) : d.move('executing').decision();
    }
    case 'deliver':
      return deliver(t, c, d, policy);
    case 'verify':
      return verify(t, c, d);
    case 'cancel': {
      const no = actionRefusal('cancel', t.status);
      // Cancelled while an accept waited for its hold: the price both agreed to is the one held and returned.
      const by = c.caller.agentId === t.consumerAgentId ? 'consumer' : 'provider';
      return no ? refused(no) : d.move('cancelled', { statusReason: `cancelled_by_${by}`, ...d.agreedPendingAccept() }).decision();
    }
    case 'negotiate':
      return negotiate(t, c, facts, policy, d);
    case 'approve':
      return approve(t, c, facts, policy, d);
    case 'deny':
      return deny(t, c, d);
    case 'approvalExpired':
      // D10.3: undecided in time. An approval whose hold is on its way is settled by the wallet's answer.
      return t.status === 'awaiting_approval' && t.hold !== 'requested' ? d.move('cancelled', { statusReason: 'approval_expired' }).decision() : unchanged;
    case 'offerExpired':
      // D11.4: the latest offer went unanswered; an accept waiting for its hold, or a newer offer, keeps it going.
      if (t.status !== 'negotiating' || t.pendingAcceptBy || facts.last?.round !== c.round) return unchanged;
      return d.move('cancelled', { statusReason: 'offer_expired' }).decision();
    case 'expire':
      // D9.7: no valid delivery by `expiresAt`.
      return isAllowed('expire', t.status) ? d.move('expired', { statusReason: 'sla_timeout' }).decision() : unchanged;
    case 'reviewWindowEnded':
      // Delivered, and neither verified nor disputed: settled as a verify would, the reason kept through to `settled`.
      return t.status === 'delivered' && t.hold === 'held' ? settle(d, { statusReason: 'review_window_ended' }) : unchanged;
    case 'openDispute':
      return openDispute(t, c, d);
    case 'resolveDispute':
      return resolveDispute(t, c, d);
    case 'x402Claim':
      return x402Claim(t, d);
    case 'x402Settle':
      return x402Settle(t, d);
  }
}

/** The wallet placed the hold: only the answer the transaction waits for; late, repeated or stale answers change nothing. */
function holdPlaced(t: Purchase, c: Extract<PurchaseCommand, { kind: 'holdPlaced' }>, d: Draft): PurchaseDecision {
  // A hold placed for a transaction that is ending is being returned already (its move sent it).
  if (t.hold !== 'requested' || c.attempt !== t.holdAttempt) return unchanged;
  if (t.status === 'awaiting_approval') {
    // D10.3: approved; after a negotiation `awaiting_approval → matched → funds_held`, as an accept would go.
    d.effect({ kind: 'cancelTimers', timers: ['approvalExpiry'] });
    if (d.negotiated()) d.move('matched');
  }
  if (t.status === 'negotiating' && t.pendingAcceptBy) {
    // The pending accept is recorded now: `negotiating → matched → funds_held`, both announced (D9.7).
    d.effect({ kind: 'recordAccept', fromAgentId: t.pendingAcceptBy, message: t.pendingAcceptMessage }, { kind: 'cancelTimers', timers: ['offerExpiry'] });
    d.move('matched', d.agreedPendingAccept());
  }
  if (d.state.status !== 'initiated' && d.state.status !== 'matched' && d.state.status !== 'awaiting_approval') throw new Error(`hold placed for transaction ${t.id} in status ${t.status}`);
  // D9.5: the transaction expires `sla.timeoutMs` after its funds are held; an x402 payment, `maxTimeoutSeconds` after (D19.2).
  const { expiresAt, ...x402 } = x402Held(t, c.at);
  d.move('funds_held', { hold: 'held', fundsHeldAt: c.at, expiresAt, ...x402 });
  return d.effect({ kind: 'schedule', timer: 'transactionExpiry', at: expiresAt }).decision();
}

/** The wallet refused the hold (funds, no wallet, or closed by a return that came first). */
function holdRefused(t: Purchase, c: Extract<PurchaseCommand, { kind: 'holdRefused' }>, d: Draft, now: Date): PurchaseDecision {
  // A refusal of a hold being returned (the transaction ended before the wallet saw it): nothing was held.
  if (t.hold === 'returning') return d.returned().decision();
  if (t.hold !== 'requested' || c.attempt !== t.holdAttempt) return unchanged;
  if (t.status === 'awaiting_approval') {
    // D10.3: an approval whose hold is refused leaves the purchase waiting, undecided — cancelled
    // when its time ran out meanwhile (its timer found the hold on its way and left it).
    d.set({ hold: 'refused', approval: d.undecidedApproval() });
    return (now >= new Date(t.approval!.expiresAt) ? d.move('cancelled', { statusReason: 'approval_expired' }) : d).decision();
  }
  // A new transaction fails (402 to its creator); a pending accept is dropped and the negotiation
  // goes on as before it (D9.7), its latest offer expiring when it would have.
  if (t.status === 'initiated') return d.move('failed', { hold: 'refused', statusReason: c.reason }).decision();
  return d.set({ hold: 'refused', pendingAcceptBy: null, pendingAcceptPriceCents: null, pendingAcceptMessage: null }).effect({ kind: 'restoreOfferExpiry' }).decision();
}
