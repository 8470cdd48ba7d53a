import type { LedgerTxType } from '@aex/contracts';
import { settlementMovements } from './hold.js';

/** One row of D13.2's table: what an entry of a type does to a wallet. */
export interface LedgerRule {
  /** The sign `amountCents` must have; 0: either (`parent_*` is −X on one side and +X on the other, `platform_fee` −F on the provider and +F on the platform wallet, D13.3). */
  sign: -1 | 0 | 1;
  /** What the entry moves: the balance, or what is held (a hold's entry is the negated change of `heldCents`). */
  moves: 'balance' | 'held';
  /** The wallet's lifetime figure it counts in: earned (+amount) or spent (−amount). */
  lifetime?: 'earned' | 'spent';
}

/**
 * D13.2's table, the one statement of what each entry type does: `applyEntry` and the conditional
 * write of movements (`movementTotals`, then `wallets/movements.ts`) both come from it.
 */
export const LEDGER_TABLE: Readonly<Record<LedgerTxType, LedgerRule>> = {
  fund: { sign: 1, moves: 'balance' },
  fund_hold: { sign: -1, moves: 'held' },
  fund_return: { sign: 1, moves: 'held' },
  fund_release: { sign: 1, moves: 'held' },
  settlement_out: { sign: -1, moves: 'balance', lifetime: 'spent' },
  settlement_in: { sign: 1, moves: 'balance', lifetime: 'earned' },
  platform_fee: { sign: 0, moves: 'balance' },
  payout: { sign: -1, moves: 'balance' },
  parent_allocation: { sign: 0, moves: 'balance' },
  parent_return: { sign: 0, moves: 'balance' },
};

/** D13.2: entry types that move `heldCents`; every other type moves `balanceCents`. */
export const HOLD_TX_TYPES: readonly LedgerTxType[] = (Object.keys(LEDGER_TABLE) as LedgerTxType[]).filter((t) => LEDGER_TABLE[t].moves === 'held');

export interface Balances {
  balanceCents: number;
  heldCents: number;
}

export type MoveFailure = { reason: 'insufficient_funds'; availableCents: number; requiredCents: number } | { reason: 'invalid_amount'; message: string };

/**
 * D13.2: what one entry changes, whatever the wallet (`LEDGER_TABLE`): its balance, or what it
 * holds; an amount of the wrong sign, zero or not a safe integer is refused.
 */
export function entryChange(txType: LedgerTxType, amountCents: number): { ok: true; value: Balances } | { ok: false; error: MoveFailure } {
  if (!Number.isSafeInteger(amountCents) || amountCents === 0) return { ok: false, error: { reason: 'invalid_amount', message: 'amount must be a non-zero safe integer' } };
  const { sign, moves } = LEDGER_TABLE[txType];
  if (sign !== 0 && Math.sign(amountCents) !== sign) return { ok: false, error: { reason: 'invalid_amount', message: `${txType} must be ${sign > 0 ? 'positive' : 'negative'}` } };
  return { ok: true, value: moves === 'held' ? { balanceCents: 0, heldCents: -amountCents } : { balanceCents: amountCents, heldCents: 0 } };
}

/**
 * D13.2: applies one entry (`amountCents` = signed change of the available balance) to a wallet.
 * Returns the new balances or why the move is refused; nothing here touches a database.
 */
export function applyEntry(state: Balances, txType: LedgerTxType, amountCents: number): { ok: true; value: Balances } | { ok: false; error: MoveFailure } {
  const change = entryChange(txType, amountCents);
  if (!change.ok) return change;
  const next = { balanceCents: state.balanceCents + change.value.balanceCents, heldCents: state.heldCents + change.value.heldCents };
  const available = next.balanceCents - next.heldCents;
  if (available < 0) {
    return { ok: false, error: { reason: 'insufficient_funds', availableCents: state.balanceCents - state.heldCents, requiredCents: Math.abs(amountCents) } };
  }
  if (next.heldCents < 0) return { ok: false, error: { reason: 'invalid_amount', message: 'more released than held' } };
  return { ok: true, value: next };
}

