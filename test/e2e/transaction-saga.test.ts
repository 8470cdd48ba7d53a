import pg from 'pg';
import { describe, expect } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { exchangeTest } from './fixtures.js';
import { expectError, type TestExchange } from './harness.js';
import { createHeld, funded, INPUT, ledgerOf, OUTPUT, party, serviceBody, wallet, waitForStatus } from './transaction-kit.js';

// The hold/settle saga with the wallet stopped, slow and back, and the transaction
// service restarted mid-saga and mid-timer (D9.9, D9.7, D11.4): 202 while the wallet is away, the
// saga finishing by itself, nothing lost or applied twice, timers firing once after a restart.

const it = exchangeTest({ SAGA_WAIT_MS: '400' }, { timerPollMs: 100 });

describe('with the wallet stopped (D9.9)', () => {
  it('answers 202 initiated, then the hold is placed once the wallet is back', async ({ exchange: ex, service: serviceId, consumer }) => {
    await ex.stopWallet();
    try {
      const r = await consumer.client.createTransaction({ serviceId, input: INPUT });
      expect(r.status).toBe(202);
      expect(unwrap(r)).toMatchObject({ status: 'initiated', agreedPriceCents: 1000, fundsHeldAt: null });
      expect(unwrap(await consumer.client.getTransaction(unwrap(r).id)).status).toBe('initiated');
    } finally {
      await ex.startWallet();
    }
    const [t] = unwrap(await consumer.client.listTransactions());
    const held = await waitForStatus(consumer, t!.id, 'funds_held');
    expect(held.fundsHeldAt).not.toBeNull();
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 3000, heldCents: 1000 });
  });

  it('answers 202 while the wallet is slow (the consumer\'s wallet row locked), then funds_held once it gets through', async ({ exchange: ex, service: serviceId, consumer }) => {
    // Another session holds the wallet row: the wallet's hold step waits on it, as behind a slow disk.
    const blocker = new pg.Client({ connectionString: ex.databaseUrl });
    await blocker.connect();
    let id: string;
    try {
      await blocker.query('begin');
      await blocker.query('select 1 from wallet.wallets where agent_id = $1 for update', [consumer.agentId]);
      const r = await consumer.client.createTransaction({ serviceId, input: INPUT });
      expect(r.status).toBe(202);
      id = unwrap(r).id;
      expect(unwrap(await consumer.client.getTransaction(id)).status).toBe('initiated');
      await blocker.query('commit');
    } finally {
      await blocker.end();
    }
    await waitForStatus(consumer, id, 'funds_held');
    expect(await wallet(consumer)).toMatchObject({ heldCents: 1000 });
  });

  it('fails a transaction the wallet refuses once it is back, holding nothing', async ({ exchange: ex, service: serviceId }) => {
    const poor = await funded(ex, 500);
    await ex.stopWallet();
    let id: string;
    try {
      const r = await poor.client.createTransaction({ serviceId, input: INPUT });
      expect(r.status).toBe(202);
      id = unwrap(r).id;
    } finally {
      await ex.startWallet();
    }
    const failed = await waitForStatus(poor, id, 'failed');
    expect(failed.statusReason).toBe('insufficient_funds');
    expect(await wallet(poor)).toMatchObject({ balanceCents: 500, heldCents: 0 });
  });

  it('answers verify 202 delivered, and settles once the wallet is back', async ({ exchange: ex, provider, service: serviceId, consumer }) => {
    const t = await createHeld(consumer, { serviceId, input: INPUT });
    unwrap(await provider.client.deliver(t.id, { output: OUTPUT }));
    await ex.stopWallet();
    try {
      const r = await consumer.client.verify(t.id, { qualityScore: 80 });
      expect(r.status).toBe(202);
      expect(unwrap(r).status).toBe('delivered');
      // A second verify while the settlement is on its way is refused: the first made the move (D9.14).
      const second = await consumer.client.verify(t.id);
      expect([second.status, !second.ok && second.error.code]).toEqual([409, 'INVALID_STATE']);
    } finally {
      await ex.startWallet();
    }
    const settled = await waitForStatus(consumer, t.id, 'settled');
    expect(settled.qualityScore).toBe(80);
    expect(await ledgerOf(provider, t.id)).toEqual([['platform_fee', -50], ['settlement_in', 1000]]);
    expect(await ledgerOf(consumer, t.id)).toEqual([['fund_hold', -1000], ['fund_release', 1000], ['settlement_out', -1000]]);
  });

  it('returns nothing twice when a transaction is cancelled before the wallet saw its hold, and shows it cancelled once returned (terminal means settled)', async ({ exchange: ex, service: serviceId, consumer }) => {
    await ex.stopWallet();
    let id: string;
    try {
      id = unwrap(await consumer.client.createTransaction({ serviceId, input: INPUT })).id;
      // D9.9: the wallet is away, so the cancellation waits for it: 202, the status as it still is.
      const asked = await consumer.client.cancel(id);
      expect(asked.status).toBe(202);
      expect(unwrap(asked)).toMatchObject({ status: 'initiated' });
      expectError(await consumer.client.cancel(id), 409, 'INVALID_STATE');
    } finally {
      await ex.startWallet();
    }
    expect(await waitForStatus(consumer, id, 'cancelled')).toMatchObject({ statusReason: 'cancelled_by_consumer' });
    // Hold and return reach the wallet in either order: in the end the hold is closed (returned, or
    // refused for good when the return came first), nothing is held and nothing moved twice.
    const closed = async () => {
      const h = await ex.wallet!.deps.db.selectFrom('holds').select(['status', 'refusal']).where('transactionId', '=', id).executeTakeFirst();
      return h?.status === 'returned' || h?.refusal === 'closed';
    };
    await expect.poll(closed, { timeout: 10_000 }).toBe(true);
    expect((await wallet(consumer)).heldCents).toBe(0);
    expect((await wallet(consumer)).balanceCents).toBe(3000);
    const entries = await ledgerOf(consumer, id);
    expect([[], [['fund_hold', -1000], ['fund_return', 1000]]]).toContainEqual(entries);
  });

  it('answers an accept 202 while the wallet is away, then funds_held through matched', async ({ exchange: ex }) => {
    const { provider, consumer, t } = await offered700(ex);
    await ex.stopWallet();
    try {
      const r = await provider.client.negotiate(t.id, { type: 'accept', terms: {} });
      expect(r.status).toBe(202);
      expect(unwrap(r).status).toBe('negotiating');
      expectError(await consumer.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 800 } }), 409, 'INVALID_STATE');
    } finally {
      await ex.startWallet();
    }
    const held = await waitForStatus(consumer, t.id, 'funds_held');
    expect(held.agreedPriceCents).toBe(700);
    expect(unwrap(await consumer.client.negotiations(t.id)).map((m) => m.messageType)).toEqual(['initial_offer', 'accept']);
  });
});

