import { AppError } from '@aex/contracts';
import type { Caller, Purchase, PurchaseCommand } from './purchase.js';

/** A command made by an agent's request (rather than by the wallet's answer, a timer or a dispute's outcome). */
export type PurchaseRequest = Extract<PurchaseCommand, { caller: Caller }>;

export function requestOf(c: PurchaseCommand): PurchaseRequest | undefined {
  return 'caller' in c ? c : undefined;
}

/** The request of each kind that belongs to one party (D9.8), and how a refusal names it. */
const ROLES: Partial<Record<PurchaseRequest['kind'], { role: 'consumer' | 'provider'; verb: string }>> = {
  start: { role: 'provider', verb: 'start' },
  deliver: { role: 'provider', verb: 'deliver' },
  verify: { role: 'consumer', verb: 'verify' },
  openDispute: { role: 'consumer', verb: 'dispute' },
  x402Claim: { role: 'provider', verb: 'verify the payment of' },
  x402Settle: { role: 'provider', verb: 'settle the payment of' },
};

const notFound = () => new AppError('NOT_FOUND', 'No such transaction.');

export const isParty = (t: Pick<Purchase, 'consumerAgentId' | 'providerAgentId'>, agentId: string) => t.consumerAgentId === agentId || t.providerAgentId === agentId;

/**
 * Who may make a request of a purchase (D9.8, D10.3). To anyone but its parties a transaction does
 * not exist (404); the party a request does not belong to gets 403. An approval belongs to the
 * consumer's account owner agent: the provider and the account's other agents know of the purchase
 * (403), any other account does not (404). Undefined when the caller may; other commands are the
 * exchange's own.
 */
export function accessRefusal(t: Purchase | undefined, c: PurchaseCommand): AppError | undefined {
  const request = requestOf(c);
  if (!request || request.kind === 'open') return undefined;
  const caller = request.caller;
  if (request.kind === 'approve' || request.kind === 'deny') {
    if (!t || (t.consumerAccountId !== caller.accountId && t.providerAgentId !== caller.agentId)) return notFound();
    if (t.consumerAccountId !== caller.accountId || !caller.isOwner) {
      return new AppError('FORBIDDEN', "Only the consumer's account owner agent may approve or deny this purchase.", { details: { role: 'owner' } });
    }
    return undefined;
  }
  if (!t || !isParty(t, caller.agentId)) return notFound();
  const owner = ROLES[request.kind];
  if (owner && (owner.role === 'consumer' ? t.consumerAgentId : t.providerAgentId) !== caller.agentId) {
    return new AppError('FORBIDDEN', `Only the ${owner.role} may ${owner.verb} this transaction.`, { details: { role: owner.role } });
  }
  return undefined;
}
