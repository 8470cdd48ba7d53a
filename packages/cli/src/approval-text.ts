import type { TransactionView } from '@aex/contracts';
import { usd } from './text-format.js';

/** D10.3: why a purchase needs an approval, as the buyer's account reads it. */
export function approvalReason(a: TransactionView['approval']): string {
  if (!a?.rule) return '-';
  return a.rule === 'requireHumanApprovalAboveCents' ? `above ${usd(a.limit)}` : `not below ${usd(a.limit)}`;
}

/** What the buyer is told of a purchase awaiting its owner's approval (D10.3); nothing otherwise. */
export function awaitingNote(t: TransactionView): string {
  if (t.status !== 'awaiting_approval') return '';
  return `It awaits your account owner's approval (${approvalReason(t.approval)}), until ${t.approval?.expiresAt ?? 'it expires'}.\n`
    + `The owner approves, with the owner agent's profile: aex --profile OWNER approvals approve ${t.id}   (or denies: … approvals deny ${t.id})\n`;
}
