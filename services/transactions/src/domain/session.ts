import { AppError, type ContractView } from '@aex/contracts';
import type { Decision } from '@aex/platform';
import type { SessionRow } from '../db/schema.js';
import { canMoveHold } from './hold-moves.js';
import { approvalAsked, limitRefusal } from './opening.js';
import type { Caller, Delegation, PurchaseFacts, PurchasePolicy } from './purchase.js';

/**
 * A prepaid session as a pure decision (D17.4–D17.7): one hold of a budget, calls that reserve their
 * prices from it, the unspent rest returned once it closes and every call has ended. Its money always
 * adds up: budget = spent + reserved + remaining, and what remains is returned when it closes.
 */

export type Session = SessionRow;
export type SessionChanges = Partial<SessionRow>;

/** Durable timer kinds of a session, as stored. */
export const SESSION_TIMERS = { expiry: 'session_expiry', approvalExpiry: 'session_approval_expiry' } as const;
export type SessionTimer = keyof typeof SESSION_TIMERS;

export type SessionEffect =
  | { kind: 'holdFunds'; amountCents: number }
  | { kind: 'returnHold' }
  | { kind: 'schedule'; timer: SessionTimer; at: Date }
  | { kind: 'cancelTimers'; timers: readonly SessionTimer[] }
  /** `session.opened` / `session.closed` to both parties (D17.6). */
  | { kind: 'announce'; event: 'opened' | 'closed' }
  /** A call's price reserved (counted in the metrics once committed). */
  | { kind: 'reserved'; amountCents: number };

/** A session asked for (POST /v1/sessions): the contract as the catalog gave it, the buyer's rules in force. */
export interface SessionOrder {
  id: string;
  contract: ContractView;
  delegation: Delegation;
  budgetCents: number;
  expiresAt: Date;
  autoVerify: boolean;
  /** D22.2: the discover the session came from. */
  queryId?: string | undefined;
}

export type SessionCommand =
  | { kind: 'open'; caller: Caller; order: SessionOrder }
  | { kind: 'holdPlaced' }
  | { kind: 'holdRefused'; reason: string }
  | { kind: 'holdReturned' }
  /** A call reserves its price (or its maxUnits price) from the budget (D17.5). */
  | { kind: 'reserve'; amountCents: number }
  /** A call settled: its reservation is spent — `paidCents` of it, the rest free again. */
  | { kind: 'callPaid'; reservedCents: number; paidCents: number }
  /** A call ended without payment: its reservation is free again. */
  | { kind: 'callReleased'; reservedCents: number }
  | { kind: 'close'; caller: Caller }
  | { kind: 'expire' }
  | { kind: 'approve'; caller: Caller; delegation?: Delegation }
  | { kind: 'deny'; caller: Caller; reason: string | null }
  | { kind: 'approvalExpired' };

export type SessionDecision = Decision<SessionChanges, SessionEffect>;

const refused = (error: AppError): SessionDecision => ({ kind: 'refused', error });
const unchanged: SessionDecision = { kind: 'unchanged' };

/**
 * What of the budget is neither spent, reserved nor returned: what new calls may reserve while the
 * session is open, what a closing session will return once its calls end; 0 once closed, and for a
 * session whose budget was never held (failed, cancelled). budget = spent + reserved + remaining +
 * returned at every moment the budget is held.
 */
export const remainingOf = (s: Pick<Session, 'status' | 'budgetCents' | 'spentCents' | 'reservedCents' | 'returnedCents'>) =>
  s.status === 'failed' || s.status === 'cancelled' ? 0 : s.budgetCents - s.spentCents - s.reservedCents - s.returnedCents;

/** Whether the session's money is on its way in the wallet (a request that leaves it so waits for the answer). */
export const sessionInFlight = (s: Pick<Session, 'hold'>) => s.hold === 'requested' || s.hold === 'returning';

/** D9.8 for sessions: the parties see it; anyone else is told it does not exist. */
export const isSessionParty = (s: Pick<Session, 'consumerAgentId' | 'providerAgentId'>, agentId: string) => s.consumerAgentId === agentId || s.providerAgentId === agentId;

