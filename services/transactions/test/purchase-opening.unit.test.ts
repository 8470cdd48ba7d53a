import { describe, expect, it } from 'vitest';
import { isAppError } from '@aex/contracts';
import { accessRefusal } from '../src/domain/purchase-access.js';
import { decidePurchase, type PurchaseCommand, type PurchaseDecision, type PurchaseFacts } from '../src/domain/purchase.js';
import {
  AS_CONSUMER, AS_OWNER, AS_PROVIDER, AS_STRANGER, base, caller, changed, COMMANDS, contract, CONSUMER, delegation, effectsOf, FACTS, HELD_AT, NOW, order, OWNER, POLICY, QUIET, stateOf,
} from './purchase-fixtures.js';

// A new purchase's checks in their order (D9.1–D9.6, D10) and who may make each request (D9.8,
// D10.3) — decided by `decidePurchase` on the totals read under the parties' locks.

const open = (over: Parameters<typeof order>[0] = {}, facts: PurchaseFacts = FACTS, by = AS_CONSUMER): PurchaseDecision =>
  decidePurchase(undefined, { kind: 'open', caller: by, order: order(over) }, facts, POLICY, HELD_AT);

function refusal(d: PurchaseDecision) {
  if (d.kind !== 'refused' || !isAppError(d.error)) throw new Error(`expected a refusal, got ${d.kind}`);
  return d.error.entries[0]!;
}

