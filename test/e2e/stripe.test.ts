import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { StripeStandIn } from '../../services/wallet/test/stripe-standin.js';
import { startTestExchange, type TestExchange } from './harness.js';

// D13.7 through the gateway, configured as a deployment is (PAYMENTS_PROVIDER=stripe, the SDK at a
// local stand-in of Stripe's API): a funding made through Stripe Checkout is credited when Stripe's
// signed event reaches POST /v1/payments/stripe/webhook, the route taking the exact bytes it
// received; anything unsigned or tampered with is refused. Payouts go to the account's linked
// connected account, once per Idempotency-Key.

let ex: TestExchange;
let standIn: StripeStandIn;

beforeAll(async () => {
  standIn = await new StripeStandIn().start();
  // Configured as a deployment is (D16), Stripe's API at the stand-in's address.
  ex = await startTestExchange({ PAYMENTS_PROVIDER: 'stripe', STRIPE_API_KEY: 'sk_test_e2e', STRIPE_WEBHOOK_SECRET: standIn.webhookSecret, STRIPE_API_URL: standIn.url });
});
afterAll(async () => {
  await ex?.stop();
  await standIn?.stop();
});

/** Posts `payload` to the webhook route as Stripe does: no bearer, the signature header. */
const post = (payload: string, signature?: string) => fetch(`${ex.url}/v1/payments/stripe/webhook`, {
  method: 'POST', headers: { 'content-type': 'application/json', ...(signature !== undefined ? { 'stripe-signature': signature } : {}) }, body: payload,
});

