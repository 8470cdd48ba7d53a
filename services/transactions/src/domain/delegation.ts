import type { DelegationRules } from '@aex/contracts';

export interface DelegationRefusal {
  code: 'DELEGATION_EXCEEDED' | 'HUMAN_APPROVAL_REQUIRED';
  message: string;
  details: { rule: keyof DelegationRules; limit: number | string[]; attempted: number | string };
}

/**
 * D10.2, in the decided order: category (allow-list, then block-list) → `maxTransactionCents` →
 * `maxDailySpendCents` (what was spent in the rolling 24 h, plus this price) → DELEGATION_EXCEEDED;
 * then above `requireHumanApprovalAboveCents`, or at or above `autoApproveBelow` →
 * HUMAN_APPROVAL_REQUIRED. Null when the rules allow it.
 */
export function delegationRefusal(rules: DelegationRules, attempt: { category: string; priceCents: number; spentLast24hCents: number }): DelegationRefusal | null {
  const { category, priceCents } = attempt;
  if (rules.allowedCategories && !rules.allowedCategories.includes(category)) {
    return exceeded('allowedCategories', rules.allowedCategories, category, `The category ${category} is not among the categories this agent may buy from.`);
  }
  if (rules.blockedCategories?.includes(category)) {
    return exceeded('blockedCategories', rules.blockedCategories, category, `The category ${category} is blocked for this agent.`);
  }
  if (rules.maxTransactionCents !== undefined && priceCents > rules.maxTransactionCents) {
    return exceeded('maxTransactionCents', rules.maxTransactionCents, priceCents, `The price of ${priceCents} cents exceeds this agent's limit of ${rules.maxTransactionCents} cents per transaction.`);
  }
  const daily = attempt.spentLast24hCents + priceCents;
  if (rules.maxDailySpendCents !== undefined && daily > rules.maxDailySpendCents) {
    return exceeded('maxDailySpendCents', rules.maxDailySpendCents, daily, `This transaction would bring the last 24 hours' spending to ${daily} cents, over this agent's daily limit of ${rules.maxDailySpendCents} cents.`);
  }
  if (rules.requireHumanApprovalAboveCents !== undefined && priceCents > rules.requireHumanApprovalAboveCents) {
    return approval('requireHumanApprovalAboveCents', rules.requireHumanApprovalAboveCents, priceCents, `A price above ${rules.requireHumanApprovalAboveCents} cents needs a human's approval.`);
  }
  if (rules.autoApproveBelow !== undefined && priceCents >= rules.autoApproveBelow) {
    return approval('autoApproveBelow', rules.autoApproveBelow, priceCents, `Only prices below ${rules.autoApproveBelow} cents are approved automatically.`);
  }
  return null;
}

const exceeded = (rule: keyof DelegationRules, limit: number | string[], attempted: number | string, message: string): DelegationRefusal => ({ code: 'DELEGATION_EXCEEDED', message, details: { rule, limit, attempted } });
const approval = (rule: keyof DelegationRules, limit: number, attempted: number, message: string): DelegationRefusal => ({ code: 'HUMAN_APPROVAL_REQUIRED', message, details: { rule, limit, attempted } });