/** The facts a command needs: an opening's and an approval's consumer totals, under its lock (D10.2). */
export function sessionFactsNeeded(c: SessionCommand): { lockConsumer: string | null; spend: boolean } {
  if (c.kind === 'open') return { lockConsumer: c.caller.agentId, spend: c.order.delegation.rules.maxDailySpendCents !== undefined };
  if (c.kind === 'approve' && c.delegation) return { lockConsumer: c.caller.agentId, spend: c.delegation.rules.maxDailySpendCents !== undefined };
  return { lockConsumer: null, spend: false };
}

/** A decision being built on a session. */
class SessionDraft {
  readonly changes: SessionChanges = {};
  readonly effects: SessionEffect[] = [];
  constructor(public state: Session, readonly now: Date) {}

  set(changes: SessionChanges): this {
    if (changes.hold !== undefined && !canMoveHold(this.state.hold, changes.hold)) throw new Error(`session ${this.state.id}: no hold move from ${this.state.hold} to ${changes.hold}`);
    Object.assign(this.changes, changes, { updatedAt: this.now });
    this.state = { ...this.state, ...changes, updatedAt: this.now };
    return this;
  }

  effect(...effects: SessionEffect[]): this {
    this.effects.push(...effects);
    return this;
  }

  /**
   * D17.6: a session closing with every call ended returns what it did not spend, once; it is closed
   * when the wallet confirms it. One whose hold is still on its way returns it once it is placed.
   */
  finishIfIdle(): this {
    const s = this.state;
    if (s.status !== 'closing' || s.reservedCents !== 0 || s.hold !== 'held') return this;
    return this.set({ hold: 'returning', returnedCents: s.budgetCents - s.spentCents }).effect({ kind: 'returnHold' });
  }

  decision(): SessionDecision {
    return { kind: 'changed', changes: this.changes, effects: this.effects };
  }
}

/** What `command` does to the session `s` (undefined: none yet) at `now`. */
export function decideSession(s: Session | undefined, c: SessionCommand, facts: PurchaseFacts, policy: PurchasePolicy, now: Date): SessionDecision {
  if (c.kind === 'open') return openSession(c.caller, c.order, facts, policy, now);
  if (!s) throw new Error(`${c.kind} of a session that does not exist`);
  const d = new SessionDraft(s, now);
  switch (c.kind) {
    case 'holdPlaced':
      if (s.hold !== 'requested') return unchanged;
      // Closed (or expired) while the hold was on its way: given back at once.
      if (s.status === 'closing') return d.set({ hold: 'held' }).finishIfIdle().decision();
      return d.set({ hold: 'held', status: 'open', statusReason: null }).effect({ kind: 'schedule', timer: 'expiry', at: s.expiresAt }, { kind: 'announce', event: 'opened' }).decision();
    case 'holdRefused':
      if (s.hold !== 'requested') return unchanged;
      return d.set({ hold: 'refused', status: 'failed', statusReason: c.reason, closedAt: now }).effect({ kind: 'cancelTimers', timers: ['expiry', 'approvalExpiry'] }).decision();
    case 'holdReturned':
      if (s.hold !== 'returning') return unchanged;
      return d.set({ hold: 'returned', status: 'closed', closedAt: now }).effect({ kind: 'cancelTimers', timers: ['expiry'] }, { kind: 'announce', event: 'closed' }).decision();
    case 'reserve':
      return reserve(s, c.amountCents, d, now);
    case 'callPaid':
      if (c.reservedCents > s.reservedCents || c.paidCents > c.reservedCents) throw new Error(`session ${s.id}: a call paid ${c.paidCents} of ${c.reservedCents} reserved, with ${s.reservedCents} reserved in all`);
      return d.set({ reservedCents: s.reservedCents - c.reservedCents, spentCents: s.spentCents + c.paidCents }).finishIfIdle().decision();
    case 'callReleased':
      if (c.reservedCents > s.reservedCents) throw new Error(`session ${s.id}: a call released ${c.reservedCents} with ${s.reservedCents} reserved`);
      return d.set({ reservedCents: s.reservedCents - c.reservedCents }).finishIfIdle().decision();
    case 'close':
      if (!isSessionParty(s, c.caller.agentId)) return refused(new AppError('NOT_FOUND', 'No such session.'));
      return closing(s, d, `closed_by_${c.caller.agentId === s.consumerAgentId ? 'consumer' : 'provider'}`);
    case 'expire':
      return s.status === 'open' || s.status === 'opening' ? closing(s, d, 'expired') : unchanged;
    case 'approve':
      return approve(s, c, facts, policy, d);
    case 'deny': {
      const no = approvalRefusal(s, c.caller);
      if (no) return refused(no);
      const approval = { ...s.approval!, decision: 'denied' as const, decidedAt: now.toISOString(), decidedBy: c.caller.agentId, ...(c.reason ? { reason: c.reason } : {}) };
      return d.set({ status: 'cancelled', statusReason: 'approval_denied', approval, closedAt: now }).effect({ kind: 'cancelTimers', timers: ['approvalExpiry', 'expiry'] }).decision();
    }
    case 'approvalExpired':
      return s.status === 'awaiting_approval' && s.hold !== 'requested' ? d.set({ status: 'cancelled', statusReason: 'approval_expired', closedAt: now }).effect({ kind: 'cancelTimers', timers: ['expiry'] }).decision() : unchanged;
  }
}

