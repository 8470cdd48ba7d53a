import { beforeAll, describe, expect, it } from 'vitest';
import { unwrap, type Outcome } from '@agent-exchange/client';
import type { TransactionView } from '@aex/contracts';
import { expectError } from './harness.js';
import { INPUT, OUTPUT, serviceBody, ledgerOf, recordingSuite, wallet, waitForStatus, type Party } from './transaction-kit.js';

// The gateway: negotiation to the end of each of its paths, and concurrent requests for the same
// move, of which exactly one makes it. The other routes of transactions are in transactions.test.ts.

const suite = recordingSuite();
const data = <T>(r: Outcome<T>): T => unwrap(r);
const { party, funded, eventsOf } = suite;
const waitFor = waitForStatus;

/** Each test's own parties: a provider selling a negotiable service (500–2,000 cents), a consumer with 5,000 cents. */
const negotiationTest = it
  .extend('provider', async () => party())
  .extend('consumer', async () => funded(5000))
  .extend('serviceId', async ({ provider }) => data(await provider.client.createService(serviceBody({ pricing: { model: 'negotiable', basePriceCents: 1000, minimumCents: 500, maximumCents: 2000 } }))).id);

describe('negotiation (D9.4, D11)', () => {

  negotiationTest('opens with the consumer\'s offer, enforces turns and message rules, and settles on the accepted price', async ({ provider, consumer, serviceId }) => {
    const t = data(await consumer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 600 }));
    expect(t).toMatchObject({ status: 'negotiating', agreedPriceCents: null, statusReason: 'negotiable_pricing' });
    expect(await wallet(consumer)).toMatchObject({ heldCents: 0 });
    expectError(await consumer.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 700 } }), 400, 'NEGOTIATION_OUT_OF_TURN');
    expectError(await provider.client.negotiate(t.id, { type: 'counter_offer', terms: {} }), 400, 'INVALID_NEGOTIATION_MESSAGE');
    expectError(await provider.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 2500 } }), 400, 'INVALID_NEGOTIATION_MESSAGE');
    expectError(await provider.client.negotiate(t.id, { type: 'initial_offer', terms: { priceCents: 900 } }), 400, 'INVALID_NEGOTIATION_MESSAGE');
    expectError(await provider.client.negotiate(t.id, { type: 'accept', terms: { priceCents: 900 } }), 400, 'INVALID_NEGOTIATION_MESSAGE');
    expect(data(await provider.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 800 }, message: 'meet me halfway' })).status).toBe('negotiating');
    const accepted = await consumer.client.negotiate(t.id, { type: 'accept', terms: {} });
    expect(accepted.status).toBe(200);
    expect(data(accepted)).toMatchObject({ status: 'funds_held', agreedPriceCents: 800, platformFeeCents: 40 });
    expect(await wallet(consumer)).toMatchObject({ heldCents: 800 });
    const messages = data(await provider.client.negotiations(t.id));
    expect(messages.map((m) => [m.round, m.messageType, m.fromAgentId, m.terms])).toEqual([
      [1, 'initial_offer', consumer.agentId, { priceCents: 600 }],
      [2, 'counter_offer', provider.agentId, { priceCents: 800 }],
      [3, 'accept', consumer.agentId, {}],
    ]);
    expectError(await provider.client.negotiate(t.id, { type: 'reject', terms: {} }), 409, 'INVALID_STATE');
    await expect.poll(() => eventsOf(t.id).map((e) => e.data.status)).toEqual(['initiated', 'negotiating', 'matched', 'funds_held']);
  });

  negotiationTest('says why a fixed-price purchase negotiates: a maxPriceCents above the list price opens a negotiation at that price (D9.4)', async ({ provider, consumer }) => {
    const fixed = data(await provider.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: 1000 } }))).id;
    const t = data(await consumer.client.createTransaction({ serviceId: fixed, input: INPUT, maxPriceCents: 1200 }));
    expect(t).toMatchObject({ status: 'negotiating', statusReason: 'max_price_differs_from_list_price', agreedPriceCents: null });
    const messages = data(await consumer.client.negotiations(t.id));
    expect(messages.map((m) => [m.messageType, m.terms])).toEqual([['initial_offer', { priceCents: 1200 }]]);
    const bought = data(await consumer.client.createTransaction({ serviceId: fixed, input: INPUT, maxPriceCents: 1000 }));
    expect(bought).toMatchObject({ status: 'funds_held', statusReason: null });
  });

  negotiationTest('ends on reject and on withdraw, each with its reason (D11.3)', async ({ provider, consumer, serviceId }) => {
    const a = data(await consumer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 600 }));
    expect(data(await provider.client.negotiate(a.id, { type: 'reject', terms: {} }))).toMatchObject({ status: 'cancelled', statusReason: 'negotiation_rejected' });
    const b = data(await consumer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 600 }));
    expect(data(await provider.client.negotiate(b.id, { type: 'counter_offer', terms: { priceCents: 900 } })).status).toBe('negotiating');
    expect(data(await consumer.client.negotiate(b.id, { type: 'withdraw', terms: {} }))).toMatchObject({ status: 'cancelled', statusReason: 'negotiation_withdrawn' });
  });

  negotiationTest('ends when the 10th message is not an accept', async ({ provider, consumer, serviceId }) => {
    const t = data(await consumer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 600 }));
    let last: TransactionView = t;
    for (let round = 2; round <= 10; round++) {
      const who = round % 2 === 0 ? provider : consumer;
      last = data(await who.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 600 + round * 10 } }));
    }
    expect(last).toMatchObject({ status: 'cancelled', statusReason: 'negotiation_rounds_exhausted' });
    expect(data(await consumer.client.negotiations(t.id))).toHaveLength(10);
  });

  negotiationTest('cancels when the latest offer expires unanswered (D11.4)', async ({ provider, consumer, serviceId }) => {
    const t = data(await consumer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 600 }));
    data(await provider.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 900 }, expiresInSeconds: 1 }));
    // The offer's second passes on the services' clock: its timer fires at the next look.
    suite.ex().clock.advance(1_500);
    const expired = await waitFor(consumer, t.id, 'cancelled', 10_000);
    expect(expired.statusReason).toBe('offer_expired');
  });

  negotiationTest('answers 402 to an accept the consumer cannot pay, changing nothing; a later accept succeeds', async ({ provider, serviceId }) => {
    const poor = await funded(500);
    const t = data(await poor.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 500 }));
    data(await provider.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 700 } }));
    expectError(await poor.client.negotiate(t.id, { type: 'accept', terms: {} }), 402, 'INSUFFICIENT_FUNDS');
    expect(data(await poor.client.getTransaction(t.id))).toMatchObject({ status: 'negotiating', agreedPriceCents: null });
    expect(data(await poor.client.negotiations(t.id))).toHaveLength(2);
    data(await poor.client.fund(poor.agentId, 500));
    expect(data(await poor.client.negotiate(t.id, { type: 'accept', terms: {} }))).toMatchObject({ status: 'funds_held', agreedPriceCents: 700 });
  });

  negotiationTest('checks delegation again at accept, on the agreed price (D10.2)', async ({ provider, consumer, serviceId }) => {
    const t = data(await consumer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 600 }));
    data(await provider.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 1500 } }));
    data(await consumer.owner.client.setAgentDelegation(consumer.agentId, { maxTransactionCents: 1000 }));
    const r = await consumer.client.negotiate(t.id, { type: 'accept', terms: {} });
    expectError(r, 403, 'DELEGATION_EXCEEDED');
    if (!r.ok) expect(r.error.errors[0]!.details).toEqual({ rule: 'maxTransactionCents', limit: 1000, attempted: 1500 });
    expect(data(await consumer.client.getTransaction(t.id)).status).toBe('negotiating');
  });
});

