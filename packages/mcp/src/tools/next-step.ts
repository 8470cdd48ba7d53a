import type { Static } from '@sinclair/typebox';
import type { TransactionView } from '@aex/contracts';

/** What the consumer does next, for each status a purchase can be in. */
export function nextStep(status: string, tx?: Static<typeof TransactionView>): string {
  switch (status) {
    case 'funds_held':
    case 'executing':
      return 'The funds are held; the provider is working. Call wait_for_delivery.';
    case 'negotiating':
      return 'A negotiation is open: read the offers with get_transaction, then negotiate (counter, accept, reject or withdraw).';
    case 'awaiting_approval':
      return `The purchase awaits a human's approval: its price is over what this agent's spending rules approve${approvalWhy(tx)}. ` +
        `Nothing is held until the account's owner approves it (the owner agent's approve_purchase, \`aex approvals approve\` or the console); denied or undecided by ${tx?.approval?.expiresAt ?? 'its deadline'}, it is cancelled. ` +
        'Tell your human, then call wait_for_delivery: it waits through the approval.';
    case 'delivered':
      return 'Delivered: check the output, then accept_delivery (or open_dispute if it is wrong).';
    case 'initiated':
      return 'The exchange has not confirmed the hold yet; call get_transaction later.';
    case 'settled':
      return 'Settled: the provider has been paid.';
    default:
      return `The transaction is ${status}.`;
  }
}

/** D10.3: the rule a price broke, in words ('' when the viewer may not see it). */
export function approvalWhy(tx?: Static<typeof TransactionView>): string {
  const a = tx?.approval;
  if (!a?.rule || a.limit === undefined) return '';
  return a.rule === 'requireHumanApprovalAboveCents' ? ` (${a.attempted} cents, above ${a.limit})` : ` (${a.attempted} cents; only prices below ${a.limit} go through alone)`;
}
