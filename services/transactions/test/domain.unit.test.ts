import { describe, expect, it } from 'vitest';
import { TRANSACTION_STATUSES, type DisputeStatus, type NegotiateBody, type Pricing, type TransactionStatus } from '@aex/contracts';
import { listPrice, platformFee } from '../src/domain/pricing.js';
import { ACTION_SOURCES, actionRefusal, canMove, isTerminal, MOVES, type Action } from '../src/domain/state-machine.js';
import { approvalNeeded, delegationRefusal } from '../src/domain/delegation.js';
import { NEGOTIATION_MAX_MESSAGES as MAX_ROUNDS, PLATFORM_FEE_TIERS } from '@aex/contracts';
import { decideNegotiationMessage, type LastMessage } from '../src/domain/negotiation.js';
import { decideDisputeAction, disputeEntry, refundOf, ruleOnDispute, type DisputeAction, type DisputeRuling, type DisputeState } from '../src/domain/disputes.js';
import type { DisputeRow } from '../src/db/schema.js';

describe('platform fee (D9.11): marginal tiers, summed exactly, rounded half-up once', () => {
  it.each([
    [1, 0], // 0.05 → 0
    [9, 0], // 0.45 → 0
    [10, 1], // 0.5 → 1 (half-up)
    [29, 1], // 1.45 → 1
    [30, 2], // 1.5 → 2
    [1000, 50],
    [1010, 51], // 50.5 → 51
    [999_999, 50_000], // 49,999.95 → 50,000
    [1_000_000, 50_000],
    [1_000_010, 50_000], // 50,000 + 0.3 → 50,000
    [1_000_017, 50_001], // 50,000 + 0.51 → 50,001
    [10_000_000, 320_000], // 50,000 + 270,000
    [10_000_100, 320_002], // + 1.5 → 1.5 → half-up 2
    [20_000_000, 470_000], // + 150,000
  ])('a price of %i cents pays a fee of %i', (price, fee) => {
    expect(platformFee(price)).toBe(fee);
  });

  it('computes with the tiers /v1/protocol publishes: each boundary at its published rate', () => {
    let from = 0;
    let fee = 0;
    for (const tier of PLATFORM_FEE_TIERS) {
      if (!('upToCents' in tier)) break;
      fee += ((tier.upToCents - from) * tier.feePercent) / 100;
      from = tier.upToCents;
      expect(platformFee(tier.upToCents)).toBe(Math.round(fee));
    }
    const above = PLATFORM_FEE_TIERS.at(-1)!;
    expect(platformFee(from + 200_000) - platformFee(from)).toBe((200_000 * above.feePercent) / 100);
  });

  it('never takes more than 5 % nor less than the lowest tier would', () => {
    for (let p = 1; p < 5000; p += 7) {
      const f = platformFee(p);
      expect(f).toBeLessThanOrEqual(Math.ceil(p * 0.05));
      expect(f).toBeGreaterThanOrEqual(Math.floor(p * 0.05));
    }
  });
});

describe('list price (D9.3)', () => {
  const fixed: Pricing = { model: 'fixed', basePriceCents: 250 };
  const perUnit: Pricing = { model: 'per_unit', basePriceCents: 30 };
  const tiered: Pricing = { model: 'tiered', basePriceCents: 100, tiers: [{ upToUnits: 10, unitPriceCents: 100 }, { upToUnits: 100, unitPriceCents: 50 }, { upToUnits: null, unitPriceCents: 10 }] };
  it.each<[string, Pricing, number, number | string]>([
    ['fixed, one unit', fixed, 1, 250],
    ['fixed, more units', fixed, 2, 'one unit at a time'],
    ['negotiable, one unit', { model: 'negotiable', basePriceCents: 400 }, 1, 400],
    ['per unit', perUnit, 7, 210],
    ['tiered inside the first tier', tiered, 4, 400],
    ['tiered at a boundary', tiered, 10, 1000],
    ['tiered across two tiers', tiered, 11, 1050],
    ['tiered across all tiers', tiered, 120, 5700],
    ['tiered without tiers: base per unit', { model: 'tiered', basePriceCents: 20 }, 5, 100],
    ['above the max transaction amount', perUnit, 40_000, 'exceeds the maximum'],
    ['zero units', perUnit, 0, 'positive integer'],
  ])('%s', (_name, pricing, units, expected) => {
    const r = listPrice(pricing, units, 1_000_000);
    if (typeof expected === 'number') expect(r).toEqual({ ok: true, cents: expected });
    else expect(r.ok ? 'ok' : r.message).toContain(expected);
  });

  it.each<[string, number, number | string]>([
    ['at the configured maximum', 10, 300],
    ['above the configured maximum (MAX_TRANSACTION_CENTS)', 11, 'maximum transaction amount of 300 cents'],
  ])('per unit %s', (_name, units, expected) => {
    const r = listPrice(perUnit, units, 300);
    if (typeof expected === 'number') expect(r).toEqual({ ok: true, cents: expected });
    else expect(r.ok ? 'ok' : r.message).toContain(expected);
  });
});

