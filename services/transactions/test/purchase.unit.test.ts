import { describe, expect, it } from 'vitest';
import { isAppError, TERMINAL_STATUSES, type TransactionStatus } from '@aex/contracts';
import type { Approval, HoldState } from '../src/db/schema.js';
import { canMoveHold, decidePurchase, HOLD_MOVES, openPurchase, type Approver, type Opening, type Purchase, type PurchaseCommand, type PurchaseDecision, type PurchaseEffect } from '../src/domain/purchase.js';
import { platformFee } from '../src/domain/pricing.js';
import { canMove } from '../src/domain/state-machine.js';

const CONSUMER = '00000000-0000-4000-8000-00000000000c';
const PROVIDER = '00000000-0000-4000-8000-00000000000p';
const OWNER = '00000000-0000-4000-8000-00000000000o';
const NOW = new Date('2026-11-27T12:00:00Z');
const HELD_AT = new Date('2026-11-27T11:00:00Z');

const base: Purchase = {
  id: '00000000-0000-4000-8000-000000000001', consumerAgentId: CONSUMER, providerAgentId: PROVIDER, consumerAccountId: 'acct', providerAccountId: 'acct-p', serviceId: 'svc',
  serviceRevision: 1, serviceVersion: '1.0.0', category: 'text', pricing: { model: 'fixed', basePriceCents: 1000 },
  sla: { maxLatencyMs: 60_000, timeoutMs: 3_600_000, maxRetries: 2 }, status: 'initiated', statusReason: null, units: 1, listPriceCents: 1000,
  maxPriceCents: null, agreedPriceCents: 1000, platformFeeCents: 50, hold: 'requested', holdAttempt: 1, pendingAcceptBy: null, pendingAcceptPriceCents: null,
  pendingAcceptMessage: null, initiatedAt: HELD_AT, fundsHeldAt: null, expiresAt: null, deliveredAt: null, settledAt: null, reviewEndsAt: null, disputeId: null,
  approval: null, qualityScore: null, notes: null, deliveryAttempts: 0, maxDeliveryAttempts: 3, createdAt: HELD_AT, updatedAt: HELD_AT,
};
const held = { fundsHeldAt: HELD_AT, expiresAt: new Date(HELD_AT.getTime() + 3_600_000), hold: 'held' as const };
const delivered = { ...held, deliveryAttempts: 1, deliveredAt: new Date(HELD_AT.getTime() + 1_000), reviewEndsAt: new Date(NOW.getTime() + 60_000) };
const negotiation = { pricing: { model: 'negotiable' as const, basePriceCents: 1000 }, agreedPriceCents: null, platformFeeCents: null, hold: 'none' as const, holdAttempt: 0 };
/** D10.3: a purchase at the list price waiting for the owner (asked an hour ago, for a day). */
const APPROVAL: Approval = { rule: 'requireHumanApprovalAboveCents', limit: 500, attempted: 1000, requestedAt: HELD_AT.toISOString(), expiresAt: new Date(HELD_AT.getTime() + 86_400_000).toISOString(), ownerAgentId: OWNER };
const awaiting = { status: 'awaiting_approval' as const, hold: 'none' as const, holdAttempt: 0, approval: APPROVAL };
const approved = { ...awaiting, hold: 'requested' as const, holdAttempt: 1, approval: { ...APPROVAL, decision: 'approved' as const, decidedAt: NOW.toISOString(), decidedBy: OWNER } };
const negotiatedApproval = { ...negotiation, agreedPriceCents: 900, platformFeeCents: platformFee(900), approval: { ...APPROVAL, attempted: 900 } };

