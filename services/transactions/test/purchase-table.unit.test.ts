import { describe, expect, it } from 'vitest';
import { isAppError, TERMINAL_STATUSES, type TransactionStatus } from '@aex/contracts';
import type { HoldState } from '../src/db/schema.js';
import { canMoveHold, decidePurchase, HOLD_MOVES, type PurchaseDecision } from '../src/domain/purchase.js';
import { canMove } from '../src/domain/state-machine.js';
import { after, changed, COMMANDS, effectsOf, FACTS, key, NOW, POLICY, STATES, stateOf } from './purchase-fixtures.js';

/**
 * The purchase's specification (D9.7, D9.14, D10.3, D11, D12.8, terminal means settled): for each
 * command, the states it changes and to what (`status/hold`, `→ ending` while a price is being
 * returned), or the code it refuses with where that is not INVALID_STATE. Any pair not listed: a
 * request is refused with 409 INVALID_STATE, an answer or timer changes nothing, a dispute resolution
 * cannot happen (a dispute is resolved once, its transaction `disputed` with the price held).
 */
const EXPECTED: Record<string, Record<string, string>> = {
  'hold placed': {
    'initiated/requested': 'funds_held/held', 'negotiating/requested, accept pending': 'funds_held/held', 'awaiting_approval/requested': 'funds_held/held',
    'awaiting_approval/requested, negotiated': 'funds_held/held', 'awaiting_approval/requested, its time run out': 'funds_held/held',
  },
  'hold placed, stale attempt': {},
  'hold refused': {
    'initiated/requested': 'failed/refused', 'negotiating/requested, accept pending': 'negotiating/refused',
    'awaiting_approval/requested': 'awaiting_approval/refused', 'awaiting_approval/requested, negotiated': 'awaiting_approval/refused',
    'awaiting_approval/requested, its time run out': 'cancelled/refused',
    // The wallet refused a hold it had not placed when the return came first: nothing was held, the transaction ends.
    'initiated/returning → cancelled': 'cancelled/returned', 'negotiating/returning → cancelled': 'cancelled/returned', 'awaiting_approval/returning → cancelled': 'cancelled/returned',
    'funds_held/returning → cancelled': 'cancelled/returned', 'executing/returning → expired': 'expired/returned', 'validation_failed/returning → failed': 'failed/returned',
    'disputed/returning → failed': 'failed/returned',
  },
  'hold returned': {
    'initiated/returning → cancelled': 'cancelled/returned', 'negotiating/returning → cancelled': 'cancelled/returned', 'awaiting_approval/returning → cancelled': 'cancelled/returned',
    'funds_held/returning → cancelled': 'cancelled/returned', 'executing/returning → expired': 'expired/returned', 'validation_failed/returning → failed': 'failed/returned',
    'disputed/returning → failed': 'failed/returned',
  },
  'hold settled': { 'delivered/settling': 'settled/settled', 'disputed/settling': 'settled/settled' },
  start: { 'funds_held/held': 'executing/held' },
  'deliver valid output': {
    'funds_held/held': 'delivered/held', 'executing/held': 'delivered/held', 'validation_failed/held': 'delivered/held', 'validation_failed/held, last attempt left': 'delivered/held',
  },
  'deliver invalid output': {
    'funds_held/held': 'validation_failed/held', 'executing/held': 'validation_failed/held', 'validation_failed/held': 'validation_failed/held',
    'validation_failed/held, last attempt left': 'validation_failed/returning → failed',
  },
  verify: { 'delivered/held': 'delivered/settling', 'delivered/held, disputed before': 'delivered/settling' },
  cancel: {
    'initiated/requested': 'initiated/returning → cancelled', 'negotiating/none': 'cancelled/none', 'negotiating/requested, accept pending': 'negotiating/returning → cancelled',
    'negotiating/refused': 'cancelled/refused', 'funds_held/held': 'funds_held/returning → cancelled',
    'awaiting_approval/none': 'cancelled/none', 'awaiting_approval/none, negotiated': 'cancelled/none', 'awaiting_approval/requested': 'awaiting_approval/returning → cancelled',
    'awaiting_approval/requested, negotiated': 'awaiting_approval/returning → cancelled', 'awaiting_approval/requested, its time run out': 'awaiting_approval/returning → cancelled',
    'awaiting_approval/refused': 'cancelled/refused',
  },
  'counter-offer': { 'negotiating/none': 'negotiating/none', 'negotiating/refused': 'negotiating/refused' },
  accept: { 'negotiating/none': 'negotiating/requested', 'negotiating/refused': 'negotiating/requested' },
  'accept at a price needing approval': { 'negotiating/none': 'awaiting_approval/none', 'negotiating/refused': 'awaiting_approval/refused' },
  approve: {
    'awaiting_approval/none': 'awaiting_approval/requested', 'awaiting_approval/none, negotiated': 'awaiting_approval/requested', 'awaiting_approval/refused': 'awaiting_approval/requested',
  },
  deny: {
    'awaiting_approval/none': 'cancelled/none', 'awaiting_approval/none, negotiated': 'cancelled/none', 'awaiting_approval/requested': 'awaiting_approval/returning → cancelled',
    'awaiting_approval/requested, negotiated': 'awaiting_approval/returning → cancelled', 'awaiting_approval/requested, its time run out': 'awaiting_approval/returning → cancelled',
    'awaiting_approval/refused': 'cancelled/refused',
  },
  'approval expired': { 'awaiting_approval/none': 'cancelled/none', 'awaiting_approval/none, negotiated': 'cancelled/none', 'awaiting_approval/refused': 'cancelled/refused' },
  'offer expired': { 'negotiating/none': 'cancelled/none', 'negotiating/refused': 'cancelled/refused' },
  'offer expired, a newer offer since': {},
  'transaction expired': {
    'funds_held/held': 'funds_held/returning → expired', 'executing/held': 'executing/returning → expired', 'validation_failed/held': 'validation_failed/returning → expired',
    'validation_failed/held, last attempt left': 'validation_failed/returning → expired',
  },
  'review window ended': { 'delivered/held': 'delivered/settling', 'delivered/held, disputed before': 'delivered/settling' },
  'open dispute': { 'delivered/held': 'disputed/held' },
  'dispute: consumer wins': { 'disputed/held': 'disputed/returning → failed' },
  'dispute: provider wins': { 'disputed/held': 'disputed/settling' },
  'dispute: partial refund': { 'disputed/held': 'disputed/settling' },
  'dispute: provider redoes': { 'disputed/held': 'executing/held' },
};

