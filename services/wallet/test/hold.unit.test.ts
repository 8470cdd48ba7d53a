import { describe, expect, it } from 'vitest';
import { decideHold, HOLD_PHASE_MOVES, phaseAfter, phaseOf, settlementMovements, type HoldCommand, type HoldPhase } from '../src/domain/hold.js';

const PHASES = Object.keys(HOLD_PHASE_MOVES) as HoldPhase[];
const ROW = { amountCents: 1000, attempt: 1 };

const COMMANDS: Record<string, HoldCommand> = {
  'hold, funds enough': { kind: 'hold', attempt: 2, amountCents: 1000, availableCents: 5000 },
  'hold, funds short': { kind: 'hold', attempt: 2, amountCents: 1000, availableCents: 999 },
  'hold, no wallet': { kind: 'hold', attempt: 2, amountCents: 1000, availableCents: null },
  'hold repeated (same attempt), funds enough': { kind: 'hold', attempt: 1, amountCents: 1000, availableCents: 5000 },
  return: { kind: 'return' },
  settle: { kind: 'settle', amountCents: 1000, feeCents: 50, refundCents: 0 },
};

/**
 * The wallet's side of the saga (D9.9, D13.2, D13.3): for each command, the phase it leaves each
 * phase in; `=` the phase as it was (the state told again), `!` a command that cannot come (a bug).
 */
const EXPECTED: Record<string, Record<HoldPhase, HoldPhase | '=' | '!'>> = {
  'hold, funds enough': { none: 'held', refused_for_funds: 'held', refused_no_wallet: '=', held: '=', closed: '=', returned: '=', settled: '=' },
  'hold, funds short': { none: 'refused_for_funds', refused_for_funds: 'refused_for_funds', refused_no_wallet: '=', held: '=', closed: '=', returned: '=', settled: '=' },
  'hold, no wallet': { none: 'refused_no_wallet', refused_for_funds: 'refused_no_wallet', refused_no_wallet: '=', held: '=', closed: '=', returned: '=', settled: '=' },
  'hold repeated (same attempt), funds enough': { none: 'held', refused_for_funds: '=', refused_no_wallet: '=', held: '=', closed: '=', returned: '=', settled: '=' },
  return: { none: 'closed', refused_for_funds: 'closed', refused_no_wallet: 'closed', held: 'returned', closed: '=', returned: '=', settled: '=' },
  settle: { none: '!', refused_for_funds: '=', refused_no_wallet: '=', held: 'settled', closed: '=', returned: '=', settled: '=' },
};

describe('the wallet\'s hold: every phase × every command', () => {
  const cases = Object.keys(COMMANDS).flatMap((c) => PHASES.map((p) => [c, p] as const));
  it.each(cases)('%s on %s', (name, phase) => {
    const expected = EXPECTED[name]![phase];
    if (expected === '!') {
      expect(() => decideHold(phase, COMMANDS[name]!, phase === 'none' ? undefined : ROW)).toThrow();
      return;
    }
    const decision = decideHold(phase, COMMANDS[name]!, phase === 'none' ? undefined : ROW);
    const next = phaseAfter(phase, decision);
    expect(next).toBe(expected === '=' ? phase : expected);
    // A change is always one of the listed moves; nothing else changes (the state is told again).
    if (decision.kind === 'answer') expect(next).toBe(phase);
    else expect(HOLD_PHASE_MOVES[phase]).toContain(next);
  });

  it('reads the phase from the hold\'s row', () => {
    expect(phaseOf(undefined)).toBe('none');
    expect(phaseOf({ status: 'held', refusal: null })).toBe('held');
    expect(phaseOf({ status: 'refused', refusal: 'insufficient_funds' })).toBe('refused_for_funds');
    expect(phaseOf({ status: 'refused', refusal: 'no_wallet' })).toBe('refused_no_wallet');
    expect(phaseOf({ status: 'refused', refusal: 'closed' })).toBe('closed');
    expect(phaseOf({ status: 'settled', refusal: null })).toBe('settled');
  });

  it('refuses a settlement of another amount than the one held: the saga asked for something else', () => {
    expect(() => decideHold('held', { kind: 'settle', amountCents: 999, feeCents: 0, refundCents: 0 }, ROW)).toThrow(/settle of 999 for a hold of 1000/);
  });
});

describe('a settlement\'s movements (D13.3, D12.8)', () => {
  const sum = (ms: { amountCents: number }[]) => ms.reduce((n, m) => n + m.amountCents, 0);

  it('pays the held price to the provider and the fee to the platform', () => {
    expect(settlementMovements(1000, 50, 0)).toEqual([
      { wallet: 'consumer', txType: 'fund_release', amountCents: 1000 },
      { wallet: 'consumer', txType: 'settlement_out', amountCents: -1000 },
      { wallet: 'provider', txType: 'settlement_in', amountCents: 1000 },
      { wallet: 'provider', txType: 'platform_fee', amountCents: -50 },
      { wallet: 'platform', txType: 'platform_fee', amountCents: 50 },
    ]);
  });

  it('returns a partial refund first and pays only the rest, with no fee entry when the fee is 0', () => {
    expect(settlementMovements(1000, 0, 300)).toEqual([
      { wallet: 'consumer', txType: 'fund_return', amountCents: 300 },
      { wallet: 'consumer', txType: 'fund_release', amountCents: 700 },
      { wallet: 'consumer', txType: 'settlement_out', amountCents: -700 },
      { wallet: 'provider', txType: 'settlement_in', amountCents: 700 },
    ]);
  });

  it.each([[1, 0, 0], [1000, 50, 0], [1000, 35, 300], [10_000_000, 320_000, 1], [7, 7, 0]])('moves no money out of nowhere: a hold of %i, fee %i, refund %i', (held, fee, refund) => {
    const ms = settlementMovements(held, fee, refund);
    // Money only changes hands: the balances' changes sum to zero once the hold's release is set aside.
    expect(sum(ms.filter((m) => m.txType !== 'fund_release' && m.txType !== 'fund_return'))).toBe(0);
    // What leaves the hold (released or refunded) is exactly what was held.
    expect(sum(ms.filter((m) => m.txType === 'fund_release' || m.txType === 'fund_return'))).toBe(held);
  });

  it.each([[1000, 0, 1000], [1000, 0, -1], [1000, 701, 300], [1000, -1, 0]])('refuses a hold of %i with fee %i and refund %i: nothing would be paid, or the fee is not within it', (held, fee, refund) => {
    expect(() => settlementMovements(held, fee, refund)).toThrow();
  });
});
