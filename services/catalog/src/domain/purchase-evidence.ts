import type { TrustOutcome } from '@aex/contracts';

const DAY_MS = 86_400_000;

/** D22.2: which purchases discovery learns from, and what each one says. */
export const EVIDENCE_RULES = {
  /** A discover made longer than this before the purchase says nothing about why it was bought. */
  queryMaxAgeMs: 7 * DAY_MS,
  /** A query stamped this much after the purchase still counts: the services' clocks may differ a little. */
  clockSkewMs: 5 * 60_000,
  /** A settled purchase verified without a quality score counts as 80/100, as trust counts it (D15.2). */
  defaultQuality: 0.8,
} as const;

/** What a purchase that ended tells the catalog (the `transactions.outcome.recorded` event's facts). */
export interface EndedPurchase {
  consumerAgentId: string;
  outcome: TrustOutcome;
  qualityScore: number | null;
  purchasedAt: Date;
}

/** The stored discover a purchase names, as the catalog kept it. */
export interface AskedQuery {
  agentId: string;
  need: string | undefined;
  createdAt: Date;
}

export type Judgement =
  | { kind: 'evidence'; need: string; buyerAccountId: string }
  | { kind: 'ignored'; reason: 'no_such_query' | 'another_agents_query' | 'no_need' | 'query_too_old' | 'query_after_purchase' | 'own_account' };

/**
 * D22.2: whether a purchase that carried a queryId is evidence. The query must exist, be the buyer's
 * own, state a need and have been made at most `queryMaxAgeMs` before the purchase; a purchase whose
 * buyer and provider are one account (child agents share their parent's) is worthless — an account
 * buying from itself would only promote its own service. The buyer is counted by account, so that
 * an account's many agents count as one buyer.
 */
export function judgePurchase(p: EndedPurchase, query: AskedQuery | undefined, accounts: { consumer: string; provider: string }): Judgement {
  if (!query) return { kind: 'ignored', reason: 'no_such_query' };
  if (query.agentId !== p.consumerAgentId) return { kind: 'ignored', reason: 'another_agents_query' };
  const need = query.need?.trim();
  if (!need) return { kind: 'ignored', reason: 'no_need' };
  const age = p.purchasedAt.getTime() - query.createdAt.getTime();
  if (age > EVIDENCE_RULES.queryMaxAgeMs) return { kind: 'ignored', reason: 'query_too_old' };
  if (age < -EVIDENCE_RULES.clockSkewMs) return { kind: 'ignored', reason: 'query_after_purchase' };
  if (accounts.consumer === accounts.provider) return { kind: 'ignored', reason: 'own_account' };
  return { kind: 'evidence', need, buyerAccountId: accounts.consumer };
}

/**
 * D22.2: what an outcome says of the service for the need, in [−1, 1]: a settled purchase is
 * positive, by its quality score (qualityScore/100, `defaultQuality` without one); a failed or
 * expired purchase, or a dispute the provider lost, is fully negative.
 */
export function evidenceValue(outcome: string, qualityScore: number | null): number {
  if (outcome === 'settled') return qualityScore === null ? EVIDENCE_RULES.defaultQuality : Math.min(1, Math.max(0, qualityScore / 100));
  return -1;
}
