import { describe, expect, it } from 'vitest';
import { EVIDENCE_RULES, evidenceValue, judgePurchase, type AskedQuery, type EndedPurchase } from '../src/domain/purchase-evidence.js';

// D22.2: which purchases discovery learns from, and what each says.

const AT = new Date('2026-03-01T12:00:00Z');
const purchase: EndedPurchase = { consumerAgentId: 'buyer-agent', outcome: 'settled', qualityScore: 90, purchasedAt: AT };
const query: AskedQuery = { agentId: 'buyer-agent', need: '  transcribe a podcast  ', createdAt: new Date(AT.getTime() - 60_000) };
const accounts = { consumer: 'buyer-account', provider: 'seller-account' };

describe('D22.2 judging a purchase that carried a queryId', () => {
  it('is evidence when the buyer asked the need itself, recently, and bought from another account', () => {
    expect(judgePurchase(purchase, query, accounts)).toEqual({ kind: 'evidence', need: 'transcribe a podcast', buyerAccountId: 'buyer-account' });
  });

  it.each([
    ['the query does not exist (or was pruned)', undefined, accounts, 'no_such_query'],
    ['another agent asked it', { ...query, agentId: 'someone-else' }, accounts, 'another_agents_query'],
    ['it had no need', { ...query, need: undefined }, accounts, 'no_need'],
    ['its need was blank', { ...query, need: '   ' }, accounts, 'no_need'],
    ['it was asked more than 7 days before the purchase', { ...query, createdAt: new Date(AT.getTime() - EVIDENCE_RULES.queryMaxAgeMs - 1) }, accounts, 'query_too_old'],
    ['it is stamped well after the purchase', { ...query, createdAt: new Date(AT.getTime() + EVIDENCE_RULES.clockSkewMs + 1) }, accounts, 'query_after_purchase'],
    ['buyer and provider are one account (an agent and its sibling or child)', query, { consumer: 'same', provider: 'same' }, 'own_account'],
  ] as const)('is ignored when %s', (_case, q, acc, reason) => {
    expect(judgePurchase(purchase, q, acc)).toEqual({ kind: 'ignored', reason });
  });

  it('still counts a query exactly 7 days old, and one a little after the purchase by another clock', () => {
    expect(judgePurchase(purchase, { ...query, createdAt: new Date(AT.getTime() - EVIDENCE_RULES.queryMaxAgeMs) }, accounts).kind).toBe('evidence');
    expect(judgePurchase(purchase, { ...query, createdAt: new Date(AT.getTime() + 1000) }, accounts).kind).toBe('evidence');
  });
});

describe('D22.2 what an outcome says', () => {
  it('a settled purchase is positive by its quality score, 0.8 without one', () => {
    expect(evidenceValue('settled', 90)).toBe(0.9);
    expect(evidenceValue('settled', 0)).toBe(0);
    expect(evidenceValue('settled', null)).toBe(0.8);
  });

  it.each(['failed', 'expired', 'dispute_lost'])('%s is fully negative', (outcome) => {
    expect(evidenceValue(outcome, null)).toBe(-1);
  });
});