describe('a new purchase (D9.1–D9.6, D10)', () => {
  it('opens at the list price by asking for the hold, announced as initiated, with its input and metadata', () => {
    const d = changed(open({ metadata: { ref: 'x' } }));
    expect(d.changes).toMatchObject({ id: base.id, status: 'initiated', hold: 'requested', holdAttempt: 1, agreedPriceCents: 1000, platformFeeCents: 50, input: { text: 'hi' }, metadata: { ref: 'x' }, output: null, endingStatus: null });
    expect(d.effects).toEqual([
      { kind: 'announce', event: expect.objectContaining({ status: 'initiated', previousStatus: null, agreedPriceCents: 1000, platformFeeCents: 50 }) },
      { kind: 'holdFunds', amountCents: 1000, attempt: 1 },
    ]);
  });

  it('opens a negotiation with the consumer\'s offer as round 1, expiring after the policy\'s time, and says why it negotiates (D9.4)', () => {
    const d = changed(open({ maxPriceCents: 700 }));
    expect(d.changes).toMatchObject({ status: 'negotiating', statusReason: 'max_price_differs_from_list_price', hold: 'none', agreedPriceCents: null });
    expect(d.effects.map((e) => e.kind)).toEqual(['announce', 'recordMessage', 'schedule', 'announce']);
    expect(effectsOf(d, 'recordMessage')).toMatchObject([{ messageType: 'initial_offer', round: 1, terms: { priceCents: 700 }, fromAgentId: CONSUMER }]);
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'offerExpiry', at: new Date(HELD_AT.getTime() + 300_000), payload: { round: 1 } }]);
  });

  it('waits for the owner when the list price needs an approval, telling the owner, nothing held (D10.3)', () => {
    const d = changed(open({ delegation: delegation({ requireHumanApprovalAboveCents: 500 }) }));
    expect(d.changes).toMatchObject({ status: 'awaiting_approval', hold: 'none', approval: { rule: 'requireHumanApprovalAboveCents', limit: 500, attempted: 1000, ownerAgentId: OWNER } });
    expect(effectsOf(d, 'announce')[1]!.event).toMatchObject({ status: 'awaiting_approval', ownerAgentId: OWNER });
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'approvalExpiry', at: new Date(HELD_AT.getTime() + 86_400_000) }]);
  });

  it('never asks an approval of an opening offer: its accept may need one (D10.3)', () => {
    expect(changed(open({ maxPriceCents: 700, delegation: delegation({ requireHumanApprovalAboveCents: 500 }) })).changes).toMatchObject({ status: 'negotiating', approval: null });
  });

  it('refuses in the decided order: a deactivated buyer, its own service, a service not active, input, units, the offer, the limits, the rules', () => {
    const everything = {
      contract: contract({ agentId: CONSUMER, status: 'paused' as const, pricing: { model: 'negotiable' as const, basePriceCents: 1000, minimumCents: 900 } }),
      inputErrors: [{ code: 'SCHEMA_VALIDATION_FAILED' as const, message: 'no', field: '/input/text' }],
      units: 2, maxPriceCents: 100, delegation: delegation({ maxTransactionCents: 1 }),
    };
    const busy = { ...FACTS, totals: { ...QUIET, consumerActive: 100 } };
    const steps: Array<[string, Parameters<typeof order>[0], string, string | undefined]> = [
      ['deactivated', everything, 'AGENT_INACTIVE', undefined],
      ['own service', everything, 'VALIDATION_ERROR', '/body/serviceId'],
      ['not active', { ...everything, contract: { ...everything.contract, agentId: 'someone' } }, 'SERVICE_NOT_ACTIVE', undefined],
      ['input', { ...everything, contract: { ...everything.contract, agentId: 'someone', status: 'active' } }, 'SCHEMA_VALIDATION_FAILED', '/input/text'],
      ['units', { ...everything, inputErrors: [], contract: { ...everything.contract, agentId: 'someone', status: 'active' } }, 'VALIDATION_ERROR', '/body/units'],
      ['offer', { ...everything, inputErrors: [], units: undefined, contract: { ...everything.contract, agentId: 'someone', status: 'active' } }, 'VALIDATION_ERROR', '/body/maxPriceCents'],
      ['limit', { ...everything, inputErrors: [], units: undefined, maxPriceCents: 950, contract: { ...everything.contract, agentId: 'someone', status: 'active' } }, 'LIMIT_REACHED', undefined],
    ];
    for (const [name, over, code, field] of steps) {
      const by = name === 'deactivated' ? { ...AS_CONSUMER, status: 'deactivated' as const } : AS_CONSUMER;
      const e = refusal(open(over, busy, by));
      expect(e.code, name).toBe(code);
      if (field) expect(e.field, name).toBe(field);
    }
    const rules = refusal(open({ delegation: delegation({ maxTransactionCents: 1 }) }));
    expect(rules).toMatchObject({ code: 'DELEGATION_EXCEEDED', details: { rule: 'maxTransactionCents', limit: 1, attempted: 1000 } });
  });

  it('judges the transactions in progress and the daily spend on the totals read under the parties\' locks (D9.6, D10.2)', () => {
    expect(refusal(open({}, { totals: { ...QUIET, providerActive: 100 } }))).toMatchObject({ code: 'LIMIT_REACHED', details: { limit: 100, party: 'provider' } });
    expect(changed(open({}, { totals: { ...QUIET, consumerActive: 99, providerActive: 99 } })).changes.status).toBe('initiated');
    const spent = refusal(open({ delegation: delegation({ maxDailySpendCents: 1500 }) }, { totals: { ...QUIET, spentLast24hCents: 600 } }));
    expect(spent).toMatchObject({ code: 'DELEGATION_EXCEEDED', details: { rule: 'maxDailySpendCents', limit: 1500, attempted: 1600 } });
    expect(() => open({}, {})).toThrow(/totals/);
  });

  it('takes the ceiling from the policy, for the list price and for an offer alike', () => {
    const low = { ...POLICY, maxTransactionCents: 999 };
    const list = decidePurchase(undefined, { kind: 'open', caller: AS_CONSUMER, order: order() }, FACTS, low, NOW);
    expect(refusal(list)).toMatchObject({ code: 'VALIDATION_ERROR', field: '/body/units' });
    const offer = decidePurchase(undefined, { kind: 'open', caller: AS_CONSUMER, order: order({ contract: contract({ pricing: { model: 'negotiable', basePriceCents: 500 } }), maxPriceCents: 1000 }) }, FACTS, low, NOW);
    expect(refusal(offer)).toMatchObject({ code: 'VALIDATION_ERROR', field: '/body/maxPriceCents', details: { limit: 999 } });
  });

  it('keeps an opening offer within the bounds the service negotiates between, as a counter-offer is (D9.4, D11.2)', () => {
    const bounded = contract({ pricing: { model: 'negotiable', basePriceCents: 1000, minimumCents: 500, maximumCents: 2000 } });
    expect(refusal(open({ contract: bounded, maxPriceCents: 499 }))).toMatchObject({ code: 'VALIDATION_ERROR', field: '/body/maxPriceCents', details: { minimumCents: 500, maximumCents: 2000 } });
    expect(refusal(open({ contract: bounded, maxPriceCents: 2001 }))).toMatchObject({ code: 'VALIDATION_ERROR', field: '/body/maxPriceCents' });
    expect(changed(open({ contract: bounded, maxPriceCents: 1500 })).changes.status).toBe('negotiating');
  });
});

