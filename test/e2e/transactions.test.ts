import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap, type Outcome } from '@agent-exchange/client';
import { subjects, TRANSACTION_EVENTS_FILTER, type MessageEnvelope, type TransactionView } from '@aex/contracts';
import { ack, type Stoppable } from '@aex/platform';
import { expectError, startTestExchange, type TestExchange } from './harness.js';
import { INPUT, OUTPUT, serviceBody, ledgerOf, wallet, waitForStatus, party as partyOf, funded as fundedOf, type Party } from './transaction-kit.js';

// the gateway: every route of transactions and negotiation, each error and each
// caller (consumer, provider, third party, other agent of the account, anonymous, deactivated).

let ex: TestExchange;

const data = <T>(r: Outcome<T>): T => unwrap(r);
const party = () => partyOf(ex);
const funded = (cents: number) => fundedOf(ex, cents);
const waitFor = waitForStatus;

/** Every `transaction.<status>` event published, as the webhook dispatcher will consume them (D14.1). */
const published: MessageEnvelope<{ transactionId: string; status: string; previousStatus: string | null; consumerAgentId: string; providerAgentId: string }>[] = [];
let eventConsumer: Stoppable | undefined;

beforeAll(async () => {
  // Writes unlimited: one test opens 100 transactions for one agent.
  ex = await startTestExchange({ RATE_LIMIT_WRITE_PER_MIN: '100000' }, { timerPollMs: 100 });
  eventConsumer = await ex.bus.consume({
    stream: 'events',
    durable: 'test-transaction-events',
    filter: subjects.event(ex.bus.namespace, TRANSACTION_EVENTS_FILTER),
    concurrency: 1,
    handler: async (msg) => {
      published.push(msg.data as (typeof published)[number]);
      return ack();
    },
  });
}, 120_000);

afterAll(async () => {
  await eventConsumer?.stop();
  await ex?.stop();
});

const eventsOf = (id: string) => published.filter((e) => e.data.transactionId === id);

/**
 * Each test's own parties and purchase, made for it alone: a provider selling a fixed-price service
 * at 1,000 cents, and a consumer with 5,000 cents whose purchase of it is `funds_held`.
 */
const purchaseTest = it
  .extend('provider', async () => party())
  .extend('consumer', async () => funded(5000))
  .extend('serviceId', async ({ provider }) => data(await provider.client.createService(serviceBody())).id)
  .extend('tx', async ({ consumer, serviceId }) => data(await consumer.client.createTransaction({ serviceId, input: INPUT })));