/** Every state a transaction is left in by a committed step: its status and hold, and the variants that decide differently. */
const STATES: Record<string, Partial<Purchase>> = {
  'initiated/requested': {},
  'negotiating/none': { ...negotiation, status: 'negotiating' },
  'negotiating/requested, accept pending': { ...negotiation, status: 'negotiating', hold: 'requested', holdAttempt: 1, pendingAcceptBy: PROVIDER, pendingAcceptPriceCents: 900 },
  'negotiating/refused': { ...negotiation, status: 'negotiating', hold: 'refused', holdAttempt: 1 },
  'awaiting_approval/none': awaiting,
  'awaiting_approval/none, negotiated': { ...awaiting, ...negotiatedApproval },
  'awaiting_approval/requested': approved,
  'awaiting_approval/requested, negotiated': { ...approved, ...negotiatedApproval, hold: 'requested', holdAttempt: 1 },
  'awaiting_approval/requested, its time run out': { ...approved, approval: { ...approved.approval, expiresAt: new Date(NOW.getTime() - 1).toISOString() } },
  'awaiting_approval/refused': { ...awaiting, hold: 'refused', holdAttempt: 1 },
  'funds_held/held': { ...held, status: 'funds_held' },
  'executing/held': { ...held, status: 'executing' },
  'validation_failed/held': { ...held, status: 'validation_failed', deliveryAttempts: 1 },
  'validation_failed/held, last attempt left': { ...held, status: 'validation_failed', deliveryAttempts: 2 },
  'delivered/held': { ...delivered, status: 'delivered' },
  'delivered/held, disputed before': { ...delivered, status: 'delivered', disputeId: 'd1' },
  'delivered/settling': { ...delivered, status: 'delivered', hold: 'settling' },
  'disputed/held': { ...delivered, status: 'disputed', disputeId: 'd1', reviewEndsAt: null },
  'disputed/settling': { ...delivered, status: 'disputed', disputeId: 'd1', reviewEndsAt: null, hold: 'settling' },
  'settled/settled': { ...delivered, status: 'settled', hold: 'settled' },
  'cancelled/none': { ...negotiation, status: 'cancelled' },
  'cancelled/returning': { status: 'cancelled', hold: 'returning' },
  'cancelled/returned': { status: 'cancelled', hold: 'returned' },
  'cancelled/refused': { ...negotiation, status: 'cancelled', hold: 'refused', holdAttempt: 1 },
  'expired/returning': { ...held, status: 'expired', hold: 'returning' },
  'expired/returned': { ...held, status: 'expired', hold: 'returned' },
  'failed/refused': { status: 'failed', hold: 'refused' },
  'failed/returning': { ...delivered, status: 'failed', hold: 'returning' },
  'failed/returned': { ...delivered, status: 'failed', hold: 'returned' },
};

const consumerOffer = { fromAgentId: CONSUMER, round: 1, messageType: 'initial_offer' as const, priceCents: 800 };
/** D10.3: the consumer's approver — rules that approve everything, or that ask for prices above 500 cents. */
const APPROVER: Approver = { rules: {}, ownerAgentId: OWNER, ttlSeconds: 86_400 };
const STRICT_APPROVER: Approver = { ...APPROVER, rules: { requireHumanApprovalAboveCents: 500 } };
const negotiate = (body: Extract<PurchaseCommand, { kind: 'negotiate' }>['body'], approver: Approver | null = null): PurchaseCommand =>
  ({ kind: 'negotiate', by: PROVIDER, body, last: consumerOffer, expiresInSeconds: 300, maxTransactionCents: 10_000_000, approver });