describe('Stripe funding through the gateway (D13.7)', () => {
  it('funds through Checkout: pending until the signed event arrives, then credited once and listed paid', async () => {
    const m = await ex.signUp();
    const funding = unwrap(await m.client.fund(m.agentId, 4200));
    expect(funding).toMatchObject({ funded: false, newBalanceCents: null, checkoutUrl: `https://checkout.stripe.com/c/pay/${funding.sessionId}` });
    // Formatted as Stripe formats it: the signature covers these exact bytes, spaces and all.
    const payload = JSON.stringify(JSON.parse(standIn.event('checkout.session.completed', standIn.pay(funding.sessionId))), null, 2);
    const res = await post(payload, standIn.sign(payload));
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown }).data).toEqual({ received: true, effect: 'credited' });
    const again = await post(payload, standIn.sign(payload));
    expect(((await again.json()) as { data: unknown }).data).toEqual({ received: true, effect: 'repeat' });
    expect(unwrap(await m.client.getWallet(m.agentId))).toMatchObject({ balanceCents: 4200, availableCents: 4200 });
    const fundings = await fetch(`${ex.url}/v1/wallets/${m.agentId}/fundings`, { headers: { authorization: `Bearer ${m.apiKey}` } });
    expect(((await fundings.json()) as { data: unknown[] }).data).toEqual([expect.objectContaining({ sessionId: funding.sessionId, provider: 'stripe', status: 'paid', amountCents: 4200 })]);
  });

  it('refuses an unsigned or tampered event with 400 and moves nothing; fundings are the wallet owner\'s alone', async () => {
    const m = await ex.signUp();
    const funding = unwrap(await m.client.fund(m.agentId, 900));
    const payload = standIn.event('checkout.session.completed', standIn.pay(funding.sessionId));
    for (const res of [await post(payload), await post(payload.replace('"amount_total":900', '"amount_total":90000'), standIn.sign(payload))]) {
      expect(res.status).toBe(400);
      expect(((await res.json()) as { errors: Array<{ code: string; field?: string }> }).errors[0]).toMatchObject({ code: 'VALIDATION_ERROR', field: '/headers/stripe-signature' });
    }
    expect(unwrap(await m.client.getWallet(m.agentId)).balanceCents).toBe(0);
    const stranger = await ex.signUp();
    const peek = await fetch(`${ex.url}/v1/wallets/${m.agentId}/fundings`, { headers: { authorization: `Bearer ${stranger.apiKey}` } });
    expect(peek.status).toBe(404);
    expect((await fetch(`${ex.url}/v1/wallets/${m.agentId}/fundings`)).status).toBe(401);
  });

  it('pays out to the linked connected account once per key, after the owner links it; refuses before', async () => {
    const m = await ex.signUp();
    const funding = unwrap(await m.client.fund(m.agentId, 8000));
    const payload = standIn.event('checkout.session.completed', standIn.pay(funding.sessionId));
    expect((await post(payload, standIn.sign(payload))).status).toBe(200);
    const unkeyed = await m.client.withdraw(m.agentId, 3000);
    expect(!unkeyed.ok && [unkeyed.status, unkeyed.error.code, unkeyed.error.errors[0]?.field]).toEqual([400, 'VALIDATION_ERROR', '/headers/idempotency-key']);
    const unlinked = await m.client.withdraw(m.agentId, 3000, { idempotencyKey: 'payout-1' });
    expect(!unlinked.ok && unlinked.error.message).toMatch(/POST \/v1\/accounts\/[0-9a-f-]+\/payouts\/link/);
    const link = unwrap(await m.client.linkPayoutAccount(m.accountId));
    expect(link.url).toMatch(/^https:\/\/connect\.stripe\.com\//);
    const worker = await ex.addAgent(m);
    const refused = await worker.client.linkPayoutAccount(m.accountId);
    expect(!refused.ok && refused.status).toBe(403);
    standIn.onboard(link.stripeAccountId);
    const paid = unwrap(await m.client.withdraw(m.agentId, 3000, { idempotencyKey: 'payout-2' }));
    const again = unwrap(await m.client.withdraw(m.agentId, 3000, { idempotencyKey: 'payout-2' }));
    expect(again.payoutId).toBe(paid.payoutId);
    expect(standIn.transfers.filter((t) => t.destination === link.stripeAccountId).map((t) => [t.id, t.amount])).toEqual([[paid.payoutId, 3000]]);
    expect(unwrap(await m.client.getWallet(m.agentId)).balanceCents).toBe(5000);
    expect(unwrap(await m.client.ledger(m.agentId)).map((e) => [e.txType, e.amountCents])).toEqual([['fund', 8000], ['payout', -3000]]);
    expect(unwrap(await m.client.payouts(m.agentId))).toEqual([expect.objectContaining({ payoutId: paid.payoutId, provider: 'stripe', amountCents: 3000 })]);
    // The operator's reconciliation finds both sides agree on this account's payments.
    const report = unwrap(await ex.admin.reconcilePayments({ from: new Date(Date.now() - 60_000).toISOString(), to: new Date(Date.now() + 5_000).toISOString() }));
    expect(report.provider).toBe('stripe');
    expect([...report.onlyAtProcessor, ...report.onlyInLedger].filter((i) => [funding.sessionId, paid.payoutId].includes(i.id))).toEqual([]);
    expect(report.ledger.paidOutCents).toBeGreaterThanOrEqual(3000);
    const notOperator = await m.client.request('GET', '/admin/v1/payments/reconciliation', { query: { from: new Date(0).toISOString(), to: new Date(86_400_000).toISOString() } });
    expect(!notOperator.ok && notOperator.status).toBe(401);
  });

  it('answers 404 on an exchange whose payments do not go through Stripe', async () => {
    const sandbox = await startTestExchange();
    try {
      const payload = standIn.event('checkout.session.completed', { id: 'cs_test_elsewhere', object: 'checkout.session', amount_total: 500, currency: 'usd', payment_status: 'paid' } as never);
      const res = await fetch(`${sandbox.url}/v1/payments/stripe/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': standIn.sign(payload) }, body: payload });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { errors: Array<{ code: string }> }).errors[0]!.code).toBe('NOT_FOUND');
    } finally {
      await sandbox.stop();
    }
  });
});