describe('an uncontested purchase (D9.5, D9.7, D9.11, D13.2)', () => {
  it('creates (signed) as funds_held with the price, the 5 % fee and expiresAt = fundsHeldAt + timeoutMs', async () => {
    const [provider, consumer] = await Promise.all([party(), funded(5000)]);
    const serviceId = data(await provider.client.createService(serviceBody())).id;
    const r = await consumer.client.createTransaction({ serviceId, input: INPUT });
    expect(r.status).toBe(201);
    const tx = data(r);
    expect(tx).toMatchObject({ status: 'funds_held', consumerAgentId: consumer.agentId, providerAgentId: provider.agentId, serviceId, agreedPriceCents: 1000, platformFeeCents: 50, input: INPUT, units: 1, serviceVersion: '1.0.0', deliveryAttempts: 0, maxDeliveryAttempts: 2 });
    expect(Date.parse(tx.expiresAt!) - Date.parse(tx.fundsHeldAt!)).toBe(600_000);
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 5000, heldCents: 1000, availableCents: 4000 });
  });

  purchaseTest('is visible to both parties only: a third party and another agent of the consumer\'s account see 404', async ({ provider, consumer, tx }) => {
    expect(data(await provider.client.getTransaction(tx.id)).status).toBe('funds_held');
    const stranger = await party();
    expectError(await stranger.client.getTransaction(tx.id), 404, 'NOT_FOUND');
    expectError(await consumer.owner.client.getTransaction(tx.id), 404, 'NOT_FOUND');
    expectError(await ex.anon.getTransaction(tx.id), 401, 'UNAUTHENTICATED');
    expectError(await stranger.client.cancel(tx.id), 404, 'NOT_FOUND');
    expectError(await stranger.client.negotiations(tx.id), 404, 'NOT_FOUND');
  });

  purchaseTest('lets only the provider start and deliver, and only the consumer verify (D9.8)', async ({ provider, consumer, tx }) => {
    expectError(await consumer.client.startWork(tx.id), 403, 'FORBIDDEN');
    expectError(await consumer.client.deliver(tx.id, OUTPUT), 403, 'FORBIDDEN');
    expectError(await provider.client.verify(tx.id), 403, 'FORBIDDEN');
    expectError(await consumer.client.verify(tx.id), 409, 'INVALID_STATE');
  });

  purchaseTest('requires the signature on deliver (D3.3)', async ({ provider, tx }) => {
    const unsigned = ex.anon.as({ apiKey: provider.apiKey });
    expectError(await unsigned.deliver(tx.id, OUTPUT), 401, 'SIGNATURE_REQUIRED');
  });

  purchaseTest('starts (EXT), then delivers valid output; no cancel once delivered', async ({ provider, consumer, tx }) => {
    expect(data(await provider.client.startWork(tx.id)).status).toBe('executing');
    const d = data(await provider.client.deliver(tx.id, OUTPUT));
    expect(d).toMatchObject({ status: 'delivered', output: OUTPUT, deliveryAttempts: 1 });
    expect(d.deliveredAt).not.toBeNull();
    expectError(await consumer.client.cancel(tx.id), 409, 'INVALID_STATE');
  });

  purchaseTest('verifies: settled at once, the provider paid minus the fee, the fee in the platform wallet', async ({ provider, consumer, tx }) => {
    data(await provider.client.deliver(tx.id, OUTPUT));
    const r = await consumer.client.verify(tx.id, { qualityScore: 95, notes: 'correct digest' });
    expect(r.status).toBe(200);
    expect(data(r)).toMatchObject({ status: 'settled', qualityScore: 95, notes: 'correct digest' });
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 4000, heldCents: 0, lifetimeSpentCents: 1000 });
    expect(await wallet(provider)).toMatchObject({ balanceCents: 950, heldCents: 0, lifetimeEarnedCents: 1000 });
    expect(await ledgerOf(consumer, tx.id)).toEqual([['fund_hold', -1000], ['fund_release', 1000], ['settlement_out', -1000]]);
    expect(await ledgerOf(provider, tx.id)).toEqual([['platform_fee', -50], ['settlement_in', 1000]]);
    expect(data(await ex.admin.checkLedger())).toMatchObject({ ok: true, violations: [] });
  });

  purchaseTest('announces every move as transaction.<status> with both parties and the previous status (D9.7, D14.1)', async ({ provider, consumer, serviceId, tx }) => {
    data(await provider.client.startWork(tx.id));
    data(await provider.client.deliver(tx.id, OUTPUT));
    data(await consumer.client.verify(tx.id));
    await expect.poll(() => eventsOf(tx.id).length).toBe(5);
    const events = eventsOf(tx.id);
    expect(events.map((e) => [e.type, e.data.previousStatus])).toEqual([
      ['transactions.transaction.initiated', null],
      ['transactions.transaction.funds_held', 'initiated'],
      ['transactions.transaction.executing', 'funds_held'],
      ['transactions.transaction.delivered', 'executing'],
      ['transactions.transaction.settled', 'delivered'],
    ]);
    expect(events.at(-1)!.data).toEqual({
      transactionId: tx.id, status: 'settled', previousStatus: 'delivered', statusReason: null,
      consumerAgentId: consumer.agentId, providerAgentId: provider.agentId, serviceId, agreedPriceCents: 1000, platformFeeCents: 50,
    });
  });

  purchaseTest('lists it for both parties, newest first, filtered by role and status', async ({ provider, consumer, serviceId, tx }) => {
    data(await provider.client.deliver(tx.id, OUTPUT));
    data(await consumer.client.verify(tx.id));
    const later = data(await consumer.client.createTransaction({ serviceId, input: INPUT }));
    expect(data(await consumer.client.listTransactions({ role: 'consumer' })).map((t) => t.id)).toEqual([later.id, tx.id]);
    expect(data(await consumer.client.listTransactions({ role: 'provider' }))).toEqual([]);
    expect(data(await provider.client.listTransactions({ role: 'provider', status: 'settled' })).map((t) => t.id)).toEqual([tx.id]);
    expect(data(await provider.client.listTransactions({ status: 'funds_held' })).map((t) => t.id)).toEqual([later.id]);
    expect(data(await provider.client.listTransactions({ status: 'executing' }))).toEqual([]);
  });
});

