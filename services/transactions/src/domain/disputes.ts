import { AppError, type DisputeMessageView, type DisputeOutcome, type DisputeStatus } from '@aex/contracts';
import type { Decision } from '@aex/platform';
import type { DisputeRow } from '../db/schema.js';

/**
 * D12: the dispute lifecycle as a pure function. `open` → `proposed` | `escalated` → `resolved`.
 * Who may do what is decided here; what a resolution does to the money and the transaction is
 * `RESOLUTION_EFFECTS` (D12.8), applied by the handlers.
 */
export type DisputeAction =
  | { kind: 'respond'; outcome: 'consumer_wins' | 'partial_refund' | 'provider_redo' | 'contest'; refundCents?: number }
  | { kind: 'decide'; accept: boolean }
  | { kind: 'withdraw' }
  | { kind: 'resolve'; outcome: DisputeOutcome; refundCents?: number }
  | { kind: 'deadline' };

export interface DisputeState {
  status: DisputeStatus;
  proposal: { outcome: 'partial_refund' | 'provider_redo'; refundCents: number | null } | null;
  /** The transaction's agreed price: a partial refund is 1 … agreed − 1 (D12.3). */
  agreedPriceCents: number;
}

export type DisputeRuling =
  | { next: 'proposed'; proposal: NonNullable<DisputeState['proposal']> }
  | { next: 'escalated' }
  | { next: 'resolved'; outcome: DisputeOutcome; refundCents: number }
  /** Nothing to do (a deadline after the provider answered). */
  | { next: null };

/** Who may take each action (D12.3–D12.7); anyone else gets 403. */
export const DISPUTE_ACTORS = { respond: 'provider', decide: 'consumer', withdraw: 'consumer', resolve: 'operator', deadline: 'exchange' } as const;

const SOURCES: Record<DisputeAction['kind'], readonly DisputeStatus[]> = {
  respond: ['open'],
  decide: ['proposed'],
  withdraw: ['open', 'proposed', 'escalated'],
  resolve: ['open', 'proposed', 'escalated'],
  deadline: ['open', 'proposed', 'escalated', 'resolved'],
};

/** The money a resolution moves: refund (back to the consumer) + paid (to the provider) = the price. */
export function refundOf(outcome: DisputeOutcome, agreedPriceCents: number, refundCents?: number): number {
  switch (outcome) {
    case 'consumer_wins':
      return agreedPriceCents;
    case 'partial_refund':
      return refundCents!;
    case 'provider_wins':
    case 'provider_redo':
      return 0;
  }
}

/** D12.3 / D12.6: `refundCents` comes with `partial_refund` only, strictly between 0 and the price. */
function checkRefund(outcome: string, refundCents: number | undefined, agreed: number): void {
  if (outcome === 'partial_refund') {
    if (refundCents === undefined || refundCents < 1 || refundCents > agreed - 1) {
      throw new AppError('VALIDATION_ERROR', `A partial refund is between 1 and ${agreed - 1} cents.`, { field: '/body/refundCents', details: { minimum: 1, maximum: agreed - 1 } });
    }
  } else if (refundCents !== undefined) {
    throw new AppError('VALIDATION_ERROR', `refundCents goes with partial_refund only, not ${outcome}.`, { field: '/body/refundCents' });
  }
}

export function ruleOnDispute(state: DisputeState, action: DisputeAction): DisputeRuling {
  if (action.kind === 'deadline') return state.status === 'open' ? resolved('consumer_wins', state) : { next: null };
  if (!SOURCES[action.kind].includes(state.status)) {
    throw new AppError('INVALID_STATE', `A dispute in status ${state.status} cannot be ${PAST[action.kind]}.`, { details: { status: state.status, allowedFrom: SOURCES[action.kind] } });
  }
  switch (action.kind) {
    case 'respond':
      checkRefund(action.outcome, action.refundCents, state.agreedPriceCents);
      if (action.outcome === 'consumer_wins') return resolved('consumer_wins', state);
      if (action.outcome === 'contest') return { next: 'escalated' };
      return { next: 'proposed', proposal: { outcome: action.outcome, refundCents: action.refundCents ?? null } };
    case 'decide':
      if (!action.accept) return { next: 'escalated' };
      return resolved(state.proposal!.outcome, state, state.proposal!.refundCents ?? undefined);
    case 'withdraw':
      return resolved('provider_wins', state);
    case 'resolve':
      checkRefund(action.outcome, action.refundCents, state.agreedPriceCents);
      return resolved(action.outcome, state, action.refundCents);
  }
}