/** A negotiable service and a consumer's opening offer of 700 cents, awaiting the provider's answer. */
async function offered700(ex: TestExchange) {
  const provider = await party(ex);
  const serviceId = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'negotiable', basePriceCents: 1000 } }))).id;
  const consumer = await funded(ex, 3000);
  const t = unwrap(await consumer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 700 }));
  return { provider, consumer, t };
}

describe('cancelled while a negotiated accept waits for its hold', () => {
  it('shows the agreed price its ledger shows held and returned, and returns the hold once', async ({ exchange: ex }) => {
    const { provider, consumer, t } = await offered700(ex);
    await ex.stopWallet();
    try {
      expect((await provider.client.negotiate(t.id, { type: 'accept', terms: {} })).status).toBe(202);
      const asked = await consumer.client.cancel(t.id);
      expect(asked.status).toBe(202);
      expect(unwrap(asked)).toMatchObject({ status: 'negotiating', agreedPriceCents: 700, platformFeeCents: 35 });
    } finally {
      await ex.startWallet();
    }
    expect(await waitForStatus(consumer, t.id, 'cancelled')).toMatchObject({ statusReason: 'cancelled_by_consumer', agreedPriceCents: 700, platformFeeCents: 35 });
    await expect.poll(async () => (await wallet(consumer)).heldCents, { timeout: 10_000 }).toBe(0);
    const entries = await ledgerOf(consumer, t.id);
    // Whichever reached the wallet first: nothing moved, or the hold and its return, of the agreed price.
    expect([[], [['fund_hold', -700], ['fund_return', 700]]]).toContainEqual(entries);
    expect((await wallet(consumer)).balanceCents).toBe(3000);
    expect(unwrap(await consumer.client.getTransaction(t.id))).toMatchObject({ status: 'cancelled', agreedPriceCents: 700 });
  });
});