describe('what agents write is given back as written', () => {
  it('keeps the keys of input, output, metadata and the contract\'s schemas as sent (snake_case, kebab-case, nested)', async () => {
    const [provider, consumer] = await Promise.all([party(), funded(5000)]);
    const inputSchema = { type: 'object', required: ['payload_text'], properties: { payload_text: { type: 'string' }, 'hash-options': { type: 'object', properties: { salt_value: { type: 'string' } } } } };
    const outputSchema = { type: 'object', required: ['hex_digest'], properties: { hex_digest: { type: 'string' } } };
    const service = data(await provider.client.createService(serviceBody({ inputSchema, outputSchema })));
    expect(data(await consumer.client.getService(service.id))).toMatchObject({ inputSchema, outputSchema });
    const input = { payload_text: 'x', 'hash-options': { salt_value: 'y' } };
    const metadata = { order_ref: { line_items: [{ sku_code: 'a' }] } };
    const created = data(await consumer.client.createTransaction({ serviceId: service.id, input, metadata }));
    expect(created).toMatchObject({ input, metadata });
    const output = { hex_digest: 'abc' };
    const delivered = data(await provider.client.deliver(created.id, output));
    expect(delivered).toMatchObject({ input, metadata, output });
    // A delivery written at commit answers with the row as committed, not as it was predicted.
    expect(data(await consumer.client.getTransaction(created.id))).toEqual(delivered);
  });
});

