import type { ApprovalRule, DelegationRules } from '@aex/contracts';

export interface DelegationRefusal {
  code: 'DELEGATION_EXCEEDED';
  message: string;
  details: { rule: keyof DelegationRules; limit: number | string[]; attempted: number | string };
}

/** D10.2 / D10.3: the rule that asks a human to approve a price, with its limit and the price. */
export interface ApprovalNeed {
  rule: ApprovalRule;
  limit: number;
  attempted: number;
}

/**
 * D10.2, in the decided order: category (allow-list, then block-list) → `maxTransactionCents` →
 * `maxDailySpendCents` (what was spent in the rolling 24 h, plus this price) → DELEGATION_EXCEEDED.
 * Null when the rules allow it. A price that needs a human's approval is not refused (D10.3): see
 * `approvalNeeded`, asked once these pass.
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
  return null;
}

/**
 * D10.2's last step, D10.3: a price above `requireHumanApprovalAboveCents`, or at or above
 * `autoApproveBelow`, waits for the account owner's approval. Null when it is approved by the rules.
 */
export function approvalNeeded(rules: DelegationRules, priceCents: number): ApprovalNeed | null {
  if (rules.requireHumanApprovalAboveCents !== undefined && priceCents > rules.requireHumanApprovalAboveCents) {
    return { rule: 'requireHumanApprovalAboveCents', limit: rules.requireHumanApprovalAboveCents, attempted: priceCents };
  }
  if (rules.autoApproveBelow !== undefined && priceCents >= rules.autoApproveBelow) {
    return { rule: 'autoApproveBelow', limit: rules.autoApproveBelow, attempted: priceCents };
  }
  return null;
}

const exceeded = (rule: keyof DelegationRules, limit: number | string[], attempted: number | string, message: string): DelegationRefusal => ({ code: 'DELEGATION_EXCEEDED', message, details: { rule, limit, attempted } });
