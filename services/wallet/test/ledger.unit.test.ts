import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LedgerTxType } from '@aex/contracts';
import { applyEntry, childViolations, HOLD_TX_TYPES, LEDGER_TABLE, ledgerViolations, movementTotals, planMovements, type Balances, type LedgerWallet, type ParentTransferTotals, type WalletTotals } from '../src/domain/ledger.js';

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

describe('D13.2 the table', () => {
  it('moves what is held by the hold types only, and counts settlements in the lifetime figures', () => {
    expect(HOLD_TX_TYPES).toEqual(['fund_hold', 'fund_return', 'fund_release']);
    expect(movementTotals([
      { walletId: 'c', txType: 'settlement_out', amountCents: -700 },
      { walletId: 'p', txType: 'settlement_in', amountCents: 700 },
    ])).toMatchObject({ ok: true, wallets: new Map([['c', expect.objectContaining({ spentCents: 700, earnedCents: 0 })], ['p', expect.objectContaining({ earnedCents: 700, spentCents: 0 })]]) });
  });
});

describe('D13.2 what a wallet must have for its movements (movementTotals)', () => {
  const txTypes = Object.keys(LEDGER_TABLE) as LedgerTxType[];
  const movement = fc.record({ txType: fc.constantFrom(...txTypes), size: fc.integer({ min: 1, max: 1500 }), negative: fc.boolean() })
    .map(({ txType, size, negative }) => ({ walletId: 'w', txType, amountCents: (LEDGER_TABLE[txType].sign || (negative ? -1 : 1)) * size }));
  const wallet = fc.record({ balanceCents: fc.integer({ min: 0, max: 3000 }), share: fc.integer({ min: 0, max: 100 }) })
    .map(({ balanceCents, share }): Balances => ({ balanceCents, heldCents: Math.floor((balanceCents * share) / 100) }));

  it('is met exactly by the wallets applyEntry takes every movement of, in order, to the same balances', () => {
    fc.assert(fc.property(wallet, fc.array(movement, { minLength: 1, maxLength: 8 }), (w, movements) => {
      let state: Balances | undefined = w;
      for (const m of movements) {
        const next = applyEntry(state, m.txType, m.amountCents);
        if (!next.ok) {
          state = undefined;
          break;
        }
        state = next.value;
      }
      const totals = movementTotals(movements);
      const need = totals.ok ? totals.wallets.get('w')! : undefined;
      const met = need !== undefined && w.balanceCents - w.heldCents >= need.needAvailableCents && w.heldCents >= need.needHeldCents;
      expect(met).toBe(state !== undefined);
      if (state && need) expect(state).toEqual({ balanceCents: w.balanceCents + need.balanceCents, heldCents: w.heldCents + need.heldCents });
    }), { seed: 20261128, numRuns: 2000 });
  });

  it('refuses the first movement of an invalid amount', () => {
    expect(movementTotals([{ walletId: 'w', txType: 'fund', amountCents: 5 }, { walletId: 'w', txType: 'payout', amountCents: 5 }])).toMatchObject({ ok: false, index: 1, error: { reason: 'invalid_amount' } });
  });
});

describe('D13.2 / D6.8 the ledger’s model of movements (planMovements)', () => {
  const wallets = new Map<string, LedgerWallet>([
    ['parent', { balanceCents: 1000, heldCents: 0, closed: false, parentWalletId: null }],
    ['child', { balanceCents: 500, heldCents: 500, closed: true, parentWalletId: 'parent' }],
  ]);

  it('returns to the parent what a movement makes available in a closed child’s wallet, after the movements', () => {
    const plan = planMovements(wallets, [{ walletId: 'child', txType: 'fund_return', amountCents: 300 }]);
    expect(plan).toMatchObject({ ok: true, returns: [{ childWalletId: 'child', parentWalletId: 'parent', amountCents: 300 }] });
    expect(plan.ok && plan.entries).toEqual([
      { walletId: 'child', txType: 'fund_return', amountCents: 300, balanceAfterCents: 500, availableAfterCents: 300 },
      { walletId: 'child', txType: 'parent_return', amountCents: -300, balanceAfterCents: 200, availableAfterCents: 0 },
      { walletId: 'parent', txType: 'parent_return', amountCents: 300, balanceAfterCents: 1300, availableAfterCents: 1300 },
    ]);
  });

  it('returns nothing when the child’s movements leave nothing available (a settlement it paid)', () => {
    const plan = planMovements(wallets, [{ walletId: 'child', txType: 'fund_release', amountCents: 500 }, { walletId: 'child', txType: 'settlement_out', amountCents: -500 }]);
    expect(plan).toMatchObject({ ok: true, returns: [], after: new Map([['child', { balanceCents: 0, heldCents: 0 }]]) });
  });

  it('refuses all the movements at the first one applyEntry refuses, saying which', () => {
    expect(planMovements(wallets, [{ walletId: 'parent', txType: 'payout', amountCents: -600 }, { walletId: 'parent', txType: 'payout', amountCents: -600 }]))
      .toEqual({ ok: false, index: 1, error: { reason: 'insufficient_funds', availableCents: 400, requiredCents: 600 } });
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