describe('state machine (D9.7, D10.3)', () => {
  // The moves of D9.7, D10.3 and D11.3–4, written out once more by hand: the table in the code must equal it.
  const expected: [TransactionStatus, TransactionStatus][] = [
    ['initiated', 'funds_held'], ['initiated', 'failed'], ['initiated', 'cancelled'], ['initiated', 'negotiating'], ['initiated', 'awaiting_approval'],
    ['negotiating', 'matched'], ['negotiating', 'cancelled'], ['negotiating', 'awaiting_approval'],
    ['awaiting_approval', 'funds_held'], ['awaiting_approval', 'matched'], ['awaiting_approval', 'cancelled'],
    ['matched', 'funds_held'], ['matched', 'cancelled'],
    ['funds_held', 'executing'], ['funds_held', 'delivered'], ['funds_held', 'validation_failed'], ['funds_held', 'failed'], ['funds_held', 'expired'], ['funds_held', 'cancelled'],
    ['executing', 'delivered'], ['executing', 'validation_failed'], ['executing', 'failed'], ['executing', 'expired'],
    ['validation_failed', 'delivered'], ['validation_failed', 'validation_failed'], ['validation_failed', 'failed'], ['validation_failed', 'expired'],
    ['delivered', 'settled'], ['delivered', 'disputed'],
    // D12.8: consumer_wins, provider_wins / partial_refund, provider_redo.
    ['disputed', 'failed'], ['disputed', 'settled'], ['disputed', 'executing'],
  ];
  const allowed = new Set(expected.map(([a, b]) => `${a}>${b}`));

  it('allows exactly the decided moves, and refuses every other of the 169 pairs', () => {
    for (const from of TRANSACTION_STATUSES) {
      for (const to of TRANSACTION_STATUSES) expect(canMove(from, to), `${from} → ${to}`).toBe(allowed.has(`${from}>${to}`));
    }
    expect(Object.values(MOVES).flat()).toHaveLength(expected.length);
  });

  it('has nothing leaving a terminal status', () => {
    for (const s of TRANSACTION_STATUSES.filter(isTerminal)) expect(MOVES[s]).toEqual([]);
    expect(TRANSACTION_STATUSES.filter(isTerminal)).toEqual(['settled', 'cancelled', 'expired', 'failed']);
  });

  const sources: Record<Action, TransactionStatus[]> = {
    negotiate: ['negotiating'],
    start: ['funds_held'],
    deliver: ['funds_held', 'executing', 'validation_failed'],
    verify: ['delivered'],
    cancel: ['initiated', 'negotiating', 'awaiting_approval', 'matched', 'funds_held'],
    expire: ['funds_held', 'executing', 'validation_failed'],
    dispute: ['delivered'],
    approve: ['awaiting_approval'],
    deny: ['awaiting_approval'],
  };
  for (const action of Object.keys(sources) as Action[]) {
    it(`${action}: allowed from ${sources[action].join(', ')}; 409 INVALID_STATE with the status from the rest`, () => {
      expect([...ACTION_SOURCES[action]]).toEqual(sources[action]);
      for (const status of TRANSACTION_STATUSES) {
        if (sources[action].includes(status)) expect(actionRefusal(action, status)).toBeUndefined();
        else expect(actionRefusal(action, status)).toMatchObject({ status: 409, entries: [expect.objectContaining({ code: 'INVALID_STATE', details: expect.objectContaining({ status }) })] });
      }
    });
  }
});

