import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { unwrap, type Outcome } from '@agent-exchange/client';
import { expectError } from './harness.js';
import { createHeld, INPUT, OUTPUT, serviceBody, ledgerOf, recordingSuite, wallet, waitForStatus, type Party } from './transaction-kit.js';

// The gateway: every route of transactions, each error and each caller (consumer, provider, third
// party, other agent of the account, anonymous, deactivated). Negotiation and concurrent requests
// for the same move are in transactions-negotiation-and-races.test.ts.

const suite = recordingSuite();
const data = <T>(r: Outcome<T>): T => unwrap(r);
const { party, funded, eventsOf } = suite;
const waitFor = waitForStatus;

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
    expectError(await suite.ex().anon.getTransaction(tx.id), 401, 'UNAUTHENTICATED');
    expectError(await stranger.client.cancel(tx.id), 404, 'NOT_FOUND');
    expectError(await stranger.client.negotiations(tx.id), 404, 'NOT_FOUND');
  });

  purchaseTest('lets only the provider start and deliver, and only the consumer verify (D9.8)', async ({ provider, consumer, tx }) => {
    expectError(await consumer.client.startWork(tx.id), 403, 'FORBIDDEN');
    expectError(await consumer.client.deliver(tx.id, { output: OUTPUT }), 403, 'FORBIDDEN');
    expectError(await provider.client.verify(tx.id), 403, 'FORBIDDEN');
    expectError(await consumer.client.verify(tx.id), 409, 'INVALID_STATE');
  });

  purchaseTest('requires the signature on deliver (D3.3)', async ({ provider, tx }) => {
    const unsigned = suite.ex().anon.as({ apiKey: provider.apiKey });
    expectError(await unsigned.deliver(tx.id, { output: OUTPUT }), 401, 'SIGNATURE_REQUIRED');
  });

  purchaseTest('starts (EXT), then delivers valid output; no cancel once delivered', async ({ provider, consumer, tx }) => {
    expect(data(await provider.client.startWork(tx.id)).status).toBe('executing');
    const d = data(await provider.client.deliver(tx.id, { output: OUTPUT }));
    expect(d).toMatchObject({ status: 'delivered', output: OUTPUT, deliveryAttempts: 1 });
    expect(d.deliveredAt).not.toBeNull();
    expectError(await consumer.client.cancel(tx.id), 409, 'INVALID_STATE');
  });

  purchaseTest('verifies: settled at once, the provider paid minus the fee, the fee in the platform wallet', async ({ provider, consumer, tx }) => {
    data(await provider.client.deliver(tx.id, { output: OUTPUT }));
    const r = await consumer.client.verify(tx.id, { qualityScore: 95, notes: 'correct digest' });
    expect(r.status).toBe(200);
    expect(data(r)).toMatchObject({ status: 'settled', qualityScore: 95, notes: 'correct digest' });
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 4000, heldCents: 0, lifetimeSpentCents: 1000 });
    expect(await wallet(provider)).toMatchObject({ balanceCents: 950, heldCents: 0, lifetimeEarnedCents: 1000 });
    expect(await ledgerOf(consumer, tx.id)).toEqual([['fund_hold', -1000], ['fund_release', 1000], ['settlement_out', -1000]]);
    expect(await ledgerOf(provider, tx.id)).toEqual([['platform_fee', -50], ['settlement_in', 1000]]);
    expect(data(await suite.ex().admin.checkLedger())).toMatchObject({ ok: true, violations: [] });
  });

  purchaseTest('announces every move as transaction.<status> with both parties and the previous status (D9.7, D14.1)', async ({ provider, consumer, serviceId, tx }) => {
    data(await provider.client.startWork(tx.id));
    data(await provider.client.deliver(tx.id, { output: OUTPUT }));
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
      // D18.3: the event that ended the purchase carries its receipt.
      receipt: data(await consumer.client.receipt(tx.id)).receipt,
    });
  });

  purchaseTest('lists it for both parties, newest first, filtered by role and status', async ({ provider, consumer, serviceId, tx }) => {
    data(await provider.client.deliver(tx.id, { output: OUTPUT }));
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
    const delivered = data(await provider.client.deliver(created.id, { output: output }));
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
    expectError(await suite.ex().anon.as({ apiKey: consumer.apiKey }).createTransaction({ serviceId, input: INPUT }), 401, 'SIGNATURE_REQUIRED');
    expectError(await suite.ex().anon.createTransaction({ serviceId, input: INPUT }), 401, 'UNAUTHENTICATED');
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
    expect(data(await provider.client.deliver(held.id, { output: OUTPUT })).status).toBe('delivered');
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

describe('delivery checked against the pinned contract (D9.7)', () => {
  it('moves to validation_failed with 400, then failed with the hold returned once the attempts are spent', async () => {
    const [provider, consumer] = await Promise.all([party(), funded(2000)]);
    const service = data(await provider.client.createService(serviceBody({ sla: { maxLatencyMs: 1000, timeoutMs: 600_000, maxRetries: 1 } })));
    const t = data(await consumer.client.createTransaction({ serviceId: service.id, input: INPUT }));
    // The provider changes its output schema after the sale: the transaction keeps the old one.
    data(await provider.client.updateService(service.id, { outputSchema: { type: 'object' } }));
    const bad = await provider.client.deliver(t.id, { output: { digest: 'NOT-HEX' } });
    expectError(bad, 400, 'OUTPUT_VALIDATION_FAILED');
    if (!bad.ok) expect(bad.error.errors[0]).toMatchObject({ field: '/output/digest', details: { status: 'validation_failed', attemptsLeft: 1 } });
    expect(data(await consumer.client.getTransaction(t.id))).toMatchObject({ status: 'validation_failed', deliveryAttempts: 1 });
    expectError(await provider.client.deliver(t.id, { output: { digest: 'still wrong' } }), 400, 'OUTPUT_VALIDATION_FAILED');
    expect(data(await consumer.client.getTransaction(t.id))).toMatchObject({ status: 'failed', statusReason: 'output_validation_failed', deliveryAttempts: 2 });
    await expect.poll(async () => (await wallet(consumer)).heldCents).toBe(0);
    expect(await ledgerOf(consumer, t.id)).toEqual([['fund_hold', -1000], ['fund_return', 1000]]);
    expectError(await provider.client.deliver(t.id, { output: OUTPUT }), 409, 'INVALID_STATE');
  });

  it('accepts a good delivery after a bad one', async () => {
    const [provider, consumer] = await Promise.all([party(), funded(2000)]);
    const service = data(await provider.client.createService(serviceBody()));
    const t = data(await consumer.client.createTransaction({ serviceId: service.id, input: INPUT }));
    expectError(await provider.client.deliver(t.id, { output: {} }), 400, 'OUTPUT_VALIDATION_FAILED');
    expect(data(await provider.client.deliver(t.id, { output: OUTPUT }))).toMatchObject({ status: 'delivered', deliveryAttempts: 2 });
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
    expectError(await provider.client.deliver(t.id, { output: OUTPUT }), 409, 'INVALID_STATE');
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
    const contracts = suite.ex().transactions!.deps.contracts;
    const t = data(await consumer.client.createTransaction({ serviceId, input: INPUT }));
    data(await provider.client.deliver(t.id, { output: OUTPUT }));
    const before = contracts.compiles;
    for (let i = 0; i < 5; i++) {
      const next = data(await consumer.client.createTransaction({ serviceId, input: INPUT }));
      data(await provider.client.deliver(next.id, { output: OUTPUT }));
    }
    expect(contracts.compiles).toBe(before);
  });
});

describe('the ledger after a purchase ended each way (D13.2, D13.3)', () => {
  it('holds every invariant: holds closed once, entries matching them, money conserved with the platform wallet', async () => {
    // Its own purchases, so that it checks money moved each way whichever order the tests run in
    // (and with them what the tests before it moved).
    await endEachWay();
    const report = data(await suite.ex().admin.checkLedger());
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
  });
});

/**
 * Purchases of one consumer ended each way money moves, each awaited to its end: settled by one of
 * ten racing verifies, cancelled, failed once its delivery attempts were spent, and refused for want
 * of funds.
 */
async function endEachWay(): Promise<void> {
  const [provider, consumer, poor] = await Promise.all([party(), funded(10_000), funded(500)]);
  const serviceId = data(await provider.client.createService(serviceBody())).id;
  const [settled, cancelled, failed] = await Promise.all([1, 2, 3].map(() => createHeld(consumer, { serviceId, input: INPUT })));
  data(await provider.client.deliver(settled!.id, { output: OUTPUT }));
  await Promise.all(Array.from({ length: 10 }, () => consumer.client.verify(settled!.id)));
  data(await provider.client.cancel(cancelled!.id));
  for (const output of [{}, { digest: 'not hex' }]) expectError(await provider.client.deliver(failed!.id, { output: output }), 400, 'OUTPUT_VALIDATION_FAILED');
  expectError(await poor.client.createTransaction({ serviceId, input: INPUT }), 402, 'INSUFFICIENT_FUNDS');
  await waitFor(consumer, settled!.id, 'settled');
  await waitFor(consumer, failed!.id, 'failed');
  await expect.poll(async () => (await wallet(consumer)).heldCents, { timeout: 10_000 }).toBe(0);
}
