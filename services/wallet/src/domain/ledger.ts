import type { LedgerTxType } from '@aex/contracts';

/** D13.2: entry types that move `heldCents`; every other type moves `balanceCents`. */
export const HOLD_TX_TYPES: readonly LedgerTxType[] = ['fund_hold', 'fund_return', 'fund_release'];
const HOLD_TYPES: ReadonlySet<LedgerTxType> = new Set(HOLD_TX_TYPES);

/** Sign `amountCents` must have per type (0: either, for parent_* which is −X on one side, +X on the other). */
const SIGN: Record<LedgerTxType, -1 | 0 | 1> = {
  fund: 1, fund_hold: -1, fund_return: 1, fund_release: 1, settlement_out: -1, settlement_in: 1,
  platform_fee: -1, payout: -1, parent_allocation: 0, parent_return: 0,
};

export interface Balances {
  balanceCents: number;
  heldCents: number;
}

export type MoveFailure = { reason: 'insufficient_funds'; availableCents: number; requiredCents: number } | { reason: 'invalid_amount'; message: string };

/**
 * D13.2: applies one entry (`amountCents` = signed change of the available balance) to a wallet.
 * Returns the new balances or why the move is refused; nothing here touches a database.
 */
export function applyEntry(state: Balances, txType: LedgerTxType, amountCents: number): { ok: true; value: Balances } | { ok: false; error: MoveFailure } {
  if (!Number.isSafeInteger(amountCents) || amountCents === 0) return { ok: false, error: { reason: 'invalid_amount', message: 'amount must be a non-zero safe integer' } };
  const sign = SIGN[txType];
  if (sign !== 0 && Math.sign(amountCents) !== sign) return { ok: false, error: { reason: 'invalid_amount', message: `${txType} must be ${sign > 0 ? 'positive' : 'negative'}` } };
  const next = HOLD_TYPES.has(txType)
    ? { balanceCents: state.balanceCents, heldCents: state.heldCents - amountCents }
    : { balanceCents: state.balanceCents + amountCents, heldCents: state.heldCents };
  const available = next.balanceCents - next.heldCents;
  if (available < 0) {
    return { ok: false, error: { reason: 'insufficient_funds', availableCents: state.balanceCents - state.heldCents, requiredCents: Math.abs(amountCents) } };
  }
  if (next.heldCents < 0) return { ok: false, error: { reason: 'invalid_amount', message: 'more released than held' } };
  return { ok: true, value: next };
}

export interface WalletTotals extends Balances {
  id: string;
  /** Σ amountCents of the wallet's entries. */
  sumAll: number;
  /** Σ amountCents of balance-moving entries. */
  sumBalance: number;
  /** Σ amountCents of hold-moving entries (its negation is what is held). */
  sumHeld: number;
  lastBalanceAfter: number | null;
}

export interface Violation {
  invariant: string;
  walletId?: string;
  details: Record<string, unknown>;
}

/**
 * ARCHITECTURE "Money" / D13.2–D13.3 invariants: per wallet the entries sum to the available balance,
 * balance-moving entries sum to the balance, holds sum to `heldCents`, nothing is negative; overall,
 * all balances (platform included) sum to funded minus paid out.
 */
export function ledgerViolations(wallets: WalletTotals[], totals: { fundedCents: number; paidOutCents: number }): Violation[] {
  const out: Violation[] = [];
  let sumBalances = 0;
  for (const w of wallets) {
    const available = w.balanceCents - w.heldCents;
    sumBalances += w.balanceCents;
    if (w.sumAll !== available) out.push({ invariant: 'entries_sum_to_available', walletId: w.id, details: { sumOfEntries: w.sumAll, availableCents: available } });
    if (w.sumBalance !== w.balanceCents) out.push({ invariant: 'balance_entries_sum_to_balance', walletId: w.id, details: { sumOfBalanceEntries: w.sumBalance, balanceCents: w.balanceCents } });
    if (-w.sumHeld !== w.heldCents) out.push({ invariant: 'held_equals_open_holds', walletId: w.id, details: { openHolds: -w.sumHeld, heldCents: w.heldCents } });
    if (available < 0) out.push({ invariant: 'available_not_negative', walletId: w.id, details: { availableCents: available } });
    if (w.heldCents < 0) out.push({ invariant: 'held_not_negative', walletId: w.id, details: { heldCents: w.heldCents } });
    if (w.lastBalanceAfter !== null && w.lastBalanceAfter !== w.balanceCents) {
      out.push({ invariant: 'last_entry_matches_balance', walletId: w.id, details: { balanceAfterCents: w.lastBalanceAfter, balanceCents: w.balanceCents } });
    }
  }
  const expected = totals.fundedCents - totals.paidOutCents;
  if (sumBalances !== expected) out.push({ invariant: 'conservation', details: { sumOfBalances: sumBalances, fundedMinusPaidOut: expected } });
  return out;
}