/** The states a committed step may leave: those listed, and the ending ones the table names. */
const reachable = new Set([...Object.keys(STATES).map((n) => key(stateOf(n))), ...Object.values(EXPECTED).flatMap((m) => Object.values(m))]);

function expectRefusal(d: PurchaseDecision, code: string) {
  expect(d.kind).toBe('refused');
  const error = (d as Extract<PurchaseDecision, { kind: 'refused' }>).error;
  expect(isAppError(error) && error.code).toBe(code);
}

describe('the purchase decision: every state × every command (D9.7, D9.14, D10.3, D11, D12.8)', () => {
  const cases = Object.keys(COMMANDS).flatMap((c) => Object.keys(STATES).map((s) => [c, s] as const));

  it.each(cases)('%s on %s', (commandName, stateName) => {
    const { kind, command } = COMMANDS[commandName]!;
    const t = stateOf(stateName);
    const expected = EXPECTED[commandName]![stateName];
    if (expected === undefined && kind === 'dispute resolution') {
      expect(() => decidePurchase(t, command, FACTS, POLICY, NOW)).toThrow(/resolved in status/);
      return;
    }
    const d = decidePurchase(t, command, FACTS, POLICY, NOW);
    if (expected === undefined) {
      if (kind === 'request') expectRefusal(d, 'INVALID_STATE');
      else expect(d).toEqual({ kind: 'unchanged' });
      return;
    }
    const next = after(t, d);
    expect(key(next)).toBe(expected);
    expect(reachable.has(key(next))).toBe(true);
    expect(next.updatedAt).toEqual(NOW);
    // Each status move is one the state machine knows, announced once; an ended transaction's timers are dropped.
    const announced = effectsOf(d, 'announce');
    if ('status' in changed(d).changes) {
      expect(announced.at(-1)!.event).toMatchObject({ status: next.status, transactionId: t.id });
      expect(announced[0]!.event.previousStatus).toBe(t.status);
      for (const a of announced) expect(canMove(a.event.previousStatus!, a.event.status)).toBe(true);
    } else {
      expect(announced).toEqual([]);
    }
    if ((TERMINAL_STATUSES.includes(next.status) && !TERMINAL_STATUSES.includes(t.status)) || (next.endingStatus && !t.endingStatus)) {
      expect(effectsOf(d, 'cancelTimers').flatMap((e) => e.timers)).toEqual(expect.arrayContaining(['offerExpiry', 'transactionExpiry', 'reviewWindow', 'approvalExpiry']));
    }
    // The money follows the hold: asked for, returned or settled exactly when the hold moves so.
    expect(canMoveHold(t.hold, next.hold)).toBe(true);
    expect(effectsOf(d, 'holdFunds').length).toBe(next.hold === 'requested' && t.hold !== 'requested' ? 1 : 0);
    expect(effectsOf(d, 'returnHold').length).toBe(next.hold === 'returning' && t.hold !== 'returning' ? 1 : 0);
    expect(effectsOf(d, 'settle').length).toBe(next.hold === 'settling' && t.hold !== 'settling' ? 1 : 0);
  });

  it('lists a hold move for every hold state, and each move leads to a listed state', () => {
    const holds = Object.keys(HOLD_MOVES) as HoldState[];
    for (const from of holds) for (const to of HOLD_MOVES[from]) expect(holds).toContain(to);
    expect(HOLD_MOVES.returned).toEqual([]);
    expect(HOLD_MOVES.settled).toEqual([]);
  });

  it('never shows a terminal status before the money is where it ends: no terminal state with money held, asked for, on its way back or being settled', () => {
    for (const expected of reachable) {
      const [status, hold] = expected.split(/[/ ]/) as [TransactionStatus, HoldState];
      if (TERMINAL_STATUSES.includes(status)) expect(['none', 'refused', 'returned', 'settled'], expected).toContain(hold);
    }
  });

  it('takes no request while a transaction is ending, naming the status it ends with', () => {
    for (const name of Object.keys(STATES).filter((n) => n.includes('→'))) {
      for (const { kind, command } of Object.values(COMMANDS)) {
        if (kind !== 'request') continue;
        const d = decidePurchase(stateOf(name), command, FACTS, POLICY, NOW);
        expectRefusal(d, 'INVALID_STATE');
        expect(d.kind === 'refused' && isAppError(d.error) && d.error.entries[0]!.details).toMatchObject({ ending: stateOf(name).endingStatus });
      }
    }
  });
});

it('covers every status a committed step leaves', () => {
  const covered = new Set(Object.keys(STATES).map((n) => stateOf(n).status));
  const statuses: TransactionStatus[] = ['initiated', 'negotiating', 'awaiting_approval', 'funds_held', 'executing', 'validation_failed', 'delivered', 'disputed', 'settled', 'cancelled', 'expired', 'failed'];
  expect([...covered].sort()).toEqual([...statuses].sort());
});