describe('delegation (D10.2, D10.3): the decided order and details — refused, or awaiting an approval', () => {
  const attempt = { category: 'crypto', priceCents: 1000, spentLast24hCents: 0 };
  it.each<[string, Parameters<typeof delegationRefusal>[0], Partial<typeof attempt>, string | null, unknown]>([
    ['no rules', {}, {}, null, null],
    ['category outside the allow-list', { allowedCategories: ['text'] }, {}, 'DELEGATION_EXCEEDED', { rule: 'allowedCategories', limit: ['text'], attempted: 'crypto' }],
    ['category in the block-list', { blockedCategories: ['crypto'] }, {}, 'DELEGATION_EXCEEDED', { rule: 'blockedCategories', limit: ['crypto'], attempted: 'crypto' }],
    ['category before the amount', { allowedCategories: ['text'], maxTransactionCents: 1 }, {}, 'DELEGATION_EXCEEDED', { rule: 'allowedCategories', limit: ['text'], attempted: 'crypto' }],
    ['per transaction, at the limit', { maxTransactionCents: 1000 }, {}, null, null],
    ['per transaction, over it', { maxTransactionCents: 999 }, {}, 'DELEGATION_EXCEEDED', { rule: 'maxTransactionCents', limit: 999, attempted: 1000 }],
    ['amount before the daily sum', { maxTransactionCents: 999, maxDailySpendCents: 10 }, {}, 'DELEGATION_EXCEEDED', { rule: 'maxTransactionCents', limit: 999, attempted: 1000 }],
    ['daily, counting what was spent', { maxDailySpendCents: 1500 }, { spentLast24hCents: 600 }, 'DELEGATION_EXCEEDED', { rule: 'maxDailySpendCents', limit: 1500, attempted: 1600 }],
    ['daily, exactly reached', { maxDailySpendCents: 1600 }, { spentLast24hCents: 600 }, null, null],
    ['exceeded before approval', { maxTransactionCents: 10, requireHumanApprovalAboveCents: 5 }, {}, 'DELEGATION_EXCEEDED', { rule: 'maxTransactionCents', limit: 10, attempted: 1000 }],
    ['approval above the threshold', { requireHumanApprovalAboveCents: 999 }, {}, 'awaiting approval', { rule: 'requireHumanApprovalAboveCents', limit: 999, attempted: 1000 }],
    ['approval at the threshold is not needed', { requireHumanApprovalAboveCents: 1000 }, {}, null, null],
    ['auto-approve only below', { autoApproveBelow: 1000 }, {}, 'awaiting approval', { rule: 'autoApproveBelow', limit: 1000, attempted: 1000 }],
    ['auto-approved below', { autoApproveBelow: 1001 }, {}, null, null],
    ['the daily sum before approval', { maxDailySpendCents: 1500, autoApproveBelow: 1 }, { spentLast24hCents: 600 }, 'DELEGATION_EXCEEDED', { rule: 'maxDailySpendCents', limit: 1500, attempted: 1600 }],
  ])('%s', (_name, rules, over, code, details) => {
    const a = { ...attempt, ...over };
    // D10.2's order: every refusal first; a price they allow may then need an approval (D10.3).
    const refusal = delegationRefusal(rules, a);
    const need = refusal ? null : approvalNeeded(rules, a.priceCents);
    expect(refusal?.code ?? (need ? 'awaiting approval' : null)).toBe(code);
    expect(refusal?.details ?? need ?? null).toEqual(details);
  });
});

