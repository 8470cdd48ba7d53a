import { AppError, type DisputeView } from '@aex/contracts';
import type { Decision } from '@aex/platform';
import type { DisputeRow } from '../db/schema.js';
import { decideDisputeAction, disputeEntry, type DisputeAction, type DisputeEffect } from './disputes.js';
import type { Caller, Purchase } from './purchase.js';

/**
 * D12 as one aggregate: a dispute with the transaction it disputes (locked with it, the dispute
 * first, everywhere). Who may act (D12.9), what each action does to the dispute (`decideDisputeAction`)
 * and what a dispute's opening and outcome ask of the transaction — decided here; the transaction's
 * own rules are the purchase's, applied in the same database transaction.
 */
export interface DisputeCase {
  /** Undefined before the dispute is opened. */
  dispute: DisputeRow | undefined;
  purchase: Pick<Purchase, 'id' | 'consumerAgentId' | 'providerAgentId' | 'consumerAccountId' | 'providerAccountId' | 'agreedPriceCents' | 'hold'>;
}

/** Who acts on a dispute: a party (or its account's owner agent, D2.2), the operator, or the exchange's deadline. */
export type DisputeBy =
  | { actor: 'consumer' | 'provider'; caller: Caller }
  | { actor: 'operator'; requestId: string }
  | { actor: 'exchange' };

export type DisputeCommand =
  /** D12.1: the consumer opens a dispute of a delivered transaction; answered by the exchange within `responseSeconds`. */
  | { kind: 'open'; caller: Caller; disputeId: string; transactionId: string; reason: DisputeView['reason']; description: string; evidence: Record<string, unknown> | null; responseSeconds: number }
  | { kind: 'act'; by: DisputeBy; action: DisputeAction; note: { message?: string | undefined; evidence?: Record<string, unknown> | undefined } };

export type DisputeCaseEffect =
  | Exclude<DisputeEffect, { kind: 'audit' }>
  /** D15.3: an operator's step in the audit log, with its request. */
  | { kind: 'audit'; requestId: string }
  /** D12.1: the transaction becomes `disputed` (the purchase decides whether it may). */
  | { kind: 'disputePurchase'; caller: Caller }
  | { kind: 'scheduleDeadline'; at: Date };

const noSuchDispute = () => new AppError('NOT_FOUND', 'No such dispute.');

/** Whether the caller is the party `role` of the dispute, or the owner agent of that party's account. */
export const actsAs = (caller: Caller, p: DisputeCase['purchase'], role: 'consumer' | 'provider') =>
  (role === 'consumer' ? p.consumerAgentId : p.providerAgentId) === caller.agentId
  || (caller.isOwner && caller.accountId === (role === 'consumer' ? p.consumerAccountId : p.providerAccountId));

/**
 * D12.9: a dispute is seen by its parties and the owner agents of their accounts, who may act for
 * their agent; to anyone else it does not exist (404). An action belongs to one party: the other 403.
 */
export function disputeAccessRefusal(c: DisputeCase | undefined, command: DisputeCommand): AppError | undefined {
  if (command.kind !== 'act' || (command.by.actor !== 'consumer' && command.by.actor !== 'provider')) return undefined;
  const { caller, actor } = command.by;
  if (!c?.dispute || (!actsAs(caller, c.purchase, 'consumer') && !actsAs(caller, c.purchase, 'provider'))) return noSuchDispute();
  if (!actsAs(caller, c.purchase, actor)) return new AppError('FORBIDDEN', `Only the ${actor} may ${command.action.kind} this dispute.`, { details: { role: actor } });
  return undefined;
}

/**
 * What a command does to the dispute (undefined: not opened yet) at `now`. An opening is decided with
 * what the purchase decides of being disputed (`purchaseRefusal`: the transaction's own rules, D12.1).
 */
export function decideDispute(c: DisputeCase | undefined, command: DisputeCommand, now: Date, purchaseRefusal?: Error): Decision<DisputeRow, DisputeCaseEffect> {
  const denied = disputeAccessRefusal(c, command);
  if (denied) return { kind: 'refused', error: denied };
  if (command.kind === 'open') return purchaseRefusal ? { kind: 'refused', error: purchaseRefusal } : openDispute(c, command, now);
  if (!c?.dispute) return command.by.actor === 'exchange' ? { kind: 'unchanged' } : { kind: 'refused', error: noSuchDispute() };
  const by = command.by;
  try {
    const decided = decideDisputeAction(c.dispute, c.purchase.agreedPriceCents!, by.actor, command.action, command.note, now);
    if (decided.kind !== 'changed') return decided;
    const effects = decided.effects.map((e): DisputeCaseEffect => (e.kind === 'audit' ? { kind: 'audit', requestId: by.actor === 'operator' ? by.requestId : '' } : e));
    return { ...decided, effects };
  } catch (err) {
    // `ruleOnDispute` words its refusals as errors.
    if (err instanceof AppError) return { kind: 'refused', error: err };
    throw err;
  }
}

function openDispute(c: DisputeCase | undefined, command: Extract<DisputeCommand, { kind: 'open' }>, now: Date): Decision<DisputeRow, DisputeCaseEffect> {
  if (!c) return { kind: 'refused', error: new AppError('NOT_FOUND', 'No such transaction.') };
  const p = c.purchase;
  const deadlineAt = new Date(now.getTime() + command.responseSeconds * 1000);
  const dispute: DisputeRow = {
    id: command.disputeId, transactionId: p.id, consumerAgentId: p.consumerAgentId, providerAgentId: p.providerAgentId,
    reason: command.reason, description: command.description, evidence: command.evidence, status: 'open', proposal: null, outcome: null, refundCents: null,
    messages: [disputeEntry('consumer', 'opened', now, { message: command.description, evidence: command.evidence })],
    openedAt: now, deadlineAt, resolvedAt: null, resolvedBy: null, updatedAt: now,
  };
  return { kind: 'changed', changes: dispute, effects: [{ kind: 'disputePurchase', caller: command.caller }, { kind: 'scheduleDeadline', at: deadlineAt }] };
}