/**
 * D17.4: a new session, refused as a purchase would be (a deactivated buyer, its own service, a
 * service not active), then for what a session cannot buy (negotiable pricing) and for a budget
 * over the exchange's ceiling or the buyer's rules (D10.2, the budget judged as one transaction's
 * amount). A budget the rules approve is held at once; one that needs the owner waits (D10.3).
 */
function openSession(caller: Caller, o: SessionOrder, facts: PurchaseFacts, policy: PurchasePolicy, now: Date): SessionDecision {
  const { contract } = o;
  if (caller.status !== 'active') return refused(new AppError('AGENT_INACTIVE', 'A deactivated agent cannot start anything new.', { details: { status: caller.status } }));
  if (contract.agentId === caller.agentId) return refused(new AppError('VALIDATION_ERROR', 'An agent may not buy its own service.', { field: '/body/serviceId' }));
  if (contract.status !== 'active' || contract.providerStatus !== 'active') {
    return refused(new AppError('SERVICE_NOT_ACTIVE', 'The service or its provider is not active.', { details: { serviceStatus: contract.status, providerStatus: contract.providerStatus } }));
  }
  if (contract.pricing.model === 'negotiable') {
    return refused(new AppError('VALIDATION_ERROR', 'A session buys at the list price: fixed, per_unit and tiered services only, not negotiable ones.', { field: '/body/serviceId', details: { pricingModel: 'negotiable' } }));
  }
  if (o.budgetCents > policy.maxTransactionCents) {
    return refused(new AppError('VALIDATION_ERROR', `A session's budget is at most the maximum transaction amount of ${policy.maxTransactionCents} cents.`, { field: '/body/budgetCents', details: { maximum: policy.maxTransactionCents } }));
  }
  const limited = limitRefusal(facts, o.delegation, { category: contract.category, priceCents: o.budgetCents }, policy, false);
  if (limited) return refused(limited);
  const base: Session = {
    id: o.id, consumerAgentId: caller.agentId, providerAgentId: contract.agentId, consumerAccountId: caller.accountId, providerAccountId: contract.providerAccountId,
    serviceId: contract.serviceId, serviceRevision: contract.revision, serviceName: contract.name, providerName: contract.providerName, category: contract.category, status: 'opening', statusReason: null,
    budgetCents: o.budgetCents, spentCents: 0, reservedCents: 0, returnedCents: 0, calls: 0, autoVerify: o.autoVerify, hold: 'requested', approval: null, queryId: o.queryId ?? null,
    expiresAt: o.expiresAt, createdAt: now, updatedAt: now, closedAt: null,
  };
  const approval = approvalAsked(o.delegation, o.budgetCents, policy, now);
  if (approval) {
    return { kind: 'changed', changes: { ...base, status: 'awaiting_approval', hold: 'none', approval }, effects: [{ kind: 'schedule', timer: 'approvalExpiry', at: new Date(approval.expiresAt) }] };
  }
  return { kind: 'changed', changes: base, effects: [{ kind: 'holdFunds', amountCents: o.budgetCents }] };
}