/** Requests are refused where they do not apply; the wallet's answers and timers change nothing there. */
type Kind = 'request' | 'answer' | 'dispute resolution';
const COMMANDS: Record<string, { kind: Kind; command: PurchaseCommand }> = {
  'hold placed': { kind: 'answer', command: { kind: 'holdPlaced', attempt: 1, at: HELD_AT } },
  'hold placed, stale attempt': { kind: 'answer', command: { kind: 'holdPlaced', attempt: 0, at: HELD_AT } },
  'hold refused': { kind: 'answer', command: { kind: 'holdRefused', attempt: 1, reason: 'insufficient_funds' } },
  'hold returned': { kind: 'answer', command: { kind: 'holdReturned' } },
  'hold settled': { kind: 'answer', command: { kind: 'holdSettled', at: NOW } },
  start: { kind: 'request', command: { kind: 'start' } },
  'deliver valid output': { kind: 'request', command: { kind: 'deliver', valid: true, output: { ok: true }, reviewWindowMs: 60_000 } },
  'deliver invalid output': { kind: 'request', command: { kind: 'deliver', valid: false, output: { ok: false }, reviewWindowMs: 60_000 } },
  verify: { kind: 'request', command: { kind: 'verify', qualityScore: 90, notes: null } },
  cancel: { kind: 'request', command: { kind: 'cancel', by: 'consumer' } },
  'counter-offer': { kind: 'request', command: negotiate({ type: 'counter_offer', terms: { priceCents: 900 } }) },
  accept: { kind: 'request', command: negotiate({ type: 'accept', terms: {} }, APPROVER) },
  'accept at a price needing approval': { kind: 'request', command: negotiate({ type: 'accept', terms: {} }, STRICT_APPROVER) },
  approve: { kind: 'request', command: { kind: 'approve', by: OWNER } },
  deny: { kind: 'request', command: { kind: 'deny', by: OWNER, reason: 'too dear' } },
  'approval expired': { kind: 'answer', command: { kind: 'approvalExpired' } },
  'offer expired': { kind: 'answer', command: { kind: 'offerExpired', round: 1, latestRound: 1 } },
  'offer expired, a newer offer since': { kind: 'answer', command: { kind: 'offerExpired', round: 1, latestRound: 2 } },
  'transaction expired': { kind: 'answer', command: { kind: 'expire' } },
  'review window ended': { kind: 'answer', command: { kind: 'reviewWindowEnded' } },
  'open dispute': { kind: 'request', command: { kind: 'openDispute', disputeId: 'd2' } },
  'dispute: consumer wins': { kind: 'dispute resolution', command: { kind: 'resolveDispute', outcome: 'consumer_wins', refundCents: 1000 } },
  'dispute: provider wins': { kind: 'dispute resolution', command: { kind: 'resolveDispute', outcome: 'provider_wins', refundCents: 0 } },
  'dispute: partial refund': { kind: 'dispute resolution', command: { kind: 'resolveDispute', outcome: 'partial_refund', refundCents: 300 } },
  'dispute: provider redoes': { kind: 'dispute resolution', command: { kind: 'resolveDispute', outcome: 'provider_redo', refundCents: 0 } },
};