describe('refusals at creation (D9.1, D9.2, D9.3, D6.5, D10)', () => {
  let provider: Party;
  let consumer: Party;
  let serviceId: string;

  beforeAll(async () => {
    [provider, consumer] = await Promise.all([party(), funded(3000)]);
    serviceId = data(await provider.client.createService(serviceBody())).id;
  });

  it('refuses buying one\'s own service, an unknown service and a paused one', async () => {
    expectError(await provider.client.createTransaction({ serviceId, input: INPUT }), 400, 'VALIDATION_ERROR');
    const unknown = await consumer.client.createTransaction({ serviceId: randomUUID(), input: INPUT });
    expectError(unknown, 404, 'NOT_FOUND');
    const paused = data(await provider.client.createService(serviceBody()));
    data(await provider.client.updateService(paused.id, { status: 'paused' }));
    expectError(await consumer.client.createTransaction({ serviceId: paused.id, input: INPUT }), 409, 'SERVICE_NOT_ACTIVE');
  });

  it('refuses input that fails the inputSchema, one entry per violation under /input', async () => {
    const r = await consumer.client.createTransaction({ serviceId, input: { payload: '', algorithm: 'md5', extra: 1 } });
    expectError(r, 400, 'SCHEMA_VALIDATION_FAILED');
    if (!r.ok) {
      expect(r.error.errors.length).toBeGreaterThanOrEqual(3);
      expect(r.error.errors.every((e) => e.code === 'SCHEMA_VALIDATION_FAILED' && e.field?.startsWith('/input'))).toBe(true);
    }
  });

  it('refuses an unsigned creation, an anonymous one, and units on a fixed price', async () => {
    expectError(await ex.anon.as({ apiKey: consumer.apiKey }).createTransaction({ serviceId, input: INPUT }), 401, 'SIGNATURE_REQUIRED');
    expectError(await ex.anon.createTransaction({ serviceId, input: INPUT }), 401, 'UNAUTHENTICATED');
    expectError(await consumer.client.createTransaction({ serviceId, input: INPUT, units: 2 }), 400, 'VALIDATION_ERROR');
  });

  it('answers 402 when the wallet cannot hold the price, leaving no hold (the transaction failed)', async () => {
    const poor = await funded(500);
    const r = await poor.client.createTransaction({ serviceId, input: INPUT });
    expectError(r, 402, 'INSUFFICIENT_FUNDS');
    expect(await wallet(poor)).toMatchObject({ balanceCents: 500, heldCents: 0 });
    const [failed] = data(await poor.client.listTransactions());
    expect(failed).toMatchObject({ status: 'failed', statusReason: 'insufficient_funds' });
  });

  it('applies delegation in the decided order with {rule, limit, attempted} (D10.2)', async () => {
    // A consumer of its own: its rules change all through this test.
    const consumer = await funded(3000);
    const owner = consumer.owner;
    data(await owner.client.setAgentDelegation(consumer.agentId, { blockedCategories: ['crypto'], maxTransactionCents: 500 }));
    let r = await consumer.client.createTransaction({ serviceId, input: INPUT });
    expectError(r, 403, 'DELEGATION_EXCEEDED');
    if (!r.ok) expect(r.error.errors[0]!.details).toEqual({ rule: 'blockedCategories', limit: ['crypto'], attempted: 'crypto' });
    data(await owner.client.setAgentDelegation(consumer.agentId, { maxTransactionCents: 500 }));
    r = await consumer.client.createTransaction({ serviceId, input: INPUT });
    if (!r.ok) expect(r.error.errors[0]!.details).toEqual({ rule: 'maxTransactionCents', limit: 500, attempted: 1000 });
    expectError(r, 403, 'DELEGATION_EXCEEDED');
    data(await owner.client.setAgentDelegation(consumer.agentId, { maxDailySpendCents: 1500 }));
    const first = data(await consumer.client.createTransaction({ serviceId, input: INPUT }));
    expect(first.status).toBe('funds_held');
    r = await consumer.client.createTransaction({ serviceId, input: INPUT });
    expectError(r, 403, 'DELEGATION_EXCEEDED');
    if (!r.ok) expect(r.error.errors[0]!.details).toEqual({ rule: 'maxDailySpendCents', limit: 1500, attempted: 2000 });
    // A refunded transaction no longer counts.
    data(await consumer.client.cancel(first.id));
    expect(data(await consumer.client.createTransaction({ serviceId, input: INPUT })).status).toBe('funds_held');
    // Last in the order, a price needing a human's approval is not refused: it waits for one (D10.3).
    data(await owner.client.setAgentDelegation(consumer.agentId, { requireHumanApprovalAboveCents: 999, maxTransactionCents: 999 }));
    expectError(await consumer.client.createTransaction({ serviceId, input: INPUT }), 403, 'DELEGATION_EXCEEDED');
    data(await owner.client.setAgentDelegation(consumer.agentId, { requireHumanApprovalAboveCents: 999 }));
    r = await consumer.client.createTransaction({ serviceId, input: INPUT });
    expect(r.ok && [r.status, r.data.status, r.data.approval]).toEqual([202, 'awaiting_approval', expect.objectContaining({ rule: 'requireHumanApprovalAboveCents', limit: 999, attempted: 1000 })]);
    data(await owner.client.setAgentDelegation(consumer.agentId, {}));
    data(await owner.client.setAccountDelegation(owner.accountId, { autoApproveBelow: 1000 }));
    expect(data(await consumer.client.createTransaction({ serviceId, input: INPUT })).status).toBe('awaiting_approval');
  });

  it('refuses a deactivated agent with 403 AGENT_INACTIVE while its transactions go on', async () => {
    const buyer = await funded(2000);
    const held = data(await buyer.client.createTransaction({ serviceId, input: INPUT }));
    data(await buyer.owner.client.deactivateAgent(buyer.agentId));
    expectError(await buyer.client.createTransaction({ serviceId, input: INPUT }), 403, 'AGENT_INACTIVE');
    expect(data(await provider.client.deliver(held.id, OUTPUT)).status).toBe('delivered');
    expect(data(await buyer.client.verify(held.id)).status).toBe('settled');
  });
});

describe('pricing by units and graduated tiers (D9.3)', () => {
  it('charges per unit, and tiered prices slice by slice', async () => {
    const [provider, consumer] = await Promise.all([party(), funded(10_000)]);
    const perUnit = data(await provider.client.createService(serviceBody({ pricing: { model: 'per_unit', basePriceCents: 30, unit: 'page' } })));
    expect(data(await consumer.client.createTransaction({ serviceId: perUnit.id, input: INPUT, units: 7 }))).toMatchObject({ agreedPriceCents: 210, platformFeeCents: 11, units: 7 });
    const tiered = data(await provider.client.createService(serviceBody({ pricing: { model: 'tiered', basePriceCents: 100, tiers: [{ upToUnits: 10, unitPriceCents: 100 }, { upToUnits: 100, unitPriceCents: 50 }, { upToUnits: null, unitPriceCents: 10 }] } })));
    // 10 × 100 + 90 × 50 + 20 × 10
    expect(data(await consumer.client.createTransaction({ serviceId: tiered.id, input: INPUT, units: 120 }))).toMatchObject({ agreedPriceCents: 5700, platformFeeCents: 285 });
    expectError(await provider.client.createService(serviceBody({ pricing: { model: 'tiered', basePriceCents: 100, tiers: [{ upToUnits: 10, unitPriceCents: 100 }] } })), 400, 'VALIDATION_ERROR');
  });
});

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
    ex.clock.advance(1_500);
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