describe('negotiation rules (D11)', () => {
  const consumer = 'c';
  const provider = 'p';
  const pricing: Pricing = { model: 'negotiable', basePriceCents: 1000, minimumCents: 500, maximumCents: 2000 };
  const opening: LastMessage = { fromAgentId: consumer, round: 1, messageType: 'initial_offer', priceCents: 600 };
  const body = (type: NegotiateBody['type'], terms: NegotiateBody['terms'] = {}): NegotiateBody => ({ type, terms });

  it.each<[string, LastMessage, string, NegotiateBody, unknown]>([
    ['the sender of the last message is out of turn', opening, consumer, body('counter_offer', { priceCents: 700 }), { kind: 'refused', code: 'NEGOTIATION_OUT_OF_TURN' }],
    ['a second initial offer', opening, provider, body('initial_offer', { priceCents: 700 }), { kind: 'refused', code: 'INVALID_NEGOTIATION_MESSAGE', field: '/body/type' }],
    ['a counter offer without a price', opening, provider, body('counter_offer'), { kind: 'refused', code: 'INVALID_NEGOTIATION_MESSAGE', field: '/body/terms/priceCents' }],
    ['a counter offer below the minimum', opening, provider, body('counter_offer', { priceCents: 499 }), { kind: 'refused', code: 'INVALID_NEGOTIATION_MESSAGE' }],
    ['a counter offer above the maximum', opening, provider, body('counter_offer', { priceCents: 2001 }), { kind: 'refused', code: 'INVALID_NEGOTIATION_MESSAGE' }],
    ['a counter offer in bounds', opening, provider, body('counter_offer', { priceCents: 2000 }), { kind: 'message', round: 2, ends: null, agreedPriceCents: null }],
    ['an accept with terms', opening, provider, body('accept', { priceCents: 600 }), { kind: 'refused', code: 'INVALID_NEGOTIATION_MESSAGE', field: '/body/terms' }],
    ['an accept agrees to the latest price', opening, provider, body('accept'), { kind: 'message', round: 2, ends: null, agreedPriceCents: 600 }],
    ['a reject ends it', opening, provider, body('reject'), { kind: 'message', round: 2, ends: 'negotiation_rejected', agreedPriceCents: null }],
    ['a withdraw ends it', opening, provider, body('withdraw'), { kind: 'message', round: 2, ends: 'negotiation_withdrawn', agreedPriceCents: null }],
    ['the 10th message as a counter offer ends it', { fromAgentId: consumer, round: MAX_ROUNDS - 1, messageType: 'counter_offer', priceCents: 800 }, provider, body('counter_offer', { priceCents: 900 }), { kind: 'message', round: 10, ends: 'negotiation_rounds_exhausted', agreedPriceCents: null }],
    ['the 10th message as an accept agrees', { fromAgentId: consumer, round: MAX_ROUNDS - 1, messageType: 'counter_offer', priceCents: 800 }, provider, body('accept'), { kind: 'message', round: 10, ends: null, agreedPriceCents: 800 }],
  ])('%s', (_name, last, caller, b, expected) => {
    expect(decideNegotiationMessage(last, caller, b, pricing, 1_000_000)).toMatchObject(expected as object);
  });

  it('refuses a counter offer above the exchange\'s MAX_TRANSACTION_CENTS, even within the service\'s bounds', () => {
    expect(decideNegotiationMessage(opening, provider, body('counter_offer', { priceCents: 1500 }), pricing, 1_200)).toMatchObject({ kind: 'refused', code: 'INVALID_NEGOTIATION_MESSAGE', field: '/body/terms/priceCents' });
    expect(decideNegotiationMessage(opening, provider, body('counter_offer', { priceCents: 1200 }), pricing, 1_200)).toMatchObject({ kind: 'message' });
  });
});

