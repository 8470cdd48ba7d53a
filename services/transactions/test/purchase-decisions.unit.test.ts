import { describe, expect, it } from 'vitest';
import { isAppError } from '@aex/contracts';
import { decidePurchase, type Purchase, type PurchaseCommand } from '../src/domain/purchase.js';
import { platformFee } from '../src/domain/pricing.js';
import {
  after, APPROVAL, AS_CONSUMER, AS_OWNER, changed, COMMANDS, consumerOffer, effectsOf, FACTS, HELD_AT, NOW, OWNER, POLICY, PROVIDER, stateOf,
} from './purchase-fixtures.js';

const decide = (t: Purchase, c: PurchaseCommand, facts = FACTS) => decidePurchase(t, c, facts, POLICY, NOW);
const command = (name: string) => COMMANDS[name]!.command;

describe('what the purchase decides, in detail', () => {
  it('records a pending accept once its hold is placed: matched, then funds_held, at the agreed price and its fee (D9.7, D11.2)', () => {
    const d = changed(decide(stateOf('negotiating/requested, accept pending'), command('hold placed')));
    expect(effectsOf(d, 'announce').map((a) => [a.event.previousStatus, a.event.status, a.event.agreedPriceCents])).toEqual([['negotiating', 'matched', 900], ['matched', 'funds_held', 900]]);
    expect(d.changes).toMatchObject({ agreedPriceCents: 900, platformFeeCents: platformFee(900), pendingAcceptBy: null, fundsHeldAt: HELD_AT, expiresAt: new Date(HELD_AT.getTime() + 3_600_000) });
    expect(effectsOf(d, 'recordAccept')).toEqual([{ kind: 'recordAccept', fromAgentId: PROVIDER, message: null }]);
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'transactionExpiry', at: new Date(HELD_AT.getTime() + 3_600_000) }]);
  });

  it('leaves the negotiation as it was when the accept\'s hold is refused: its latest offer expires when it would have (D9.7)', () => {
    const d = changed(decide(stateOf('negotiating/requested, accept pending'), command('hold refused')));
    expect(d.changes).toMatchObject({ hold: 'refused', pendingAcceptBy: null, pendingAcceptPriceCents: null });
    expect(d.effects).toEqual([{ kind: 'restoreOfferExpiry' }]);
  });

  it('shows the agreed price of an accept cancelled while its hold was on its way, as the ledger holds and returns it', () => {
    const d = changed(decide(stateOf('negotiating/requested, accept pending'), command('cancel')));
    expect(d.changes).toMatchObject({ hold: 'returning', endingStatus: 'cancelled', endingReason: 'cancelled_by_consumer', agreedPriceCents: 900, platformFeeCents: platformFee(900) });
    expect(d.changes).not.toHaveProperty('status');
  });

  it('ends a transaction only once the wallet returned its price: cancelled, announced and counted then, with the reason it ended for (terminal means settled)', () => {
    const asked = changed(decide(stateOf('funds_held/held'), { kind: 'cancel', caller: { ...AS_CONSUMER, agentId: PROVIDER, accountId: 'acct-p' } }));
    expect(asked.changes).toMatchObject({ hold: 'returning', endingStatus: 'cancelled', endingReason: 'cancelled_by_provider' });
    expect(effectsOf(asked, 'announce')).toEqual([]);
    expect(effectsOf(asked, 'returnHold')).toHaveLength(1);
    const t = after(stateOf('funds_held/held'), asked);
    const returned = changed(decide(t, command('hold returned')));
    expect(returned.changes).toMatchObject({ status: 'cancelled', statusReason: 'cancelled_by_provider', hold: 'returned', endingStatus: null, endingReason: null });
    expect(effectsOf(returned, 'announce').map((a) => [a.event.previousStatus, a.event.status])).toEqual([['funds_held', 'cancelled']]);
  });

  it('counts an expiry in the provider\'s trust once the price is back, not before (D15.2)', () => {
    const asked = changed(decide(stateOf('executing/held'), command('transaction expired')));
    expect(effectsOf(asked, 'trustOutcome')).toEqual([]);
    const returned = changed(decide(after(stateOf('executing/held'), asked), command('hold returned')));
    expect(effectsOf(returned, 'trustOutcome')).toEqual([{ kind: 'trustOutcome', outcome: 'expired', qualityScore: null, late: false }]);
  });

  it('refuses a second verify while the settlement is on its way (D9.14), naming it in the details', () => {
    const d = decide(stateOf('delivered/settling'), command('verify'));
    expect(d.kind === 'refused' && isAppError(d.error) && d.error.entries[0]!.details).toEqual({ status: 'delivered', settlement: 'in_progress' });
  });

  it('refuses a dispute of a transaction disputed once already, or whose settlement is under way (D12.1, D9.14)', () => {
    for (const name of ['delivered/held, disputed before', 'delivered/settling']) {
      const d = decide(stateOf(name), command('open dispute'));
      expect(d.kind === 'refused' && isAppError(d.error) && d.error.code).toBe('INVALID_STATE');
    }
  });

  it('keeps the review window\'s reason through to settled, and settles the agreed price minus its fee', () => {
    const t = stateOf('delivered/held');
    const asked = changed(decide(t, command('review window ended')));
    expect(asked.effects).toEqual([{ kind: 'settle', amountCents: 1000, feeCents: 50, refundCents: 0 }]);
    const settled = changed(decide(after(t, asked), command('hold settled')));
    expect(settled.changes).toMatchObject({ status: 'settled', statusReason: 'review_window_ended', settledAt: NOW });
  });

  it('settles a partial refund with the fee on what the provider keeps (D12.8)', () => {
    const d = changed(decide(stateOf('disputed/held'), command('dispute: partial refund')));
    expect(effectsOf(d, 'settle')).toEqual([{ kind: 'settle', amountCents: 1000, feeCents: platformFee(700), refundCents: 300 }]);
    expect(d.changes).toMatchObject({ platformFeeCents: platformFee(700), statusReason: 'dispute_partial_refund' });
  });

  it('sends a redone transaction back to executing with a new expiry and no output (D12.8)', () => {
    const d = changed(decide(stateOf('disputed/held'), command('dispute: provider redoes')));
    const expiresAt = new Date(NOW.getTime() + 3_600_000);
    expect(d.changes).toMatchObject({ status: 'executing', expiresAt, output: null, deliveredAt: null, reviewEndsAt: null, deliveryAttempts: 0 });
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'transactionExpiry', at: expiresAt }]);
  });

  it('schedules the review window on a valid delivery, and counts every attempt (D9.7)', () => {
    const d = changed(decide(stateOf('executing/held'), command('deliver valid output')));
    expect(d.changes).toMatchObject({ output: { ok: true }, deliveredAt: NOW, deliveryAttempts: 1, reviewEndsAt: new Date(NOW.getTime() + 60_000) });
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'reviewWindow', at: new Date(NOW.getTime() + 60_000) }]);
    const invalid = changed(decide(stateOf('executing/held'), command('deliver invalid output')));
    expect(invalid.changes).toMatchObject({ deliveryAttempts: 1, statusReason: 'output_validation_failed' });
    expect(invalid.changes).not.toHaveProperty('output');
  });

  it('refuses to decide a delivery whose output was not checked against the contract', () => {
    expect(() => decide(stateOf('executing/held'), { kind: 'deliver', caller: { ...AS_CONSUMER, agentId: PROVIDER, accountId: 'acct-p' }, output: {} })).toThrow(/checked against the contract/);
  });

  it.each<[string, string, Partial<Purchase>, string | undefined, boolean]>([
    ['settled on time', 'hold settled', {}, 'settled', false],
    ['settled, delivered after the SLA\'s latency', 'hold settled', { deliveredAt: new Date(HELD_AT.getTime() + 61_000) }, 'settled', true],
  ])('counts in the provider\'s trust a transaction that %s (D15.2)', (_, commandName, over, outcome, late) => {
    const d = decide({ ...stateOf('delivered/settling'), ...over }, command(commandName));
    expect(effectsOf(d, 'trustOutcome')).toEqual([{ kind: 'trustOutcome', outcome, qualityScore: null, late }]);
  });

  it.each([
    ['lost a dispute', 'disputed/returning → failed', 'dispute_lost'],
    ['expired', 'executing/returning → expired', 'expired'],
    ['failed its last delivery attempt', 'validation_failed/returning → failed', 'failed'],
  ])('counts in the provider\'s trust a transaction that %s, once its price is back (D15.2)', (_, from, outcome) => {
    const d = decide(stateOf(from), command('hold returned'));
    expect(effectsOf(d, 'trustOutcome')).toEqual([{ kind: 'trustOutcome', outcome, qualityScore: null, late: false }]);
  });

  it.each(['cancel', 'offer expired', 'hold refused'])('leaves the provider\'s trust alone when the purchase ends by %s, before any hold', (commandName) => {
    const from = commandName === 'hold refused' ? 'initiated/requested' : 'negotiating/none';
    expect(effectsOf(decide(stateOf(from), command(commandName)), 'trustOutcome')).toEqual([]);
  });

  it('takes a counter-offer\'s turn and round rules from the negotiation\'s latest message (D11)', () => {
    const t = stateOf('negotiating/none');
    const own = decide(t, { ...(command('counter-offer') as Extract<PurchaseCommand, { kind: 'negotiate' }>), caller: AS_CONSUMER });
    expect(own.kind === 'refused' && isAppError(own.error) && own.error.code).toBe('NEGOTIATION_OUT_OF_TURN');
    const d = changed(decide(t, command('counter-offer')));
    expect(effectsOf(d, 'recordMessage')).toMatchObject([{ messageType: 'counter_offer', round: 2, terms: { priceCents: 900 }, fromAgentId: PROVIDER }]);
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'offerExpiry', at: new Date(NOW.getTime() + 300_000), payload: { round: 2 } }]);
    const tenth = changed(decide(t, command('counter-offer'), { last: { ...consumerOffer, round: 9, messageType: 'counter_offer' } }));
    expect(tenth.changes).toMatchObject({ status: 'cancelled', statusReason: 'negotiation_rounds_exhausted' });
  });

  it('refuses a counter-offer outside the service\'s bounds or above the exchange\'s ceiling, as it refuses an opening offer', () => {
    const t = { ...stateOf('negotiating/none'), pricing: { model: 'negotiable' as const, basePriceCents: 1000, minimumCents: 500, maximumCents: 2000 } };
    for (const priceCents of [499, 2001]) {
      const d = decide(t, { kind: 'negotiate', caller: { ...AS_CONSUMER, agentId: PROVIDER }, body: { type: 'counter_offer', terms: { priceCents } } });
      expect(d.kind === 'refused' && isAppError(d.error) && d.error.entries[0]).toMatchObject({ code: 'INVALID_NEGOTIATION_MESSAGE', field: '/body/terms/priceCents' });
    }
    const ceiling = decidePurchase({ ...t, pricing: { model: 'negotiable', basePriceCents: 1000 } }, command('counter-offer'), FACTS, { ...POLICY, maxTransactionCents: 800 }, NOW);
    expect(ceiling.kind === 'refused' && ceiling.error.message).toMatch(/may exceed 800 cents/);
  });

  it('numbers each accept\'s hold anew, so a refused one may be asked again', () => {
    const d = changed(decide(stateOf('negotiating/refused'), command('accept')));
    expect(d.changes).toMatchObject({ hold: 'requested', holdAttempt: 2, pendingAcceptBy: PROVIDER, pendingAcceptPriceCents: 800 });
    expect(effectsOf(d, 'holdFunds')).toEqual([{ kind: 'holdFunds', amountCents: 800, attempt: 2 }]);
  });

  it('refuses an accept the consumer\'s rules refuse at the agreed price, on its spending read under its lock (D10.2)', () => {
    const accept = (rules: Record<string, number>) => ({ kind: 'negotiate', caller: { ...AS_CONSUMER, agentId: PROVIDER }, body: { type: 'accept', terms: {} }, delegation: { rules, ownerAgentId: OWNER } }) as PurchaseCommand;
    const capped = decide(stateOf('negotiating/none'), accept({ maxTransactionCents: 799 }));
    expect(capped.kind === 'refused' && isAppError(capped.error) && capped.error.entries[0]!.details).toEqual({ rule: 'maxTransactionCents', limit: 799, attempted: 800 });
    const spent = decide(stateOf('negotiating/none'), accept({ maxDailySpendCents: 1000 }), { ...FACTS, totals: { consumerActive: 0, providerActive: 0, spentLast24hCents: 300 } });
    expect(spent.kind === 'refused' && isAppError(spent.error) && spent.error.entries[0]!.details).toEqual({ rule: 'maxDailySpendCents', limit: 1000, attempted: 1100 });
  });
});

