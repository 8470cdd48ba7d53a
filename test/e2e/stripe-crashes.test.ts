import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExchangeClient, unwrap } from '@agent-exchange/client';
import { StripeStandIn } from '../../services/wallet/test/stripe-standin.js';
import { ADMIN_TOKEN, exchangeProcess, showLogOnFailure, uniqueEmail, type ExchangeProcess } from './harness.js';

// D13.7 under kills: the whole exchange (one process, PAYMENTS_PROVIDER=stripe, the SDK at a local
// stand-in of Stripe's API) is killed with SIGKILL right after Stripe answered a Transfer, before
// the exchange could commit, and right after a webhook was sent. Restarted, the retries pay once and
// credit once, and the ledger's invariants hold.

let standIn: StripeStandIn;
let proc: ExchangeProcess;
showLogOnFailure(() => proc);

beforeAll(async () => {
  standIn = await new StripeStandIn().start();
  proc = await exchangeProcess({ PAYMENTS_PROVIDER: 'stripe', STRIPE_API_KEY: 'sk_test_crashes', STRIPE_WEBHOOK_SECRET: standIn.webhookSecret, STRIPE_API_URL: standIn.url });
});
afterAll(async () => {
  await proc?.dispose();
  await standIn?.stop();
});

const webhook = (url: string, payload: string) => fetch(`${url}/v1/payments/stripe/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': standIn.sign(payload) }, body: payload });

describe('Stripe payments when the exchange is killed (D13.7)', () => {
  it('pays a Transfer once when killed between Stripe\'s answer and the commit, and credits a funding once when killed after its webhook', async () => {
    let url = await proc.start();
    const anon = new ExchangeClient({ baseUrl: url, timeoutMs: 15_000 });
    const account = unwrap(await anon.createAccount({ accountType: 'individual', email: uniqueEmail(), displayName: 'payee', agent: { name: 'owner' } }));
    const agentId = account.agent.id;
    const as = (u: string) => new ExchangeClient({ baseUrl: u, apiKey: account.apiKey, timeoutMs: 15_000 });

    // A funding whose webhook is sent as the exchange dies; sent again by Stripe once it is back.
    const first = unwrap(await as(url).fund(agentId, 9000));
    const paid = standIn.event('checkout.session.completed', standIn.pay(first.sessionId));
    const sent = webhook(url, paid).catch(() => undefined);
    await proc.kill();
    await sent;
    url = await proc.start();
    const again = await webhook(url, paid);
    expect(again.status).toBe(200);
    expect(['credited', 'repeat']).toContain(((await again.json()) as { data: { effect: string } }).data.effect);
    expect(unwrap(await as(url).getWallet(agentId)).balanceCents).toBe(9000);

    // A payout whose Transfer Stripe made, the exchange killed before its commit.
    const link = unwrap(await as(url).linkPayoutAccount(account.id));
    standIn.onboard(link.stripeAccountId);
    standIn.answered = (method, path) => {
      if (method === 'POST' && path === '/v1/transfers') void proc.kill();
    };
    const dying = await as(url).withdraw(agentId, 4000, { idempotencyKey: 'crash-payout' });
    standIn.answered = undefined;
    expect(dying.ok).toBe(false);
    const transfers = () => standIn.transfers.filter((t) => t.destination === link.stripeAccountId);
    expect(transfers()).toHaveLength(1);
    url = await proc.start();
    // Nothing was committed: the money is still in the wallet, until the retry under the same key.
    expect(unwrap(await as(url).getWallet(agentId)).balanceCents).toBe(9000);
    const retried = unwrap(await as(url).withdraw(agentId, 4000, { idempotencyKey: 'crash-payout' }));
    expect(retried.payoutId).toBe(transfers()[0]!.id);
    expect(transfers()).toHaveLength(1);
    expect(unwrap(await as(url).getWallet(agentId)).balanceCents).toBe(5000);
    expect(unwrap(await as(url).ledger(agentId)).map((e) => [e.txType, e.amountCents])).toEqual([['fund', 9000], ['payout', -4000]]);
    const admin = new ExchangeClient({ baseUrl: url, adminToken: ADMIN_TOKEN });
    expect(unwrap(await admin.checkLedger())).toMatchObject({ ok: true, violations: [] });
    const report = unwrap(await admin.reconcilePayments({ from: new Date(Date.now() - 300_000).toISOString(), to: new Date(Date.now() + 5_000).toISOString() }));
    expect(report).toMatchObject({ ok: true, processor: { paidInCents: 9000, paidOutCents: 4000 }, ledger: { paidInCents: 9000, paidOutCents: 4000 } });
    // Stripe's secrets never reach the log, whatever happened.
    expect(proc.log()).not.toContain('sk_test_crashes');
    expect(proc.log()).not.toContain(standIn.webhookSecret);
  }, 120_000);
});