describe('with the transaction service restarted (docs/messaging.md "Durable timers", D9.7, D11.4)', () => {
  it('places a hold the wallet confirmed while the service was down', async ({ exchange: ex, service: serviceId, consumer }) => {
    await ex.stopWallet();
    const id = unwrap(await consumer.client.createTransaction({ serviceId, input: INPUT })).id;
    await ex.stopTransactions();
    await ex.startWallet();
    await expect.poll(async () => (await wallet(consumer)).heldCents, { timeout: 10_000 }).toBe(1000);
    await ex.startTransactions();
    expect(await waitForStatus(consumer, id, 'funds_held')).toMatchObject({ agreedPriceCents: 1000 });
    // Placed once: one hold in the ledger, and the wallet holding the price.
    expect(await ledgerOf(consumer, id)).toEqual([['fund_hold', -1000]]);
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 3000, heldCents: 1000 });
  });

  it('expires a transaction whose expiresAt passed while the service was down, once', async ({ exchange: ex, provider, consumer }) => {
    const serviceId = unwrap(await provider.client.createService(serviceBody({ sla: { maxLatencyMs: 500, timeoutMs: 1000 } }))).id;
    // Whatever the answer (201, or 202 on a loaded machine), the deadline is fundsHeldAt + 1 s.
    const t = unwrap(await consumer.client.createTransaction({ serviceId, input: INPUT }));
    await ex.stopTransactions();
    // Its deadline passes while the service is down.
    ex.clock.advance(1500);
    await ex.startTransactions();
    const expired = await waitForStatus(consumer, t.id, 'expired', 10_000);
    expect(expired.statusReason).toBe('sla_timeout');
    await expect.poll(async () => (await wallet(consumer)).heldCents).toBe(0);
    expect(await ledgerOf(consumer, t.id)).toEqual([['fund_hold', -1000], ['fund_return', 1000]]);
  });

  it('cancels a negotiation whose offer expired while the service was down', async ({ exchange: ex, provider, consumer }) => {
    const serviceId = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'negotiable', basePriceCents: 1000 } }))).id;
    const t = unwrap(await consumer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 700 }));
    unwrap(await provider.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 900 }, expiresInSeconds: 1 }));
    await ex.stopTransactions();
    ex.clock.advance(1300);
    await ex.startTransactions();
    const cancelled = await waitForStatus(consumer, t.id, 'cancelled', 10_000);
    expect(cancelled.statusReason).toBe('offer_expired');
  });

  it('leaves the ledger whole after all of it', async ({ exchange: ex, consumer, delivered: t }) => {
    // A purchase of its own settled across a restart, so that there is one to check whichever order
    // the tests run in.
    await ex.stopTransactions();
    await ex.startTransactions();
    unwrap(await consumer.client.verify(t.id));
    await waitForStatus(consumer, t.id, 'settled');
    const report = unwrap(await ex.admin.checkLedger());
    expect(report.violations).toEqual([]);
  });
});
