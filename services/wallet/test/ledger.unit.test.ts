import { describe, expect, it } from 'vitest';
import { applyEntry, childViolations, ledgerViolations, type ParentTransferTotals, type WalletTotals } from '../src/domain/ledger.js';

describe('D13.2 applyEntry', () => {
  const s = { balanceCents: 1000, heldCents: 200 };
  it.each([
    ['fund', 500, { balanceCents: 1500, heldCents: 200 }],
    ['fund_hold', -300, { balanceCents: 1000, heldCents: 500 }],
    ['fund_return', 200, { balanceCents: 1000, heldCents: 0 }],
    ['fund_release', 200, { balanceCents: 1000, heldCents: 0 }],
    ['settlement_out', -100, { balanceCents: 900, heldCents: 200 }],
    ['settlement_in', 100, { balanceCents: 1100, heldCents: 200 }],
    ['platform_fee', -5, { balanceCents: 995, heldCents: 200 }],
    ['payout', -800, { balanceCents: 200, heldCents: 200 }],
    ['parent_allocation', -100, { balanceCents: 900, heldCents: 200 }],
    ['parent_allocation', 100, { balanceCents: 1100, heldCents: 200 }],
    ['parent_return', 100, { balanceCents: 1100, heldCents: 200 }],
  ] as const)('%s %d moves the right column', (type, amount, expected) => {
    expect(applyEntry(s, type, amount)).toEqual({ ok: true, value: expected });
  });
  it('refuses to make the available balance negative', () => {
    expect(applyEntry(s, 'payout', -801)).toEqual({ ok: false, error: { reason: 'insufficient_funds', availableCents: 800, requiredCents: 801 } });
    expect(applyEntry(s, 'fund_hold', -801)).toMatchObject({ ok: false, error: { reason: 'insufficient_funds' } });
  });
  it('refuses wrong signs, zero, fractions and unsafe integers', () => {
    for (const [t, a] of [['fund', -1], ['payout', 1], ['fund', 0], ['fund', 1.5], ['fund', 2 ** 53]] as const) {
      expect(applyEntry(s, t, a)).toMatchObject({ ok: false, error: { reason: 'invalid_amount' } });
    }
  });
  it('refuses to release more than is held', () => {
    expect(applyEntry(s, 'fund_release', 201)).toMatchObject({ ok: false, error: { reason: 'invalid_amount' } });
  });
});

describe('D13.2–D13.3 ledgerViolations', () => {
  const honest = (over: Partial<WalletTotals> = {}): WalletTotals => ({ id: 'w', balanceCents: 1000, heldCents: 300, sumAll: 700, sumBalance: 1000, sumHeld: -300, lastBalanceAfter: 1000, ...over });
  it('finds nothing in honest books', () => {
    expect(ledgerViolations([honest(), honest({ id: 'p', balanceCents: 0, heldCents: 0, sumAll: 0, sumBalance: 0, sumHeld: 0, lastBalanceAfter: null })], { fundedCents: 1500, paidOutCents: 500 })).toEqual([]);
  });
  it('names each broken invariant with its wallet', () => {
    const v = ledgerViolations([honest({ balanceCents: 1001 })], { fundedCents: 1000, paidOutCents: 0 });
    expect(v.map((x) => x.invariant).sort()).toEqual(['balance_entries_sum_to_balance', 'conservation', 'entries_sum_to_available', 'last_entry_matches_balance']);
    expect(v.find((x) => x.invariant === 'entries_sum_to_available')).toMatchObject({ walletId: 'w', details: { sumOfEntries: 700, availableCents: 701 } });
  });
  it('catches a hold that does not match the held column, and negative values', () => {
    const v = ledgerViolations([honest({ heldCents: 1200, sumHeld: -300, sumAll: -200 })], { fundedCents: 1000, paidOutCents: 0 });
    expect(v.map((x) => x.invariant)).toEqual(expect.arrayContaining(['held_equals_open_holds', 'available_not_negative']));
  });
});

describe('D6.8 childViolations', () => {
  const transfer = (over: Partial<ParentTransferTotals> = {}): ParentTransferTotals => ({ operationId: 'spawn:c', txType: 'parent_allocation', parentWalletId: 'p', sumCents: 0, entries: 2, childEntries: 1, ...over });
  it('finds nothing in honest books: one child funded and expired, one spawn refused, one settlement returning two children’s refunds', () => {
    expect(childViolations(
      [{ id: 'c', closed: true, availableCents: 0 }, { id: 'd', closed: false, availableCents: 300 }],
      [transfer(), transfer({ operationId: 'close:c', txType: 'parent_return' }), transfer({ operationId: 'settle:t', txType: 'parent_return', entries: 4, childEntries: 2 })],
      [{ childAgentId: 'c', status: 'funded', budgetCents: 500, childWalletId: 'c', allocatedCents: 500 }, { childAgentId: 'e', status: 'refused', budgetCents: 900, childWalletId: null, allocatedCents: 0 }],
    )).toEqual([]);
  });
  it.each([
    ['an expired child with money left', [{ id: 'c', closed: true, availableCents: 1 }], [], [], 'closed_child_wallet_empty'],
    ['a transfer that does not sum to zero', [], [transfer({ sumCents: 5 })], [], 'parent_transfer_balanced'],
    ['a transfer with its parent side missing', [], [transfer({ entries: 1, sumCents: 0 })], [], 'parent_transfer_balanced'],
    ['a transfer between two parents', [], [transfer({ childEntries: 0 })], [], 'parent_transfer_balanced'],
    ['a funded child that got less than its budget', [], [], [{ childAgentId: 'c', status: 'funded' as const, budgetCents: 500, childWalletId: 'c', allocatedCents: 400 }], 'child_allocation_matches_decision'],
    ['a funded child without a wallet', [], [], [{ childAgentId: 'c', status: 'funded' as const, budgetCents: 500, childWalletId: null, allocatedCents: 0 }], 'child_allocation_matches_decision'],
    ['a refused child with a wallet', [], [], [{ childAgentId: 'c', status: 'refused' as const, budgetCents: 500, childWalletId: 'c', allocatedCents: 0 }], 'child_allocation_matches_decision'],
  ])('names %s', (_name, children, transfers, allocations, invariant) => {
    expect(childViolations(children, transfers, allocations).map((v) => v.invariant)).toEqual([invariant]);
  });
});
