import { describe, expect } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { exchangeTest } from './fixtures.js';
import { expectError, type TestExchange } from './harness.js';
import { createHeld, funded, INPUT, ledgerOf, OUTPUT, party, serviceBody, wallet, waitForStatus } from './transaction-kit.js';

// D9.7 (EXT): a delivered transaction with neither verify nor dispute settles by
// itself when its review window ends (REVIEW_WINDOW_SECONDS, 1 s here) — by a durable timer, once,
// also when the window ended while the transaction service was down. The window is on the
// transaction as `reviewEndsAt` while it is `delivered`.

const WINDOW_MS = 1000;
const it = exchangeTest({ REVIEW_WINDOW_SECONDS: String(WINDOW_MS / 1000), SAGA_WAIT_MS: '2000' }, { timerPollMs: 100 });

describe('the review window (D9.7)', () => {
  it('shows when it ends only while the transaction is delivered', async ({ provider, consumer }) => {
    const serviceId = unwrap(await provider.client.createService(serviceBody({ sla: { maxLatencyMs: 60_000, timeoutMs: 600_000, maxRetries: 1 } }))).id;
    const held = await createHeld(consumer, { serviceId, input: INPUT });
    expect(held.reviewEndsAt).toBeNull();
    const bad = await provider.client.deliver(held.id, { output: { digest: 'not hex' } });
    expect(bad.status).toBe(400);
    expect(unwrap(await consumer.client.getTransaction(held.id))).toMatchObject({ status: 'validation_failed', reviewEndsAt: null });
    const t = unwrap(await provider.client.deliver(held.id, { output: OUTPUT }));
    expect(t.status).toBe('delivered');
    expect(Date.parse(t.reviewEndsAt!) - Date.parse(t.deliveredAt!)).toBe(WINDOW_MS);
    // Both parties see it.
    expect(unwrap(await consumer.client.getTransaction(t.id)).reviewEndsAt).toBe(t.reviewEndsAt);
  });

  it('settles by itself when it ends: the provider paid minus the fee, the reason on the transaction', async ({ provider, consumer, delivered: t }) => {
    const settled = await waitForStatus(consumer, t.id, 'settled', 10_000);
    expect(settled).toMatchObject({ statusReason: 'review_window_ended', reviewEndsAt: null, qualityScore: null });
    expect(Date.parse(settled.settledAt!)).toBeGreaterThanOrEqual(Date.parse(t.reviewEndsAt!));
    expect(await ledgerOf(consumer, t.id)).toEqual([['fund_hold', -1000], ['fund_release', 1000], ['settlement_out', -1000]]);
    expect(await ledgerOf(provider, t.id)).toEqual([['platform_fee', -50], ['settlement_in', 1000]]);
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 2000, heldCents: 0 });
    expect(await wallet(provider)).toMatchObject({ balanceCents: 950 });
  });

  it('leaves a transaction verified in time alone: one settlement, with the consumer\'s score', async ({ exchange: ex, provider, consumer, delivered: t }) => {
    const v = unwrap(await consumer.client.verify(t.id, { qualityScore: 90 }));
    expect(v).toMatchObject({ status: 'settled', statusReason: null, qualityScore: 90 });
    // The window's end comes: its timer, dropped by the verify, settles nothing again.
    ex.clock.advance(WINDOW_MS + 500);
    await ex.transactions!.fireDueTimers();
    expect(unwrap(await consumer.client.getTransaction(t.id))).toMatchObject({ status: 'settled', statusReason: null, qualityScore: 90 });
    expect(await ledgerOf(provider, t.id)).toEqual([['platform_fee', -50], ['settlement_in', 1000]]);
  });

  it('settles once when the window ended while the transaction service was down', async ({ exchange: ex, provider, consumer, delivered: t }) => {
    await ex.stopTransactions();
    // The window ends while the service is down.
    ex.clock.advance(WINDOW_MS + 500);
    await ex.startTransactions();
    const settled = await waitForStatus(consumer, t.id, 'settled', 10_000);
    expect(settled.statusReason).toBe('review_window_ended');
    // A second settlement must not come: nothing to await for it, so its time is waited out.
    await new Promise((r) => setTimeout(r, 500));
    expect(await ledgerOf(provider, t.id)).toEqual([['platform_fee', -50], ['settlement_in', 1000]]);
    expect(await ledgerOf(consumer, t.id)).toEqual([['fund_hold', -1000], ['fund_release', 1000], ['settlement_out', -1000]]);
  });

  it('settles when the window ends while the wallet is away, once it is back', async ({ exchange: ex, provider, consumer, delivered: t }) => {
    await ex.stopWallet();
    try {
      // The window ends: its timer asks the wallet to settle.
      ex.clock.advance(WINDOW_MS + 500);
      await ex.transactions!.fireDueTimers();
      // The settlement is asked for, not yet confirmed: still delivered.
      expect(unwrap(await consumer.client.getTransaction(t.id)).status).toBe('delivered');
    } finally {
      await ex.startWallet();
    }
    expect((await waitForStatus(consumer, t.id, 'settled', 10_000)).statusReason).toBe('review_window_ended');
    expect(await ledgerOf(provider, t.id)).toEqual([['platform_fee', -50], ['settlement_in', 1000]]);
  });

  it('refuses a verify that comes after the window asked for the settlement: the window made the move (D9.14)', async ({ exchange: ex, provider, consumer, delivered: t }) => {
    await ex.stopWallet();
    try {
      ex.clock.advance(WINDOW_MS + 500);
      await ex.transactions!.fireDueTimers();
      const late = await consumer.client.verify(t.id, { qualityScore: 30, notes: 'slow to answer' });
      expectError(late, 409, 'INVALID_STATE');
      expect(!late.ok && late.error.errors[0]!.details).toEqual({ status: 'delivered', settlement: 'in_progress' });
    } finally {
      await ex.startWallet();
    }
    expect(await waitForStatus(consumer, t.id, 'settled', 10_000)).toMatchObject({ statusReason: 'review_window_ended', qualityScore: null, notes: null });
    expect(await ledgerOf(provider, t.id)).toEqual([['platform_fee', -50], ['settlement_in', 1000]]);
    // (2.5 + 0.8) / 6 = 0.55: a settlement without a score counts 0.8 (D15.2). Polled at 4 a second: the
    // provider may read 100 times a minute (D4), and on a loaded machine the gateways learn of the
    // new score only after several seconds.
    await expect.poll(async () => unwrap(await provider.client.getAgent(provider.agentId)).trustScore, { timeout: 20_000, interval: 250 }).toBe(55);
  });

  it('answers a dispute or verify sent as the window ends 201/200 or 409, never 500: one of them makes the move (D9.14)', async ({ exchange: ex }) => {
    // Sent around `reviewEndsAt` by the service's clock, while the timer runner fires the window (every 100 ms here).
    const rounds = await Promise.all(Array.from({ length: 12 }, async (_, i) => {
      const { consumer, t } = await deliveredIn(ex);
      const at = Date.parse(t.reviewEndsAt!) - 150 + (i % 6) * 60;
      // What is waited for is a moment of the services' clock, each request's own around the window's
      // end, while the timer runner fires it: no event marks it, so the time is waited out.
      await new Promise((r) => setTimeout(r, Math.max(0, at - ex.clock.now().getTime())));
      const r = i % 2 === 0
        ? await consumer.client.openDispute(t.id, { reason: 'output_quality', description: 'Sent as the review window ends.' })
        : await consumer.client.verify(t.id, { qualityScore: 70 });
      return { consumer, id: t.id, status: r.status, code: r.ok ? null : r.error.code };
    }));
    for (const r of rounds) {
      const label = JSON.stringify({ id: r.id, status: r.status, code: r.code });
      expect([200, 201, 202, 409], label).toContain(r.status);
      if (r.status === 409) expect(r.code).toBe('INVALID_STATE');
      // A refused request: the window made the move; else the request did — once, as the ledger shows.
      const moved = r.status === 409 ? { status: 'settled', statusReason: 'review_window_ended', qualityScore: null }
        : r.status === 201 ? { status: 'disputed' } : { status: 'settled', statusReason: null, qualityScore: 70 };
      expect(await waitForStatus(r.consumer, r.id, moved.status, 10_000), label).toMatchObject(moved);
      expect(await ledgerOf(r.consumer, r.id), label).toEqual(moved.status === 'settled' ? [['fund_hold', -1000], ['fund_release', 1000], ['settlement_out', -1000]] : [['fund_hold', -1000]]);
    }
  }, 60_000);

  it('keeps the ledger whole', async ({ exchange: ex, consumer, delivered: t }) => {
    // A settlement of its own by the window, so that there is one to check whichever order the tests run in.
    await waitForStatus(consumer, t.id, 'settled', 10_000);
    expect(unwrap(await ex.admin.checkLedger()).violations).toEqual([]);
  });
});

/** A delivered purchase between parties of its own, for a test that needs many. */
async function deliveredIn(ex: TestExchange) {
  const provider = await party(ex);
  const serviceId = unwrap(await provider.client.createService(serviceBody())).id;
  const consumer = await funded(ex, 3000);
  const held = await createHeld(consumer, { serviceId, input: INPUT });
  return { consumer, t: unwrap(await provider.client.deliver(held.id, { output: OUTPUT })) };
}