describe('concurrent requests for the same move: exactly one makes it (D9.14)', () => {
  let provider: Party;
  let consumer: Party;
  let serviceId: string;

  beforeAll(async () => {
    [provider, consumer] = await Promise.all([party(), funded(20_000)]);
    serviceId = data(await provider.client.createService(serviceBody())).id;
  });

  const outcome = (r: Outcome<TransactionView>) => (r.ok ? r.status : `${r.status} ${r.error.code} ${String(r.error.errors[0]?.details?.status)}`);

  it('ten parallel verifies: one settles, nine answer 409 INVALID_STATE with the status, and money moves once', async () => {
    const t = data(await consumer.client.createTransaction({ serviceId, input: INPUT }));
    data(await provider.client.deliver(t.id, { output: OUTPUT }));
    const answers = (await Promise.all(Array.from({ length: 10 }, () => consumer.client.verify(t.id, { qualityScore: 80 })))).map(outcome);
    expect(answers.filter((a) => a === 200 || a === 202)).toHaveLength(1);
    expect(answers.filter((a) => typeof a === 'string' && /^409 INVALID_STATE (delivered|settled)$/.test(a))).toHaveLength(9);
    await waitFor(consumer, t.id, 'settled');
    expect(await ledgerOf(consumer, t.id)).toEqual([['fund_hold', -1000], ['fund_release', 1000], ['settlement_out', -1000]]);
  });

  it('deliver racing cancel: one of them moves the transaction, the other answers 409', async () => {
    for (let i = 0; i < 3; i++) {
      const t = data(await consumer.client.createTransaction({ serviceId, input: INPUT }));
      const [delivered, cancelled] = await Promise.all([provider.client.deliver(t.id, { output: OUTPUT }), consumer.client.cancel(t.id)]);
      expect([delivered.ok, cancelled.ok].filter(Boolean)).toHaveLength(1);
      const loser = delivered.ok ? cancelled : delivered;
      expect(outcome(loser)).toMatch(/^409 INVALID_STATE /);
      const final = data(await consumer.client.getTransaction(t.id)).status;
      expect(final).toBe(delivered.ok ? 'delivered' : 'cancelled');
      if (final === 'delivered') data(await consumer.client.verify(t.id));
    }
  });

  it('accept racing withdraw: one of them ends the negotiation, the other answers 409', async () => {
    const negotiable = data(await provider.client.createService(serviceBody({ pricing: { model: 'negotiable', basePriceCents: 1000, minimumCents: 500, maximumCents: 2000 } }))).id;
    for (let i = 0; i < 3; i++) {
      const t = data(await consumer.client.createTransaction({ serviceId: negotiable, input: INPUT, maxPriceCents: 700 }));
      data(await provider.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 800 } }));
      // Both from the party whose turn it is (the other one's would be out of turn, D11.1).
      const [accepted, withdrawn] = await Promise.all([
        consumer.client.negotiate(t.id, { type: 'accept', terms: {} }),
        consumer.client.negotiate(t.id, { type: 'withdraw', terms: {} }),
      ]);
      expect([accepted, withdrawn].filter((r) => r.ok)).toHaveLength(1);
      expect(outcome(accepted.ok ? withdrawn : accepted)).toMatch(/^409 INVALID_STATE /);
      const final = data(await consumer.client.getTransaction(t.id)).status;
      expect(final).toBe(accepted.ok ? 'funds_held' : 'cancelled');
      if (final === 'funds_held') data(await consumer.client.cancel(t.id));
    }
  });
});