/**
 * The purchase's specification (D9.7, D9.14, D11, D12.8): for each command, the states it changes and
 * to what (`status/hold`), or the code it refuses with where that is not INVALID_STATE. Any pair not
 * listed: a request is refused with 409 INVALID_STATE, an answer or timer changes nothing, a dispute
 * resolution cannot happen (a dispute is resolved once, its transaction `disputed` with the price held).
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
    'cancelled/returning': 'cancelled/returned', 'expired/returning': 'expired/returned', 'failed/returning': 'failed/returned',
  },
  'hold returned': { 'cancelled/returning': 'cancelled/returned', 'expired/returning': 'expired/returned', 'failed/returning': 'failed/returned' },
  'hold settled': { 'delivered/settling': 'settled/settled', 'disputed/settling': 'settled/settled' },
  start: { 'funds_held/held': 'executing/held' },
  'deliver valid output': {
    'funds_held/held': 'delivered/held', 'executing/held': 'delivered/held', 'validation_failed/held': 'delivered/held', 'validation_failed/held, last attempt left': 'delivered/held',
  },
  'deliver invalid output': {
    'funds_held/held': 'validation_failed/held', 'executing/held': 'validation_failed/held', 'validation_failed/held': 'validation_failed/held',
    'validation_failed/held, last attempt left': 'failed/returning',
  },
  verify: { 'delivered/held': 'delivered/settling', 'delivered/held, disputed before': 'delivered/settling' },
  cancel: {
    'initiated/requested': 'cancelled/returning', 'negotiating/none': 'cancelled/none', 'negotiating/requested, accept pending': 'cancelled/returning',
    'negotiating/refused': 'cancelled/refused', 'funds_held/held': 'cancelled/returning',
    'awaiting_approval/none': 'cancelled/none', 'awaiting_approval/none, negotiated': 'cancelled/none', 'awaiting_approval/requested': 'cancelled/returning',
    'awaiting_approval/requested, negotiated': 'cancelled/returning', 'awaiting_approval/requested, its time run out': 'cancelled/returning', 'awaiting_approval/refused': 'cancelled/refused',
  },
  'counter-offer': { 'negotiating/none': 'negotiating/none', 'negotiating/refused': 'negotiating/refused' },
  accept: { 'negotiating/none': 'negotiating/requested', 'negotiating/refused': 'negotiating/requested' },
  'accept at a price needing approval': { 'negotiating/none': 'awaiting_approval/none', 'negotiating/refused': 'awaiting_approval/refused' },
  approve: {
    'awaiting_approval/none': 'awaiting_approval/requested', 'awaiting_approval/none, negotiated': 'awaiting_approval/requested', 'awaiting_approval/refused': 'awaiting_approval/requested',
  },
  deny: {
    'awaiting_approval/none': 'cancelled/none', 'awaiting_approval/none, negotiated': 'cancelled/none', 'awaiting_approval/requested': 'cancelled/returning',
    'awaiting_approval/requested, negotiated': 'cancelled/returning', 'awaiting_approval/requested, its time run out': 'cancelled/returning', 'awaiting_approval/refused': 'cancelled/refused',
  },
  'approval expired': { 'awaiting_approval/none': 'cancelled/none', 'awaiting_approval/none, negotiated': 'cancelled/none', 'awaiting_approval/refused': 'cancelled/refused' },
  'offer expired': { 'negotiating/none': 'cancelled/none', 'negotiating/refused': 'cancelled/refused' },
  'offer expired, a newer offer since': {},
  'transaction expired': {
    'funds_held/held': 'expired/returning', 'executing/held': 'expired/returning', 'validation_failed/held': 'expired/returning', 'validation_failed/held, last attempt left': 'expired/returning',
  },
  'review window ended': { 'delivered/held': 'delivered/settling', 'delivered/held, disputed before': 'delivered/settling' },
  'open dispute': { 'delivered/held': 'disputed/held' },
  'dispute: consumer wins': { 'disputed/held': 'failed/returning' },
  'dispute: provider wins': { 'disputed/held': 'disputed/settling' },
  'dispute: partial refund': { 'disputed/held': 'disputed/settling' },
  'dispute: provider redoes': { 'disputed/held': 'executing/held' },
};

const stateOf = (name: string): Purchase => ({ ...base, ...STATES[name] });
const key = (t: Pick<Purchase, 'status' | 'hold'>) => `${t.status}/${t.hold}`;
const effectsOf = <K extends PurchaseEffect['kind']>(d: PurchaseDecision, kind: K) =>
  (d.kind === 'changed' ? d.effects.filter((e) => e.kind === kind) : []) as Extract<PurchaseEffect, { kind: K }>[];
const changed = (d: PurchaseDecision) => {
  if (d.kind !== 'changed') throw new Error(`expected a change, got ${d.kind}`);
  return d;
};
const after = (t: Purchase, d: PurchaseDecision): Purchase => ({ ...t, ...changed(d).changes } as Purchase);
const reachable = new Set(Object.keys(STATES).map((n) => key(stateOf(n))));

describe('the purchase decision: every state × every command (D9.7, D9.14, D10.3, D11, D12.8)', () => {
  const cases = Object.keys(COMMANDS).flatMap((c) => Object.keys(STATES).map((s) => [c, s] as const));

  it.each(cases)('%s on %s', (commandName, stateName) => {
    const { kind, command } = COMMANDS[commandName]!;
    const t = stateOf(stateName);
    const expected = EXPECTED[commandName]![stateName];
    if (expected === undefined && kind === 'dispute resolution') {
      expect(() => decidePurchase(t, command, NOW)).toThrow(/resolved in status/);
      return;
    }
    const d = decidePurchase(t, command, NOW);
    if (expected === undefined || expected.startsWith('refused')) {
      if (kind === 'request') {
        expect(d.kind).toBe('refused');
        const error = (d as Extract<PurchaseDecision, { kind: 'refused' }>).error;
        expect(isAppError(error) && error.code).toBe(expected?.slice('refused '.length) ?? 'INVALID_STATE');
      } else {
        expect(d).toEqual({ kind: 'unchanged' });
      }
      return;
    }
    const next = after(t, d);
    expect(key(next)).toBe(expected);
    // Every state a decision leaves is one of the states listed above.
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
    if (TERMINAL_STATUSES.includes(next.status) && !TERMINAL_STATUSES.includes(t.status)) {
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

  it('never leaves a terminal transaction with money held or asked for', () => {
    for (const name of Object.keys(STATES)) {
      const t = stateOf(name);
      if (TERMINAL_STATUSES.includes(t.status)) expect(['held', 'requested', 'settling'], name).not.toContain(t.hold);
    }
  });
});

describe('what the purchase decides, in detail', () => {
  it('opens a purchase at the list price by asking for the hold, announced as initiated', () => {
    const opened = openPurchase(openingOf(base, null), HELD_AT);
    expect(opened.state).toEqual(base);
    expect(opened.state.status).toBe('initiated');
    expect(opened.effects).toEqual([
      { kind: 'announce', event: expect.objectContaining({ status: 'initiated', previousStatus: null, agreedPriceCents: 1000, platformFeeCents: 50 }) },
      { kind: 'holdFunds', amountCents: 1000, attempt: 1 },
    ]);
  });

  it('opens a negotiation with the consumer\'s offer as round 1 and says why it negotiates (D9.4)', () => {
    const expiresAt = new Date(NOW.getTime() + 300_000);
    const opened = openPurchase(openingOf({ ...base, maxPriceCents: 700 }, { priceCents: 700, expiresAt }), HELD_AT);
    expect(opened.state).toMatchObject({ status: 'negotiating', statusReason: 'max_price_differs_from_list_price', hold: 'none' });
    expect(opened.effects.map((e) => e.kind)).toEqual(['announce', 'recordMessage', 'schedule', 'announce']);
    expect(opened.effects[1]).toMatchObject({ messageType: 'initial_offer', round: 1, terms: { priceCents: 700 }, fromAgentId: CONSUMER });
    expect(opened.effects[2]).toEqual({ kind: 'schedule', timer: 'offerExpiry', at: expiresAt, payload: { round: 1 } });
  });

  it('records a pending accept once its hold is placed: matched, then funds_held, at the agreed price and its fee (D9.7, D11.2)', () => {
    const t = stateOf('negotiating/requested, accept pending');
    const d = changed(decidePurchase(t, COMMANDS['hold placed']!.command, NOW));
    expect(effectsOf(d, 'announce').map((a) => [a.event.previousStatus, a.event.status, a.event.agreedPriceCents])).toEqual([['negotiating', 'matched', 900], ['matched', 'funds_held', 900]]);
    expect(d.changes).toMatchObject({ agreedPriceCents: 900, platformFeeCents: platformFee(900), pendingAcceptBy: null, fundsHeldAt: HELD_AT, expiresAt: new Date(HELD_AT.getTime() + 3_600_000) });
    expect(effectsOf(d, 'recordAccept')).toEqual([{ kind: 'recordAccept', fromAgentId: PROVIDER, message: null }]);
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'transactionExpiry', at: new Date(HELD_AT.getTime() + 3_600_000) }]);
  });

  it('leaves the negotiation as it was when the accept\'s hold is refused: its latest offer expires when it would have (D9.7)', () => {
    const d = changed(decidePurchase(stateOf('negotiating/requested, accept pending'), COMMANDS['hold refused']!.command, NOW));
    expect(d.changes).toMatchObject({ hold: 'refused', pendingAcceptBy: null, pendingAcceptPriceCents: null });
    expect(d.effects).toEqual([{ kind: 'restoreOfferExpiry' }]);
  });

  it('shows the agreed price of an accept cancelled while its hold was on its way, as the ledger holds and returns it', () => {
    const d = changed(decidePurchase(stateOf('negotiating/requested, accept pending'), COMMANDS.cancel!.command, NOW));
    expect(d.changes).toMatchObject({ status: 'cancelled', hold: 'returning', agreedPriceCents: 900, platformFeeCents: platformFee(900), statusReason: 'cancelled_by_consumer' });
  });

  it('refuses a second verify while the settlement is on its way (D9.14), naming it in the details', () => {
    const d = decidePurchase(stateOf('delivered/settling'), COMMANDS.verify!.command, NOW);
    expect(d.kind).toBe('refused');
    expect(d.kind === 'refused' && isAppError(d.error) && d.error.entries[0]!.details).toEqual({ status: 'delivered', settlement: 'in_progress' });
  });

  it('refuses a dispute of a transaction disputed once already, or whose settlement is under way (D12.1, D9.14)', () => {
    for (const name of ['delivered/held, disputed before', 'delivered/settling']) {
      const d = decidePurchase(stateOf(name), COMMANDS['open dispute']!.command, NOW);
      expect(d.kind === 'refused' && isAppError(d.error) && d.error.code).toBe('INVALID_STATE');
    }
  });

  it('keeps the review window\'s reason through to settled, and settles the agreed price minus its fee', () => {
    const t = stateOf('delivered/held');
    const asked = changed(decidePurchase(t, COMMANDS['review window ended']!.command, NOW));
    expect(asked.effects).toEqual([{ kind: 'settle', amountCents: 1000, feeCents: 50, refundCents: 0 }]);
    const settled = changed(decidePurchase(after(t, asked), COMMANDS['hold settled']!.command, NOW));
    expect(settled.changes).toMatchObject({ status: 'settled', statusReason: 'review_window_ended', settledAt: NOW });
  });

  it('settles a partial refund with the fee on what the provider keeps (D12.8)', () => {
    const d = changed(decidePurchase(stateOf('disputed/held'), COMMANDS['dispute: partial refund']!.command, NOW));
    expect(effectsOf(d, 'settle')).toEqual([{ kind: 'settle', amountCents: 1000, feeCents: platformFee(700), refundCents: 300 }]);
    expect(d.changes).toMatchObject({ platformFeeCents: platformFee(700), statusReason: 'dispute_partial_refund' });
  });

  it('sends a redone transaction back to executing with a new expiry and no output (D12.8)', () => {
    const d = changed(decidePurchase(stateOf('disputed/held'), COMMANDS['dispute: provider redoes']!.command, NOW));
    const expiresAt = new Date(NOW.getTime() + 3_600_000);
    expect(d.changes).toMatchObject({ status: 'executing', expiresAt, output: null, deliveredAt: null, reviewEndsAt: null, deliveryAttempts: 0 });
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'transactionExpiry', at: expiresAt }]);
  });

  it('schedules the review window on a valid delivery, and counts every attempt (D9.7)', () => {
    const d = changed(decidePurchase(stateOf('executing/held'), COMMANDS['deliver valid output']!.command, NOW));
    expect(d.changes).toMatchObject({ output: { ok: true }, deliveredAt: NOW, deliveryAttempts: 1, reviewEndsAt: new Date(NOW.getTime() + 60_000) });
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'reviewWindow', at: new Date(NOW.getTime() + 60_000) }]);
    const invalid = changed(decidePurchase(stateOf('executing/held'), COMMANDS['deliver invalid output']!.command, NOW));
    expect(invalid.changes).toMatchObject({ deliveryAttempts: 1, statusReason: 'output_validation_failed' });
    expect(invalid.changes).not.toHaveProperty('output');
  });

  it.each<[string, string, Partial<Purchase>, string | undefined, boolean]>([
    ['settled on time', 'hold settled', {}, 'settled', false],
    ['settled, delivered after the SLA\'s latency', 'hold settled', { deliveredAt: new Date(HELD_AT.getTime() + 61_000) }, 'settled', true],
    ['lost a dispute', 'dispute: consumer wins', {}, 'dispute_lost', false],
    ['expired', 'transaction expired', {}, 'expired', false],
    ['failed its last delivery attempt', 'deliver invalid output', {}, 'failed', false],
  ])('counts in the provider\'s trust a transaction that %s (D15.2)', (_, commandName, over, outcome, late) => {
    const from = { 'hold settled': 'delivered/settling', 'dispute: consumer wins': 'disputed/held', 'transaction expired': 'executing/held', 'deliver invalid output': 'validation_failed/held, last attempt left' }[commandName]!;
    const d = decidePurchase({ ...stateOf(from), ...over }, COMMANDS[commandName]!.command, NOW);
    expect(effectsOf(d, 'trustOutcome')).toEqual([{ kind: 'trustOutcome', outcome, qualityScore: null, late }]);
  });

  it.each(['cancel', 'offer expired', 'hold refused'])('leaves the provider\'s trust alone when the purchase ends by %s, before any hold', (commandName) => {
    const from = commandName === 'hold refused' ? 'initiated/requested' : 'negotiating/none';
    expect(effectsOf(decidePurchase(stateOf(from), COMMANDS[commandName]!.command, NOW), 'trustOutcome')).toEqual([]);
  });

  it('takes a counter-offer\'s turn and round rules from the negotiation (D11)', () => {
    const t = stateOf('negotiating/none');
    const own = decidePurchase(t, { ...(COMMANDS['counter-offer']!.command as Extract<PurchaseCommand, { kind: 'negotiate' }>), by: CONSUMER }, NOW);
    expect(own.kind === 'refused' && isAppError(own.error) && own.error.code).toBe('NEGOTIATION_OUT_OF_TURN');
    const d = changed(decidePurchase(t, COMMANDS['counter-offer']!.command, NOW));
    expect(effectsOf(d, 'recordMessage')).toMatchObject([{ messageType: 'counter_offer', round: 2, terms: { priceCents: 900 }, fromAgentId: PROVIDER }]);
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'offerExpiry', at: new Date(NOW.getTime() + 300_000), payload: { round: 2 } }]);
    const tenth = changed(decidePurchase(t, negotiateAtRound(9), NOW));
    expect(tenth.changes).toMatchObject({ status: 'cancelled', statusReason: 'negotiation_rounds_exhausted' });
  });

  it('numbers each accept\'s hold anew, so a refused one may be asked again', () => {
    const d = changed(decidePurchase(stateOf('negotiating/refused'), COMMANDS.accept!.command, NOW));
    expect(d.changes).toMatchObject({ hold: 'requested', holdAttempt: 2, pendingAcceptBy: PROVIDER, pendingAcceptPriceCents: 800 });
    expect(effectsOf(d, 'holdFunds')).toEqual([{ kind: 'holdFunds', amountCents: 800, attempt: 2 }]);
  });
});

describe('approvals (D10.3)', () => {
  it('opens a purchase whose price needs an approval waiting for the owner, told to the owner, nothing held (D10.3)', () => {
    const opened = openPurchase(openingOf(base, null, STRICT_APPROVER), HELD_AT);
    expect(opened.state).toMatchObject({ ...awaiting, agreedPriceCents: 1000, platformFeeCents: 50 });
    expect(opened.effects).toEqual([
      { kind: 'announce', event: expect.objectContaining({ status: 'initiated', previousStatus: null }) },
      { kind: 'announce', event: expect.objectContaining({ status: 'awaiting_approval', previousStatus: 'initiated', ownerAgentId: OWNER, agreedPriceCents: 1000 }) },
      { kind: 'schedule', timer: 'approvalExpiry', at: new Date(APPROVAL.expiresAt) },
    ]);
    // Only the event of the wait names the owner.
    expect(opened.effects[0]).not.toHaveProperty('event.ownerAgentId');
  });

  it('never asks an approval of an opening offer: its accept may need one (D10.3)', () => {
    const opened = openPurchase(openingOf({ ...base, maxPriceCents: 700 }, { priceCents: 700, expiresAt: NOW }, STRICT_APPROVER), HELD_AT);
    expect(opened.state).toMatchObject({ status: 'negotiating', approval: null });
  });

  it('takes an accept needing an approval as agreed: recorded, its offer\'s expiry replaced by the approval\'s (D10.3)', () => {
    const d = changed(decidePurchase(stateOf('negotiating/none'), COMMANDS['accept at a price needing approval']!.command, NOW));
    expect(d.changes).toMatchObject({ status: 'awaiting_approval', agreedPriceCents: 800, platformFeeCents: platformFee(800), approval: { rule: 'requireHumanApprovalAboveCents', limit: 500, attempted: 800, ownerAgentId: OWNER } });
    expect(effectsOf(d, 'recordMessage')).toMatchObject([{ messageType: 'accept', round: 2, fromAgentId: PROVIDER }]);
    expect(effectsOf(d, 'cancelTimers')).toEqual([{ kind: 'cancelTimers', timers: ['offerExpiry'] }]);
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'approvalExpiry', at: new Date(NOW.getTime() + 86_400_000) }]);
    expect(effectsOf(d, 'holdFunds')).toEqual([]);
  });

  it('asks for the hold once approved, recording who approved; after a negotiation it passes through matched (D10.3)', () => {
    const d = changed(decidePurchase(stateOf('awaiting_approval/none, negotiated'), COMMANDS.approve!.command, NOW));
    expect(d.changes.approval).toMatchObject({ decision: 'approved', decidedBy: OWNER, decidedAt: NOW.toISOString() });
    expect(effectsOf(d, 'holdFunds')).toEqual([{ kind: 'holdFunds', amountCents: 900, attempt: 1 }]);
    const placed = changed(decidePurchase(after(stateOf('awaiting_approval/none, negotiated'), d), COMMANDS['hold placed']!.command, NOW));
    expect(effectsOf(placed, 'announce').map((a) => [a.event.previousStatus, a.event.status])).toEqual([['awaiting_approval', 'matched'], ['matched', 'funds_held']]);
    expect(effectsOf(placed, 'cancelTimers')).toEqual([{ kind: 'cancelTimers', timers: ['approvalExpiry'] }]);
    const direct = changed(decidePurchase(stateOf('awaiting_approval/requested'), COMMANDS['hold placed']!.command, NOW));
    expect(effectsOf(direct, 'announce').map((a) => [a.event.previousStatus, a.event.status])).toEqual([['awaiting_approval', 'funds_held']]);
  });

  it('leaves the purchase waiting and undecided when the approval\'s hold is refused (402, D10.3)', () => {
    const d = changed(decidePurchase(stateOf('awaiting_approval/requested'), COMMANDS['hold refused']!.command, NOW));
    expect(d.changes.approval).toEqual(APPROVAL);
    expect(d.changes).not.toHaveProperty('status');
  });

  it('records a denial with its reason, and an expiry, as the cancellation\'s reason (D10.3)', () => {
    const denied = changed(decidePurchase(stateOf('awaiting_approval/none'), COMMANDS.deny!.command, NOW));
    expect(denied.changes).toMatchObject({ statusReason: 'approval_denied', approval: { ...APPROVAL, decision: 'denied', decidedBy: OWNER, reason: 'too dear' } });
    const expired = changed(decidePurchase(stateOf('awaiting_approval/none'), COMMANDS['approval expired']!.command, NOW));
    expect(expired.changes).toMatchObject({ status: 'cancelled', statusReason: 'approval_expired' });
    expect(decidePurchase(stateOf('awaiting_approval/requested'), COMMANDS['approval expired']!.command, NOW)).toEqual({ kind: 'unchanged' });
  });

  it('refuses a second approval while the first one\'s hold is on its way (D10.3)', () => {
    const d = decidePurchase(stateOf('awaiting_approval/requested'), COMMANDS.approve!.command, NOW);
    expect(d.kind === 'refused' && isAppError(d.error) && d.error.entries[0]!.details).toEqual({ status: 'awaiting_approval', approval: 'in_progress' });
  });
});

/** What `openPurchase` is given to make the purchase `t`. */
function openingOf(t: Purchase, offer: Opening['offer'], approver: Approver = APPROVER): Opening {
  const { id, consumerAgentId, providerAgentId, consumerAccountId, providerAccountId, serviceId, serviceRevision, serviceVersion, category, pricing, sla, units, listPriceCents, maxPriceCents } = t;
  return { id, consumerAgentId, providerAgentId, consumerAccountId, providerAccountId, serviceId, serviceRevision, serviceVersion, category, pricing, sla, units, listPriceCents, maxPriceCents, offer, approver };
}

function negotiateAtRound(lastRound: number): PurchaseCommand {
  return { ...(COMMANDS['counter-offer']!.command as Extract<PurchaseCommand, { kind: 'negotiate' }>), last: { ...consumerOffer, round: lastRound, messageType: 'counter_offer' } };
}

/** The statuses the table covers: every status but `matched`, which no committed step leaves. */
it('covers every status a committed step leaves', () => {
  const covered = new Set(Object.keys(STATES).map((n) => stateOf(n).status));
  const statuses: TransactionStatus[] = ['initiated', 'negotiating', 'awaiting_approval', 'funds_held', 'executing', 'validation_failed', 'delivered', 'disputed', 'settled', 'cancelled', 'expired', 'failed'];
  expect([...covered].sort()).toEqual([...statuses].sort());
});