/** D17.5: a call's price reserved from what remains; 409 unless open, 402 with what remains when it is not enough. */
function reserve(s: Session, amountCents: number, d: SessionDraft, now: Date): SessionDecision {
  if (s.status !== 'open' || now >= s.expiresAt) {
    return refused(new AppError('INVALID_STATE', `This session is ${s.status === 'open' ? 'expired' : s.status}: it takes no new calls.`, { field: '/body/sessionId', details: { sessionStatus: s.status } }));
  }
  const remaining = remainingOf(s);
  if (amountCents > remaining) {
    return refused(new AppError('INSUFFICIENT_FUNDS', `This session has ${remaining} cents left; the call needs ${amountCents}.`, { details: { sessionId: s.id, remainingCents: remaining, requiredCents: amountCents } }));
  }
  return d.set({ reservedCents: s.reservedCents + amountCents, calls: s.calls + 1 }).effect({ kind: 'reserved', amountCents }).decision();
}

/** D17.6: no new calls; the rest is returned once every call has ended. A session closing or closed stays so. */
function closing(s: Session, d: SessionDraft, reason: string): SessionDecision {
  switch (s.status) {
    case 'closing':
    case 'closed':
      return unchanged;
    case 'awaiting_approval':
      return d.set({ status: 'cancelled', statusReason: reason, closedAt: d.now }).effect({ kind: 'cancelTimers', timers: ['approvalExpiry', 'expiry'] }).decision();
    case 'failed':
    case 'cancelled':
      return refused(new AppError('INVALID_STATE', `This session is ${s.status}: there is nothing to close.`, { details: { sessionStatus: s.status } }));
    default:
      return d.set({ status: 'closing', statusReason: reason }).effect({ kind: 'cancelTimers', timers: ['expiry'] }).finishIfIdle().decision();
  }
}

/** D10.3 for sessions: only the consumer's account owner decides, while the session waits for it. */
function approvalRefusal(s: Session, caller: Caller): AppError | null {
  if (!caller.isOwner || caller.accountId !== s.consumerAccountId) {
    return isSessionParty(s, caller.agentId) || caller.accountId === s.consumerAccountId
      ? new AppError('FORBIDDEN', 'Only the consumer\'s account owner agent approves or denies a session.')
      : new AppError('NOT_FOUND', 'No such session.');
  }
  if (s.status !== 'awaiting_approval') return new AppError('INVALID_STATE', `This session is ${s.status}: it does not wait for an approval.`, { details: { sessionStatus: s.status } });
  if (s.hold === 'requested') return new AppError('INVALID_STATE', 'This session was approved already; its budget is being held.', { details: { sessionStatus: s.status, approval: 'in_progress' } });
  return null;
}

function approve(s: Session, c: Extract<SessionCommand, { kind: 'approve' }>, facts: PurchaseFacts, policy: PurchasePolicy, d: SessionDraft): SessionDecision {
  const no = approvalRefusal(s, c.caller);
  if (no) return refused(no);
  if (!c.delegation) throw new Error('an approval is decided with the consumer\'s delegation');
  const limited = limitRefusal(facts, c.delegation, { category: s.category, priceCents: s.budgetCents }, policy, false);
  if (limited) return refused(limited);
  const approval = { ...s.approval!, decision: 'approved' as const, decidedAt: d.now.toISOString(), decidedBy: c.caller.agentId };
  return d.set({ status: 'opening', hold: 'requested', approval }).effect({ kind: 'cancelTimers', timers: ['approvalExpiry'] }, { kind: 'holdFunds', amountCents: s.budgetCents }).decision();
}