describe('approvals (D10.3)', () => {
  it('takes an accept needing an approval as agreed: recorded, its offer\'s expiry replaced by the approval\'s (D10.3)', () => {
    const d = changed(decide(stateOf('negotiating/none'), command('accept at a price needing approval')));
    expect(d.changes).toMatchObject({ status: 'awaiting_approval', agreedPriceCents: 800, platformFeeCents: platformFee(800), approval: { rule: 'requireHumanApprovalAboveCents', limit: 500, attempted: 800, ownerAgentId: OWNER } });
    expect(effectsOf(d, 'recordMessage')).toMatchObject([{ messageType: 'accept', round: 2, fromAgentId: PROVIDER }]);
    expect(effectsOf(d, 'cancelTimers')).toEqual([{ kind: 'cancelTimers', timers: ['offerExpiry'] }]);
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'approvalExpiry', at: new Date(NOW.getTime() + 86_400_000) }]);
    expect(effectsOf(d, 'holdFunds')).toEqual([]);
  });

  it('asks for the hold once approved, recording who approved; after a negotiation it passes through matched (D10.3)', () => {
    const d = changed(decide(stateOf('awaiting_approval/none, negotiated'), command('approve')));
    expect(d.changes.approval).toMatchObject({ decision: 'approved', decidedBy: OWNER, decidedAt: NOW.toISOString() });
    expect(effectsOf(d, 'holdFunds')).toEqual([{ kind: 'holdFunds', amountCents: 900, attempt: 1 }]);
    const placed = changed(decide(after(stateOf('awaiting_approval/none, negotiated'), d), command('hold placed')));
    expect(effectsOf(placed, 'announce').map((a) => [a.event.previousStatus, a.event.status])).toEqual([['awaiting_approval', 'matched'], ['matched', 'funds_held']]);
    expect(effectsOf(placed, 'cancelTimers')).toEqual([{ kind: 'cancelTimers', timers: ['approvalExpiry'] }]);
    const direct = changed(decide(stateOf('awaiting_approval/requested'), command('hold placed')));
    expect(effectsOf(direct, 'announce').map((a) => [a.event.previousStatus, a.event.status])).toEqual([['awaiting_approval', 'funds_held']]);
  });

  it('re-checks the consumer\'s rules without the approval rule when approving (403, still waiting)', () => {
    const d = decide(stateOf('awaiting_approval/none'), { kind: 'approve', caller: AS_OWNER, delegation: { rules: { maxTransactionCents: 999, requireHumanApprovalAboveCents: 500 }, ownerAgentId: OWNER } });
    expect(d.kind === 'refused' && isAppError(d.error) && d.error.entries[0]).toMatchObject({ code: 'DELEGATION_EXCEEDED', details: { rule: 'maxTransactionCents' } });
  });

  it('leaves the purchase waiting and undecided when the approval\'s hold is refused (402, D10.3)', () => {
    const d = changed(decide(stateOf('awaiting_approval/requested'), command('hold refused')));
    expect(d.changes.approval).toEqual(APPROVAL);
    expect(d.changes).not.toHaveProperty('status');
  });

  it('records a denial with its reason, and an expiry, as the cancellation\'s reason (D10.3)', () => {
    const denied = changed(decide(stateOf('awaiting_approval/none'), command('deny')));
    expect(denied.changes).toMatchObject({ statusReason: 'approval_denied', approval: { ...APPROVAL, decision: 'denied', decidedBy: OWNER, reason: 'too dear' } });
    const expired = changed(decide(stateOf('awaiting_approval/none'), command('approval expired')));
    expect(expired.changes).toMatchObject({ status: 'cancelled', statusReason: 'approval_expired' });
    expect(decide(stateOf('awaiting_approval/requested'), command('approval expired'))).toEqual({ kind: 'unchanged' });
  });

  it('refuses a second approval while the first one\'s hold is on its way (D10.3)', () => {
    const d = decide(stateOf('awaiting_approval/requested'), command('approve'));
    expect(d.kind === 'refused' && isAppError(d.error) && d.error.entries[0]!.details).toEqual({ status: 'awaiting_approval', approval: 'in_progress' });
  });
});
