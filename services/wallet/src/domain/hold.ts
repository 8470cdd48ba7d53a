import type { HoldRow } from '../db/schema.js';

/**
 * A transaction's hold in the wallet as a pure decision (D9.9, D13.2, D13.3): the wallet's side of the
 * purchase saga. One `holds` row per transaction decides the order of its commands: whatever comes
 * first, the outcome is the same however often any of them is repeated, and every command is answered
 * with the hold's state, so a repeated command gets its answer again. No I/O: `serveHolds` reads,
 * writes and answers.
 */

/** Where a transaction's hold stands: no row yet, or its row's status with why it was refused. */
export type HoldPhase = 'none' | 'held' | 'refused_for_funds' | 'refused_no_wallet' | 'closed' | 'returned' | 'settled';

/** The hold's phases and the only moves between them. */
export const HOLD_PHASE_MOVES: Readonly<Record<HoldPhase, readonly HoldPhase[]>> = {
  none: ['held', 'refused_for_funds', 'refused_no_wallet', 'closed'],
  // Refused for funds: a later attempt (an accept sent again once the wallet is funded) tries again;
  // a return closes it for good, so an attempt sent before the cancellation places nothing after it.
  refused_for_funds: ['held', 'refused_for_funds', 'refused_no_wallet', 'closed'],
  refused_no_wallet: ['closed'],
  held: ['returned', 'settled'],
  closed: [],
  returned: [],
  settled: [],
};

export function phaseOf(hold: Pick<HoldRow, 'status' | 'refusal'> | undefined): HoldPhase {
  if (!hold) return 'none';
  if (hold.status !== 'refused') return hold.status;
  return hold.refusal === 'insufficient_funds' ? 'refused_for_funds' : hold.refusal === 'no_wallet' ? 'refused_no_wallet' : 'closed';
}

export type HoldCommand =
  /** `availableCents`: the consumer's available balance, null when it has no wallet. */
  | { kind: 'hold'; attempt: number; amountCents: number; availableCents: number | null }
  | { kind: 'return' }
  | { kind: 'settle'; amountCents: number; feeCents: number; refundCents: number };

export type HoldDecision =
  /** Nothing changes: the hold's state is told again. */
  | { kind: 'answer' }
  | { kind: 'place' }
  | { kind: 'refuse'; refusal: 'insufficient_funds' | 'no_wallet' }
  /** No hold placed (none yet, or one refused): closed for good. */
  | { kind: 'close' }
  | { kind: 'return' }
  | { kind: 'settle' };

/**
 * Whether a hold command is decided anew on a hold in `phase`, rather than answered with the hold as
 * it is: the transaction's first, or a later attempt after a refusal for funds (an accept sent again
 * once the wallet is funded).
 */
export const holdTriedAgain = (phase: HoldPhase, attempt: number, held?: Pick<HoldRow, 'attempt'>): boolean =>
  phase === 'none' || (phase === 'refused_for_funds' && attempt > held!.attempt);

/** What `command` does to a hold in `phase` (with `held`: the hold's row, for a settlement's checks). */
export function decideHold(phase: HoldPhase, command: HoldCommand, held?: Pick<HoldRow, 'amountCents' | 'attempt'>): HoldDecision {
  switch (command.kind) {
    case 'hold': {
      if (!holdTriedAgain(phase, command.attempt, held)) return { kind: 'answer' };
      if (command.availableCents === null) return { kind: 'refuse', refusal: 'no_wallet' };
      return command.availableCents < command.amountCents ? { kind: 'refuse', refusal: 'insufficient_funds' } : { kind: 'place' };
    }
    case 'return':
      // A return before its hold (the transaction cancelled while the hold command was on its way) closes it for good.
      return phase === 'held' ? { kind: 'return' } : phase === 'none' || phase === 'refused_for_funds' || phase === 'refused_no_wallet' ? { kind: 'close' } : { kind: 'answer' };
    case 'settle':
      // A settle of a hold that is not held (returned, refused) changes nothing; its answer tells the hold's state.
      if (phase === 'none') throw new Error('settle before hold');
      if (phase !== 'held') return { kind: 'answer' };
      if (command.amountCents !== held!.amountCents) throw new Error(`settle of ${command.amountCents} for a hold of ${held!.amountCents}`);
      return { kind: 'settle' };
  }
}

/** The phase a decision leaves the hold in. */
export function phaseAfter(phase: HoldPhase, decision: HoldDecision): HoldPhase {
  switch (decision.kind) {
    case 'answer':
      return phase;
    case 'place':
      return 'held';
    case 'refuse':
      return decision.refusal === 'no_wallet' ? 'refused_no_wallet' : 'refused_for_funds';
    case 'close':
      return 'closed';
    case 'return':
      return 'returned';
    case 'settle':
      return 'settled';
  }
}

/** One ledger movement of a settlement (D13.3): a wallet, its entry type, a signed amount. */
export interface SettlementMovement {
  wallet: 'consumer' | 'provider' | 'platform';
  txType: 'fund_return' | 'fund_release' | 'settlement_out' | 'settlement_in' | 'platform_fee';
  amountCents: number;
}

/**
 * D13.3 / D12.8: the movements that settle a hold of `heldCents` — `refundCents` back to the consumer,
 * the rest released and paid out of its wallet into the provider's, the fee moved from the provider to
 * the platform. Refund + paid = the hold; the fee is within what was paid.
 */
export function settlementMovements(heldCents: number, feeCents: number, refundCents: number): SettlementMovement[] {
  // A refund of everything is a return, asked for as one; something must be paid here.
  if (refundCents < 0 || refundCents >= heldCents) throw new Error(`a settlement refunding ${refundCents} of ${heldCents}`);
  const paid = heldCents - refundCents;
  if (feeCents < 0 || feeCents > paid) throw new Error(`a fee of ${feeCents} on ${paid} cents paid`);
  const movements: SettlementMovement[] = [];
  if (refundCents > 0) movements.push({ wallet: 'consumer', txType: 'fund_return', amountCents: refundCents });
  movements.push(
    { wallet: 'consumer', txType: 'fund_release', amountCents: paid },
    { wallet: 'consumer', txType: 'settlement_out', amountCents: -paid },
    { wallet: 'provider', txType: 'settlement_in', amountCents: paid },
  );
  if (feeCents > 0) movements.push({ wallet: 'provider', txType: 'platform_fee', amountCents: -feeCents }, { wallet: 'platform', txType: 'platform_fee', amountCents: feeCents });
  return movements;
}