function resolved(outcome: DisputeOutcome, state: DisputeState, refundCents?: number): DisputeRuling {
  return { next: 'resolved', outcome, refundCents: refundOf(outcome, state.agreedPriceCents, refundCents) };
}

const PAST: Record<Exclude<DisputeAction['kind'], 'deadline'>, string> = {
  respond: 'answered', decide: 'decided', withdraw: 'withdrawn', resolve: 'resolved',
};

/** Who speaks in a dispute's record. */
export type DisputeActor = DisputeMessageView['from'];

/** A line of the dispute's record: who did what, when, with what they said. */
export const disputeEntry = (from: DisputeActor, kind: DisputeMessageView['kind'], at: Date, over: Partial<DisputeMessageView> = {}): DisputeMessageView =>
  ({ from, kind, outcome: null, refundCents: null, message: null, evidence: null, at: at.toISOString(), ...over });

/** What a resolved dispute makes happen besides its own row (D12.8). */
export type DisputeEffect =
  | { kind: 'cancelDeadline' }
  /** The transaction's side: the hold returned, settled or split, or the work redone. */
  | { kind: 'resolvePurchase'; outcome: DisputeOutcome; refundCents: number }
  /** D15.3: an operator's resolution goes to the audit log. */
  | { kind: 'audit' };

/**
 * One action on a dispute as a pure decision: nothing to do (a deadline after the provider
 * answered), or the dispute as the action leaves it with the effects that go with it. Refusals are
 * thrown (`ruleOnDispute`). `agreedPriceCents`: the transaction's, for a refund's bounds.
 */
export function decideDisputeAction(
  d: DisputeRow, agreedPriceCents: number, actor: DisputeActor, action: DisputeAction,
  note: { message?: string | undefined; evidence?: Record<string, unknown> | undefined }, now: Date,
): Decision<DisputeRow, DisputeEffect> {
  const ruling = ruleOnDispute({ status: d.status, proposal: d.proposal, agreedPriceCents }, action);
  if (ruling.next === null) return { kind: 'unchanged' };
  const kind = ({ respond: 'responded', decide: 'decided', withdraw: 'withdrawn', resolve: 'resolved', deadline: 'deadline' } as const)[action.kind];
  const said = disputeEntry(actor, kind, now, {
    outcome: action.kind === 'respond' || action.kind === 'resolve' ? action.outcome : action.kind === 'decide' ? (action.accept ? 'accept' : 'refuse') : ruling.next === 'resolved' ? ruling.outcome : null,
    refundCents: 'refundCents' in action ? action.refundCents ?? null : null,
    message: note.message ?? null,
    evidence: note.evidence ?? null,
  });
  const next: DisputeRow = { ...d, status: ruling.next, messages: [...d.messages, said], updatedAt: now };
  const effects: DisputeEffect[] = [];
  if (ruling.next === 'proposed') next.proposal = ruling.proposal;
  if (ruling.next === 'resolved') {
    Object.assign(next, { outcome: ruling.outcome, refundCents: ruling.refundCents, resolvedAt: now, resolvedBy: actor === 'exchange' ? 'deadline' : actor });
    effects.push({ kind: 'cancelDeadline' }, { kind: 'resolvePurchase', outcome: ruling.outcome, refundCents: ruling.refundCents });
  }
  if (actor === 'operator') effects.push({ kind: 'audit' });
  return { kind: 'changed', changes: next, effects };
}