describe('who may make each request (D9.8, D10.3)', () => {
  const t = stateOf('funds_held/held');
  const requests = Object.entries(COMMANDS).filter(([, c]) => c.kind === 'request').map(([name, c]) => [name, c.command as Extract<PurchaseCommand, { caller: unknown }>] as const);
  const as = (c: Extract<PurchaseCommand, { caller: unknown }>, by: typeof AS_CONSUMER) => ({ ...c, caller: by }) as PurchaseCommand;

  it.each(requests)('%s: a stranger finds no such transaction (404)', (_, c) => {
    expect(accessRefusal(t, as(c, AS_STRANGER))?.code).toBe('NOT_FOUND');
    expect(accessRefusal(undefined, c)?.code).toBe('NOT_FOUND');
  });

  it('gives the party a request does not belong to 403, naming the role', () => {
    for (const [kind, wrong, role] of [['start', AS_CONSUMER, 'provider'], ['deliver', AS_CONSUMER, 'provider'], ['verify', AS_PROVIDER, 'consumer'], ['openDispute', AS_PROVIDER, 'consumer']] as const) {
      const c = requests.find(([, r]) => r.kind === kind)![1];
      expect(accessRefusal(t, as(c, wrong))).toMatchObject({ status: 403, entries: [{ code: 'FORBIDDEN', details: { role } }] });
    }
    for (const by of [AS_CONSUMER, AS_PROVIDER]) expect(accessRefusal(t, { kind: 'cancel', caller: by })).toBeUndefined();
  });

  it('lets only the consumer\'s account owner approve or deny: the provider and the account\'s other agents 403, other accounts 404', () => {
    for (const kind of ['approve', 'deny'] as const) {
      const c = (by: typeof AS_CONSUMER) => (kind === 'approve' ? { kind, caller: by } : { kind, caller: by, reason: null }) as PurchaseCommand;
      expect(accessRefusal(t, c(AS_OWNER))).toBeUndefined();
      expect(accessRefusal(t, c(AS_CONSUMER))?.code).toBe('FORBIDDEN');
      expect(accessRefusal(t, c(AS_PROVIDER))?.code).toBe('FORBIDDEN');
      expect(accessRefusal(t, c(caller('other', 'acct-o', true)))?.code).toBe('NOT_FOUND');
      // The consumer may approve its own purchase only as its account's owner agent.
      expect(accessRefusal(t, c({ ...AS_CONSUMER, isOwner: true }))).toBeUndefined();
    }
  });

  it('decides access before anything else: a stranger learns nothing of the status', () => {
    const d = decidePurchase(stateOf('settled/settled'), { kind: 'verify', caller: AS_STRANGER, qualityScore: null, notes: null }, FACTS, POLICY, NOW);
    expect(refusal(d).code).toBe('NOT_FOUND');
  });
});