describe('dispute lifecycle (D12)', () => {
  const state = (status: DisputeStatus, proposal: DisputeState['proposal'] = null): DisputeState => ({ status, proposal, agreedPriceCents: 1000 });
  const partial = { outcome: 'partial_refund' as const, refundCents: 300 };
  const redo = { outcome: 'provider_redo' as const, refundCents: null };
  // Every action from every status: the ruling, or the error code.
  it.each<[string, DisputeState, DisputeAction, DisputeRuling | string]>([
    ['respond consumer_wins resolves at once, a full refund', state('open'), { kind: 'respond', outcome: 'consumer_wins' }, { next: 'resolved', outcome: 'consumer_wins', refundCents: 1000 }],
    ['respond partial_refund proposes', state('open'), { kind: 'respond', outcome: 'partial_refund', refundCents: 300 }, { next: 'proposed', proposal: partial }],
    ['respond provider_redo proposes', state('open'), { kind: 'respond', outcome: 'provider_redo' }, { next: 'proposed', proposal: redo }],
    ['respond contest escalates', state('open'), { kind: 'respond', outcome: 'contest' }, { next: 'escalated' }],
    ['respond partial_refund without an amount', state('open'), { kind: 'respond', outcome: 'partial_refund' }, 'VALIDATION_ERROR'],
    ['respond partial_refund of the whole price', state('open'), { kind: 'respond', outcome: 'partial_refund', refundCents: 1000 }, 'VALIDATION_ERROR'],
    ['respond partial_refund of 999 of 1000', state('open'), { kind: 'respond', outcome: 'partial_refund', refundCents: 999 }, { next: 'proposed', proposal: { outcome: 'partial_refund', refundCents: 999 } }],
    ['respond contest with an amount', state('open'), { kind: 'respond', outcome: 'contest', refundCents: 5 }, 'VALIDATION_ERROR'],
    ['respond when proposed', state('proposed', partial), { kind: 'respond', outcome: 'contest' }, 'INVALID_STATE'],
    ['respond when escalated', state('escalated'), { kind: 'respond', outcome: 'consumer_wins' }, 'INVALID_STATE'],
    ['respond when resolved', state('resolved'), { kind: 'respond', outcome: 'consumer_wins' }, 'INVALID_STATE'],
    ['decide accept of a partial refund', state('proposed', partial), { kind: 'decide', accept: true }, { next: 'resolved', outcome: 'partial_refund', refundCents: 300 }],
    ['decide accept of a redo', state('proposed', redo), { kind: 'decide', accept: true }, { next: 'resolved', outcome: 'provider_redo', refundCents: 0 }],
    ['decide refuse escalates', state('proposed', partial), { kind: 'decide', accept: false }, { next: 'escalated' }],
    ['decide when open', state('open'), { kind: 'decide', accept: true }, 'INVALID_STATE'],
    ['decide when escalated', state('escalated'), { kind: 'decide', accept: true }, 'INVALID_STATE'],
    ['decide when resolved', state('resolved'), { kind: 'decide', accept: false }, 'INVALID_STATE'],
    ['withdraw when open: the provider wins', state('open'), { kind: 'withdraw' }, { next: 'resolved', outcome: 'provider_wins', refundCents: 0 }],
    ['withdraw when proposed', state('proposed', redo), { kind: 'withdraw' }, { next: 'resolved', outcome: 'provider_wins', refundCents: 0 }],
    ['withdraw when escalated', state('escalated'), { kind: 'withdraw' }, { next: 'resolved', outcome: 'provider_wins', refundCents: 0 }],
    ['withdraw when resolved', state('resolved'), { kind: 'withdraw' }, 'INVALID_STATE'],
    ['resolve any outcome when open', state('open'), { kind: 'resolve', outcome: 'provider_wins' }, { next: 'resolved', outcome: 'provider_wins', refundCents: 0 }],
    ['resolve a partial refund when escalated', state('escalated'), { kind: 'resolve', outcome: 'partial_refund', refundCents: 1 }, { next: 'resolved', outcome: 'partial_refund', refundCents: 1 }],
    ['resolve consumer_wins when proposed', state('proposed', partial), { kind: 'resolve', outcome: 'consumer_wins' }, { next: 'resolved', outcome: 'consumer_wins', refundCents: 1000 }],
    ['resolve a redo when escalated', state('escalated'), { kind: 'resolve', outcome: 'provider_redo' }, { next: 'resolved', outcome: 'provider_redo', refundCents: 0 }],
    ['resolve a partial refund of 0', state('escalated'), { kind: 'resolve', outcome: 'partial_refund', refundCents: 0 }, 'VALIDATION_ERROR'],
    ['resolve when resolved', state('resolved'), { kind: 'resolve', outcome: 'consumer_wins' }, 'INVALID_STATE'],
    ['the deadline with no answer: the consumer wins', state('open'), { kind: 'deadline' }, { next: 'resolved', outcome: 'consumer_wins', refundCents: 1000 }],
    ['the deadline after a proposal does nothing', state('proposed', partial), { kind: 'deadline' }, { next: null }],
    ['the deadline after a contest does nothing', state('escalated'), { kind: 'deadline' }, { next: null }],
    ['the deadline after the end does nothing', state('resolved'), { kind: 'deadline' }, { next: null }],
  ])('%s', (_name, s, action, want) => {
    if (typeof want === 'string') {
      expect(() => ruleOnDispute(s, action)).toThrow(expect.objectContaining({ entries: [expect.objectContaining({ code: want })] }));
    } else {
      expect(ruleOnDispute(s, action)).toEqual(want);
    }
  });

  it('moves all the money each way: refund + paid = the price', () => {
    for (const outcome of ['consumer_wins', 'provider_wins', 'partial_refund', 'provider_redo'] as const) {
      const r = refundOf(outcome, 1000, 250);
      expect(r).toBe({ consumer_wins: 1000, provider_wins: 0, partial_refund: 250, provider_redo: 0 }[outcome]);
    }
  });
  describe('one action as a decision: the dispute as it leaves it, and its effects', () => {
    const now = new Date('2026-11-27T12:00:00Z');
    const opened = new Date('2026-11-27T11:00:00Z');
    const dispute = (status: DisputeStatus, proposal: DisputeRow['proposal'] = null): DisputeRow => ({
      id: 'd1', transactionId: 't1', consumerAgentId: 'c', providerAgentId: 'p', reason: 'output_quality', description: 'wrong', evidence: null,
      status, proposal, outcome: null, refundCents: null, messages: [disputeEntry('consumer', 'opened', opened, { message: 'wrong' })],
      openedAt: opened, deadlineAt: new Date(opened.getTime() + 86_400_000), resolvedAt: null, resolvedBy: null, updatedAt: opened,
    });

    it('records a proposal with what the provider said, and nothing else happens', () => {
      const d = decideDisputeAction(dispute('open'), 1000, 'provider', { kind: 'respond', outcome: 'partial_refund', refundCents: 300 }, { message: 'half-ish' }, now);
      expect(d).toEqual({
        kind: 'changed', effects: [],
        changes: { ...dispute('open'), status: 'proposed', proposal: partial, updatedAt: now, messages: [
          ...dispute('open').messages,
          { from: 'provider', kind: 'responded', outcome: 'partial_refund', refundCents: 300, message: 'half-ish', evidence: null, at: now.toISOString() },
        ] },
      });
    });

    it('resolves with the deadline dropped and the transaction told the outcome; by the deadline, said by the exchange', () => {
      const d = decideDisputeAction(dispute('open'), 1000, 'exchange', { kind: 'deadline' }, {}, now);
      expect(d.kind === 'changed' && d.changes).toMatchObject({ status: 'resolved', outcome: 'consumer_wins', refundCents: 1000, resolvedAt: now, resolvedBy: 'deadline' });
      expect(d.kind === 'changed' && d.changes.messages.at(-1)).toMatchObject({ from: 'exchange', kind: 'deadline', outcome: 'consumer_wins' });
      expect(d.kind === 'changed' && d.effects).toEqual([{ kind: 'cancelDeadline' }, { kind: 'resolvePurchase', outcome: 'consumer_wins', refundCents: 1000 }]);
    });

    it('puts an operator\'s step in the audit log, with the resolution', () => {
      const d = decideDisputeAction(dispute('escalated'), 1000, 'operator', { kind: 'resolve', outcome: 'partial_refund', refundCents: 1 }, { message: 'split' }, now);
      expect(d.kind === 'changed' && d.changes).toMatchObject({ status: 'resolved', resolvedBy: 'operator', refundCents: 1 });
      expect(d.kind === 'changed' && d.effects).toEqual([{ kind: 'cancelDeadline' }, { kind: 'resolvePurchase', outcome: 'partial_refund', refundCents: 1 }, { kind: 'audit' }]);
    });

    it('leaves a dispute the provider answered as it is when the deadline comes', () => {
      expect(decideDisputeAction(dispute('proposed', partial), 1000, 'exchange', { kind: 'deadline' }, {}, now)).toEqual({ kind: 'unchanged' });
    });

    it('throws the refusal of an action its status does not allow', () => {
      expect(() => decideDisputeAction(dispute('resolved'), 1000, 'consumer', { kind: 'withdraw' }, {}, now)).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
    });
  });
});