/** One movement of money as the ledger sees it: a wallet, an entry type and a signed amount (D13.2). */
export interface LedgerMovement {
  walletId: string;
  txType: LedgerTxType;
  amountCents: number;
}

/** What a list of movements does to one wallet, in total, and what the wallet must have for it. */
export interface WalletMoves {
  /** The change of the balance, of what is held, of the lifetime earned and spent. */
  balanceCents: number;
  heldCents: number;
  earnedCents: number;
  spentCents: number;
  /** The least available balance (balance − held) the wallet must have for every prefix of its movements to leave it ≥ 0. */
  needAvailableCents: number;
  /** The least held amount it must have for every prefix to leave what it holds ≥ 0. */
  needHeldCents: number;
}

/**
 * The movements per wallet (`LEDGER_TABLE`), with what each wallet must have for them: a wallet
 * whose available balance is at least `needAvailableCents` and whose held amount is at least
 * `needHeldCents` can make all its movements in order, each accepted by `applyEntry`; one with less
 * cannot. The condition of the one write of money (`wallets/movements.ts`) compares exactly these.
 * Refused, with the first movement that is, when an amount is invalid.
 */
export function movementTotals(movements: readonly LedgerMovement[]): { ok: true; wallets: Map<string, WalletMoves> } | { ok: false; index: number; error: MoveFailure } {
  const wallets = new Map<string, WalletMoves>();
  for (const [index, m] of movements.entries()) {
    const change = entryChange(m.txType, m.amountCents);
    if (!change.ok) return { ok: false, index, error: change.error };
    const w = wallets.get(m.walletId) ?? { balanceCents: 0, heldCents: 0, earnedCents: 0, spentCents: 0, needAvailableCents: 0, needHeldCents: 0 };
    w.balanceCents += change.value.balanceCents;
    w.heldCents += change.value.heldCents;
    const lifetime = LEDGER_TABLE[m.txType].lifetime;
    if (lifetime === 'earned') w.earnedCents += m.amountCents;
    if (lifetime === 'spent') w.spentCents -= m.amountCents;
    // After this prefix the wallet has available + (balance − held) and held + held change: both ≥ 0.
    w.needAvailableCents = Math.max(w.needAvailableCents, w.heldCents - w.balanceCents);
    w.needHeldCents = Math.max(w.needHeldCents, -w.heldCents);
    wallets.set(m.walletId, w);
  }
  return { ok: true, wallets };
}

/** A wallet as movements are decided on it: its balances, and (D6.8) whether it is a closed child's, and its parent. */
export interface LedgerWallet extends Balances {
  closed: boolean;
  parentWalletId: string | null;
}

/** An entry as the ledger writes it: the movement, with the balances the wallet has right after it. */
export interface PlannedEntry extends LedgerMovement {
  balanceAfterCents: number;
  availableAfterCents: number;
}

/** D6.8: what became available in a closed child's wallet, returned to its parent (`parent_return`, −X / +X). */
export interface ParentReturn {
  childWalletId: string;
  parentWalletId: string;
  amountCents: number;
}

export type MovementPlan =
  | { ok: true; entries: PlannedEntry[]; returns: ParentReturn[]; after: Map<string, Balances> }
  | { ok: false; index: number; error: MoveFailure };

/**
 * The ledger's model of movements (D13.2, D6.8): each applied in order by `applyEntry` — the first it
 * refuses refuses them all — then whatever is available in a closed child's wallet returns to its
 * parent (the children's returns in the order of their ids). The entries it gives are those the
 * ledger must hold afterwards, in order, each with the balances it left. `wallets` must hold every
 * wallet moved, and the parent of every closed child among them.
 */