describe('delivery checked against the pinned contract (D9.7)', () => {
  it('moves to validation_failed with 400, then failed with the hold returned once the attempts are spent', async () => {
    const [provider, consumer] = await Promise.all([party(), funded(2000)]);
    const service = data(await provider.client.createService(serviceBody({ sla: { maxLatencyMs: 1000, timeoutMs: 600_000, maxRetries: 1 } })));
    const t = data(await consumer.client.createTransaction({ serviceId: service.id, input: INPUT }));
    // The provider changes its output schema after the sale: the transaction keeps the old one.
    data(await provider.client.updateService(service.id, { outputSchema: { type: 'object' } }));
    const bad = await provider.client.deliver(t.id, { digest: 'NOT-HEX' });
    expectError(bad, 400, 'OUTPUT_VALIDATION_FAILED');
    if (!bad.ok) expect(bad.error.errors[0]).toMatchObject({ field: '/output/digest', details: { status: 'validation_failed', attemptsLeft: 1 } });
    expect(data(await consumer.client.getTransaction(t.id))).toMatchObject({ status: 'validation_failed', deliveryAttempts: 1 });
    expectError(await provider.client.deliver(t.id, { digest: 'still wrong' }), 400, 'OUTPUT_VALIDATION_FAILED');
    expect(data(await consumer.client.getTransaction(t.id))).toMatchObject({ status: 'failed', statusReason: 'output_validation_failed', deliveryAttempts: 2 });
    await expect.poll(async () => (await wallet(consumer)).heldCents).toBe(0);
    expect(await ledgerOf(consumer, t.id)).toEqual([['fund_hold', -1000], ['fund_return', 1000]]);
    expectError(await provider.client.deliver(t.id, OUTPUT), 409, 'INVALID_STATE');
  });

  it('accepts a good delivery after a bad one', async () => {
    const [provider, consumer] = await Promise.all([party(), funded(2000)]);
    const service = data(await provider.client.createService(serviceBody()));
    const t = data(await consumer.client.createTransaction({ serviceId: service.id, input: INPUT }));
    expectError(await provider.client.deliver(t.id, {}), 400, 'OUTPUT_VALIDATION_FAILED');
    expect(data(await provider.client.deliver(t.id, OUTPUT))).toMatchObject({ status: 'delivered', deliveryAttempts: 2 });
  });
});

describe('cancellation and expiry return the hold (D9.7)', () => {
  it('lets either party cancel before executing; the funds come back', async () => {
    const [provider, consumer] = await Promise.all([party(), funded(2000)]);
    const service = data(await provider.client.createService(serviceBody()));
    const t = data(await consumer.client.createTransaction({ serviceId: service.id, input: INPUT }));
    expect(data(await provider.client.cancel(t.id))).toMatchObject({ status: 'cancelled', statusReason: 'cancelled_by_provider' });
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 2000, heldCents: 0 });
    expectError(await consumer.client.cancel(t.id), 409, 'INVALID_STATE');
    const started = data(await consumer.client.createTransaction({ serviceId: service.id, input: INPUT }));
    data(await provider.client.startWork(started.id));
    const r = await consumer.client.cancel(started.id);
    expectError(r, 409, 'INVALID_STATE');
    if (!r.ok) expect(r.error.errors[0]!.details).toMatchObject({ status: 'executing' });
  });

  it('expires at expiresAt with the hold returned', async () => {
    const [provider, consumer] = await Promise.all([party(), funded(2000)]);
    const service = data(await provider.client.createService(serviceBody({ sla: { maxLatencyMs: 500, timeoutMs: 3000 } })));
    const t = data(await consumer.client.createTransaction({ serviceId: service.id, input: INPUT }));
    data(await provider.client.startWork(t.id));
    const expired = await waitFor(consumer, t.id, 'expired', 15_000);
    expect(expired.statusReason).toBe('sla_timeout');
    await expect.poll(async () => (await wallet(consumer)).heldCents).toBe(0);
    expectError(await provider.client.deliver(t.id, OUTPUT), 409, 'INVALID_STATE');
  });
});

describe('idempotent creation (D5.5)', () => {
  it('holds once for a repeated Idempotency-Key and replays the answer', async () => {
    const [provider, consumer] = await Promise.all([party(), funded(3000)]);
    const service = data(await provider.client.createService(serviceBody()));
    const key = randomUUID();
    const first = await consumer.client.createTransaction({ serviceId: service.id, input: INPUT }, { idempotencyKey: key });
    const again = await consumer.client.createTransaction({ serviceId: service.id, input: INPUT }, { idempotencyKey: key });
    expect(again.status).toBe(first.status);
    expect(data(again).id).toBe(data(first).id);
    expect(again.headers?.get('idempotent-replayed')).toBe('true');
    expect(await wallet(consumer)).toMatchObject({ heldCents: 1000 });
    expect(data(await consumer.client.listTransactions())).toHaveLength(1);
  });
});

describe('limits and the pinned validators (D9.6)', () => {
  it('refuses a 101st transaction in progress with 409 LIMIT_REACHED, for either party', async () => {
    const [provider, consumer, other] = await Promise.all([party(), funded(1000), funded(1000)]);
    const serviceId = data(await provider.client.createService(serviceBody({ pricing: { model: 'negotiable', basePriceCents: 1000 } }))).id;
    // Negotiating transactions hold nothing: a hundred of them cost the consumer nothing yet.
    for (let i = 0; i < 100; i += 10) {
      await Promise.all(Array.from({ length: 10 }, async () => expect(data(await consumer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 500 })).status).toBe('negotiating')));
    }
    const r = await consumer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 500 });
    expectError(r, 409, 'LIMIT_REACHED');
    if (!r.ok) expect(r.error.errors[0]!.details).toEqual({ limit: 100, party: 'consumer' });
    // The provider has 100 in progress too: nobody can open another with it.
    const viaOther = await other.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 500 });
    expectError(viaOther, 409, 'LIMIT_REACHED');
    if (!viaOther.ok) expect(viaOther.error.errors[0]!.details).toEqual({ limit: 100, party: 'provider' });
    // Ending one frees a place.
    const [first] = data(await consumer.client.listTransactions({ status: 'negotiating', limit: 1 }));
    data(await consumer.client.cancel(first!.id));
    expect(data(await consumer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 500 })).status).toBe('negotiating');
  });

  it('compiles a contract revision\'s validators once, not per request', async () => {
    const [provider, consumer] = await Promise.all([party(), funded(10_000)]);
    const serviceId = data(await provider.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: 100 } }))).id;
    const contracts = ex.transactions!.deps.contracts;
    const t = data(await consumer.client.createTransaction({ serviceId, input: INPUT }));
    data(await provider.client.deliver(t.id, OUTPUT));
    const before = contracts.compiles;
    for (let i = 0; i < 5; i++) {
      const next = data(await consumer.client.createTransaction({ serviceId, input: INPUT }));
      data(await provider.client.deliver(next.id, OUTPUT));
    }
    expect(contracts.compiles).toBe(before);
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
    data(await provider.client.deliver(t.id, OUTPUT));
    const answers = (await Promise.all(Array.from({ length: 10 }, () => consumer.client.verify(t.id, { qualityScore: 80 })))).map(outcome);
    expect(answers.filter((a) => a === 200 || a === 202)).toHaveLength(1);
    expect(answers.filter((a) => typeof a === 'string' && /^409 INVALID_STATE (delivered|settled)$/.test(a))).toHaveLength(9);
    await waitFor(consumer, t.id, 'settled');
    expect(await ledgerOf(consumer, t.id)).toEqual([['fund_hold', -1000], ['fund_release', 1000], ['settlement_out', -1000]]);
  });

  it('deliver racing cancel: one of them moves the transaction, the other answers 409', async () => {
    for (let i = 0; i < 3; i++) {
      const t = data(await consumer.client.createTransaction({ serviceId, input: INPUT }));
      const [delivered, cancelled] = await Promise.all([provider.client.deliver(t.id, OUTPUT), consumer.client.cancel(t.id)]);
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

describe('the ledger after every flow above (D13.2, D13.3)', () => {
  it('holds every invariant: holds closed once, entries matching them, money conserved with the platform wallet', async () => {
    const report = data(await ex.admin.checkLedger());
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
  });
});