export function planMovements(wallets: ReadonlyMap<string, LedgerWallet>, movements: readonly LedgerMovement[]): MovementPlan {
  const after = new Map<string, Balances>();
  const entries: PlannedEntry[] = [];
  const move = (m: LedgerMovement) => {
    const before = after.get(m.walletId) ?? wallets.get(m.walletId);
    if (!before) throw new Error(`wallet ${m.walletId} does not exist`);
    const next = applyEntry(before, m.txType, m.amountCents);
    if (!next.ok) return next;
    after.set(m.walletId, next.value);
    entries.push({ walletId: m.walletId, txType: m.txType, amountCents: m.amountCents, balanceAfterCents: next.value.balanceCents, availableAfterCents: next.value.balanceCents - next.value.heldCents });
    return next;
  };
  for (const [index, m] of movements.entries()) {
    const moved = move(m);
    if (!moved.ok) return { ok: false, index, error: moved.error };
  }
  const returns: ParentReturn[] = [];
  for (const id of [...after.keys()].sort()) {
    const w = wallets.get(id)!;
    const { balanceCents, heldCents } = after.get(id)!;
    if (!w.closed || !w.parentWalletId || balanceCents - heldCents <= 0) continue;
    returns.push({ childWalletId: id, parentWalletId: w.parentWalletId, amountCents: balanceCents - heldCents });
  }
  for (const r of returns) {
    // A credit never fails: these cannot be refused.
    move({ walletId: r.childWalletId, txType: 'parent_return', amountCents: -r.amountCents });
    move({ walletId: r.parentWalletId, txType: 'parent_return', amountCents: r.amountCents });
  }
  return { ok: true, entries, returns, after };
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
 * docs/payments.md "How money moves" / D13.2–D13.3 invariants: per wallet the entries sum to the available balance,
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

/** One transaction's hold with the sums of its ledger entries by type (the check's input). */
export interface HoldTotals {
  transactionId: string;
  status: 'held' | 'refused' | 'returned' | 'settled';
  amountCents: number;
  feeCents: number | null;
  /** The part a settlement returned to the consumer (D12.8 partial refund), else 0. */
  refundCents: number;
  /** D17.5: what a session's calls took of its hold, and their fees (0 for a transaction's own hold). */
  capturedCents: number;
  capturedFeeCents: number;
  /** Σ amountCents per txType of the entries carrying this transaction id, across wallets. */
  sums: Partial<Record<LedgerTxType, number>>;
  /** Σ |amountCents| of its platform_fee entries: 2F when the fee left the provider and reached the platform. */
  feeMovedCents: number;
}

/**
 * The entries each hold state must have, exactly once each (D13.2): what every hold must add up to.
 * A settlement's are the ones `settlementMovements` makes; undefined when the hold's own figures
 * could not have been settled (a refund of all of it, a fee above what was paid).
 */
function expectedSums(h: HoldTotals): Partial<Record<LedgerTxType, number>> | undefined {
  const X = h.amountCents;
  // D17.5: a session's hold with its calls' captures, each entry carrying its call's id (summed here per session).
  const C = h.capturedCents;
  const captured: Partial<Record<LedgerTxType, number>> = C > 0 ? { fund_release: C, settlement_out: -C, settlement_in: C, ...(h.capturedFeeCents > 0 ? { platform_fee: 0 } : {}) } : {};
  switch (h.status) {
    case 'refused':
      return {};
    case 'held':
      return { fund_hold: -X, ...captured };
    case 'returned':
      return { fund_hold: -X, ...(X - C > 0 ? { fund_return: X - C } : {}), ...captured };
    case 'settled': {
      const sums: Partial<Record<LedgerTxType, number>> = { fund_hold: -X };
      try {
        for (const m of settlementMovements(X, h.feeCents ?? 0, h.refundCents)) sums[m.txType] = (sums[m.txType] ?? 0) + m.amountCents;
      } catch {
        return undefined;
      }
      return sums;
    }
  }
}

/**
 * Every hold released, returned or settled exactly once: a hold's entries are exactly
 * those of its state. Entries are summed per type, so a duplicated or missing movement shows.
 */
export function holdViolations(holds: HoldTotals[]): Violation[] {
  const out: Violation[] = [];
  for (const h of holds) {
    const want = expectedSums(h);
    if (!want) {
      out.push({ invariant: 'hold_entries_match_state', details: { transactionId: h.transactionId, status: h.status, amountCents: h.amountCents, feeCents: h.feeCents, refundCents: h.refundCents, problem: 'no settlement has these figures' } });
      continue;
    }
    const types = new Set([...Object.keys(want), ...Object.keys(h.sums)] as LedgerTxType[]);
    const fee = (h.status === 'settled' ? h.feeCents ?? 0 : 0) + h.capturedFeeCents;
    if (h.feeMovedCents !== 2 * fee) {
      out.push({ invariant: 'hold_entries_match_state', details: { transactionId: h.transactionId, status: h.status, txType: 'platform_fee', expectedMovedCents: 2 * fee, foundMovedCents: h.feeMovedCents } });
    }
    for (const t of types) {
      if ((h.sums[t] ?? 0) !== (want[t] ?? 0) || (want[t] === undefined && h.sums[t] !== undefined)) {
        out.push({ invariant: 'hold_entries_match_state', details: { transactionId: h.transactionId, status: h.status, txType: t, expectedCents: want[t] ?? null, foundCents: h.sums[t] ?? null } });
      }
    }
  }
  return out;
}

/** A child's wallet (D6.8) as the check reads it. */
export interface ChildWalletTotals {
  id: string;
  closed: boolean;
  availableCents: number;
}

/**
 * The entries of one operation moving money between a parent and its children (`parent_allocation` or
 * `parent_return`), grouped by the parent's wallet: `childEntries` of them in the children's wallets.
 */
export interface ParentTransferTotals {
  operationId: string;
  txType: LedgerTxType;
  parentWalletId: string;
  sumCents: number;
  entries: number;
  childEntries: number;
}

/** One spawn's decision with what its child's wallet received. */
export interface AllocationTotals {
  childAgentId: string;
  status: 'funded' | 'refused';
  budgetCents: number;
  childWalletId: string | null;
  allocatedCents: number;
}

/**
 * D6.8 / D13.2 invariants of child agents: every transfer between a parent and a child is −X on one
 * side and +X on the other; an expired child's wallet has nothing available (all of it returned);
 * a funded spawn's child received exactly its budget, a refused one has no wallet.
 */
export function childViolations(children: ChildWalletTotals[], transfers: ParentTransferTotals[], allocations: AllocationTotals[]): Violation[] {
  const out: Violation[] = [];
  for (const c of children) {
    if (c.closed && c.availableCents !== 0) out.push({ invariant: 'closed_child_wallet_empty', walletId: c.id, details: { availableCents: c.availableCents } });
  }
  for (const t of transfers) {
    if (t.sumCents !== 0 || t.childEntries < 1 || t.entries !== 2 * t.childEntries) {
      out.push({ invariant: 'parent_transfer_balanced', walletId: t.parentWalletId, details: { operationId: t.operationId, txType: t.txType, sumCents: t.sumCents, entries: t.entries, childEntries: t.childEntries } });
    }
  }
  for (const a of allocations) {
    const ok = a.status === 'funded' ? a.childWalletId !== null && a.allocatedCents === a.budgetCents : a.childWalletId === null;
    if (!ok) out.push({ invariant: 'child_allocation_matches_decision', ...(a.childWalletId ? { walletId: a.childWalletId } : {}), details: { childAgentId: a.childAgentId, status: a.status, budgetCents: a.budgetCents, allocatedCents: a.allocatedCents } });
  }
  return out;
}
