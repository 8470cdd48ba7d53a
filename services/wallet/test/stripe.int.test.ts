import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callOperation, callOrThrow, loadConfig, operationKeyOf, type Bus } from '@aex/platform';
import { commands, subjects, walletOps, type Principal } from '@aex/contracts';
import { createTestBus, createTestDatabase, eventually, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startWalletService, type WalletService } from '../src/index.js';
import { checkLedgerInvariants } from '../src/wallets/check.js';
import type { StripeProcessor } from '../src/payments/stripe.js';
import { reconcileStripeFundings } from '../src/payments/stripe-events.js';
import { StripeStandIn } from './stripe-standin.js';

// D13.7: funding through Stripe Checkout, with the official SDK pointed at a local stand-in of
// Stripe's API (no network here) and events signed as Stripe signs them. A funding is credited
// exactly once — by its webhook, a repeat of it, another event of the same session, or a
// reconciliation pass — and never on an unsigned, stale, foreign or mismatched event.

let database: TestDatabase;
let bus: Bus;
let dispose: () => Promise<void>;
let wallet: WalletService;
let standIn: StripeStandIn;
let stripe: StripeProcessor;

beforeAll(async () => {
  standIn = await new StripeStandIn().start();
  database = await createTestDatabase();
  ({ bus, dispose } = await createTestBus('jetstream'));
  const config = loadConfig({}, {
    BUS_NAMESPACE: bus.namespace, PUBLIC_BASE_URL: 'https://exchange.example',
    PAYMENTS_PROVIDER: 'stripe', STRIPE_API_KEY: 'sk_test_wallet', STRIPE_WEBHOOK_SECRET: standIn.webhookSecret, STRIPE_API_URL: standIn.url,
  });
  wallet = await startWalletService({ bus, databaseUrl: database.url, config, logger: testLogger() });
  stripe = wallet.deps.payments as StripeProcessor;
});
afterAll(async () => {
  await wallet?.stop();
  await dispose?.();
  await database?.drop();
  await standIn?.stop();
});

/** An agent with an open wallet: its principal. */
async function agent(): Promise<Principal> {
  const agentId = randomUUID();
  const accountId = randomUUID();
  const id = randomUUID();
  await bus.publish(subjects.command(bus.namespace, commands.openWallet.type), { id, type: commands.openWallet.type, occurredAt: new Date().toISOString(), data: { operationId: agentId, agentId, accountId } }, { msgId: id });
  await eventually(async () => (await wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', agentId).executeTakeFirst()) ?? null);
  return { agentId, accountId, isOwner: true, status: 'active', parentAgentId: null, signingKeyPublic: null };
}

const fund = (p: Principal, amountCents: number) =>
  callOrThrow(bus, walletOps.fund, { ctx: { requestId: randomUUID(), principal: p }, input: { path: { agentId: p.agentId }, query: {}, body: { amountCents } } }, 10_000);

const balance = async (p: Principal) => (await wallet.deps.db.selectFrom('wallets').select(['balanceCents', 'heldCents']).where('agentId', '=', p.agentId).executeTakeFirstOrThrow());
const fundEntries = async (sessionId: string) => wallet.deps.db.selectFrom('ledgerEntries').select(['txType', 'amountCents']).where('operationId', '=', sessionId).execute();
const status = async (sessionId: string) => (await wallet.deps.db.selectFrom('fundingSessions').select('status').where('id', '=', sessionId).executeTakeFirstOrThrow()).status;

/** Sends `payload` to the webhook's operation, signed as Stripe signs it (or with `signature`): what it did. */
const deliver = async (payload: string, signature: string = standIn.sign(payload)) =>
  (await callOrThrow(bus, walletOps.stripeWebhook, { ctx: { requestId: randomUUID(), principal: null }, input: { path: {}, query: {}, body: { payload, signature } } }, 10_000)).effect;
const refusal = (payload: string, signature?: string) => deliver(payload, signature).then(() => 'accepted', (err: { status?: number; code?: string }) => `${err.status} ${err.code}`);

describe('funding through Stripe Checkout (D13.7)', () => {
  it('answers the Checkout page of a session made once for the funding, funded: false until Stripe says it is paid', async () => {
    const p = await agent();
    const answer = await fund(p, 2500);
    expect(answer).toMatchObject({ funded: false, amountCents: 2500, newBalanceCents: null });
    expect(answer.checkoutUrl).toBe(`https://checkout.stripe.com/c/pay/${answer.sessionId}`);
    const session = standIn.sessions.get(answer.sessionId)!;
    const walletId = (await wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', p.agentId).executeTakeFirstOrThrow()).id;
    expect(session).toMatchObject({ mode: 'payment', amount_total: 2500, currency: 'usd', metadata: { walletId } });
    // Made with an idempotency key derived from our operation: a retry by the SDK makes no second session.
    const made = standIn.requests.filter((r) => r.path === '/v1/checkout/sessions' && r.form['metadata[walletId]'] === walletId);
    expect(made).toHaveLength(1);
    expect(made[0]!.idempotencyKey).toBe(`aex-${session.metadata!['operationId']}`);
    expect(await status(answer.sessionId)).toBe('pending');
    expect(await balance(p)).toEqual({ balanceCents: 0, heldCents: 0 });
  });

  it('credits a paid session exactly once: the webhook, its repeat, and another event of the same session', async () => {
    const p = await agent();
    const { sessionId } = await fund(p, 3000);
    const paid = standIn.event('checkout.session.completed', standIn.pay(sessionId));
    expect(await deliver(paid)).toBe('credited');
    expect(await deliver(paid)).toBe('repeat');
    expect(await deliver(standIn.event('checkout.session.async_payment_succeeded', standIn.sessions.get(sessionId)!))).toBe('repeat');
    expect(await fundEntries(sessionId)).toEqual([{ txType: 'fund', amountCents: 3000 }]);
    expect(await balance(p)).toEqual({ balanceCents: 3000, heldCents: 0 });
    expect(await status(sessionId)).toBe('paid');
    const listed = await callOrThrow(bus, walletOps.listFundings, { ctx: { requestId: randomUUID(), principal: p }, input: { path: { agentId: p.agentId }, query: {}, body: {} } }, 10_000);
    expect(listed).toEqual([{ sessionId, provider: 'stripe', status: 'paid', amountCents: 3000, createdAt: expect.any(String), paidAt: expect.any(String) }]);
  });

  it('waits for an async payment: completed but unpaid changes nothing, its success credits it', async () => {
    const p = await agent();
    const { sessionId } = await fund(p, 1200);
    expect(await deliver(standIn.event('checkout.session.completed', standIn.pay(sessionId, { async: true })))).toBe('ignored');
    expect(await status(sessionId)).toBe('pending');
    expect(await deliver(standIn.event('checkout.session.async_payment_succeeded', standIn.settleAsync(sessionId)))).toBe('credited');
    expect(await balance(p)).toEqual({ balanceCents: 1200, heldCents: 0 });
  });
});

describe('fundings through Stripe Checkout closed, refused and reconciled (D13.7)', () => {
  it('closes an expired session or a failed payment, never crediting it, even when a paid event comes after', async () => {
    const p = await agent();
    const expired = (await fund(p, 800)).sessionId;
    expect(await deliver(standIn.event('checkout.session.expired', standIn.expire(expired)))).toBe('closed');
    const failed = (await fund(p, 900)).sessionId;
    expect(await deliver(standIn.event('checkout.session.completed', standIn.pay(failed, { async: true })))).toBe('ignored');
    expect(await deliver(standIn.event('checkout.session.async_payment_failed', standIn.sessions.get(failed)!))).toBe('closed');
    // Out of order or forged after the end: the funding is closed, nothing is credited.
    expect(await deliver(standIn.event('checkout.session.completed', { ...standIn.sessions.get(expired)!, payment_status: 'paid' }))).toBe('repeat');
    expect([await status(expired), await status(failed)]).toEqual(['expired', 'expired']);
    expect(await balance(p)).toEqual({ balanceCents: 0, heldCents: 0 });
  });

  it('refuses with 400, recording nothing, an event unsigned, wrongly signed, stale, of a session not ours, or of another amount', async () => {
    const p = await agent();
    const { sessionId } = await fund(p, 700);
    const paid = standIn.event('checkout.session.completed', standIn.pay(sessionId));
    expect(await refusal(paid, '')).toBe('400 VALIDATION_ERROR');
    const said = await deliver(paid, standIn.sign(paid, { secret: 'whsec_not_ours' })).catch((err: Error) => err.message);
    expect(said).toBe('The Stripe event is refused: No signatures found matching the expected signature for payload. It must carry a Stripe-Signature of its exact body, made with this endpoint\'s signing secret within the last 5 minutes.');
    expect(await refusal(paid, standIn.sign(paid, { secret: 'whsec_not_ours' }))).toBe('400 VALIDATION_ERROR');
    expect(await refusal(paid, standIn.sign(paid, { timestamp: Math.floor(Date.now() / 1000) - 600 }))).toBe('400 VALIDATION_ERROR');
    expect(await refusal(paid.replace('"amount_total":700', '"amount_total":70000'), standIn.sign(paid))).toBe('400 VALIDATION_ERROR');
    const foreign = standIn.event('checkout.session.completed', { ...standIn.sessions.get(sessionId)!, id: 'cs_test_not_ours' });
    expect(await refusal(foreign)).toBe('400 VALIDATION_ERROR');
    const dearer = standIn.event('checkout.session.completed', { ...standIn.sessions.get(sessionId)!, amount_total: 70_000 });
    expect(await refusal(dearer)).toBe('400 VALIDATION_ERROR');
    expect(await balance(p)).toEqual({ balanceCents: 0, heldCents: 0 });
    const recorded = await wallet.deps.db.selectFrom('stripeEvents').select('id').where('id', 'in', [paid, foreign, dearer].map((e) => JSON.parse(e).id as string)).execute();
    expect(recorded).toEqual([]);
    // The genuine event still credits it afterwards.
    expect(await deliver(paid)).toBe('credited');
  });

  it('credits a session whose webhook was lost by a reconciliation pass, once, and leaves unpaid ones pending', async () => {
    const p = await agent();
    const lost = (await fund(p, 1500)).sessionId;
    const unpaid = (await fund(p, 600)).sessionId;
    standIn.pay(lost);
    const done = await reconcileStripeFundings(wallet.deps, stripe, 0);
    expect(done[lost]).toBe('credited');
    expect(done[unpaid]).toBe('ignored');
    // The webhook arriving late changes nothing.
    expect(await deliver(standIn.event('checkout.session.completed', standIn.sessions.get(lost)!))).toBe('repeat');
    expect(await fundEntries(lost)).toEqual([{ txType: 'fund', amountCents: 1500 }]);
    expect(await balance(p)).toEqual({ balanceCents: 1500, heldCents: 0 });
  });

  it('credits once when the webhook, its repeat and a reconciliation pass race', async () => {
    const p = await agent();
    const { sessionId } = await fund(p, 2000);
    const paid = standIn.event('checkout.session.completed', standIn.pay(sessionId));
    const again = standIn.event('checkout.session.completed', standIn.sessions.get(sessionId)!);
    const outcomes = await Promise.all([deliver(paid), deliver(paid), deliver(again), reconcileStripeFundings(wallet.deps, stripe, 0).then((d): string => d[sessionId] ?? 'none')]);
    expect(outcomes.filter((o) => o === 'credited')).toHaveLength(1);
    expect(await fundEntries(sessionId)).toEqual([{ txType: 'fund', amountCents: 2000 }]);
    expect((await checkLedgerInvariants(wallet.deps)).violations).toEqual([]);
  });
});

describe('payouts to the account\'s Stripe connected account (D13.7)', () => {
  const call = <O extends typeof walletOps.withdraw | typeof walletOps.linkPayoutAccount>(op: O, p: Principal, path: Record<string, string>, body: Record<string, unknown>, key?: string) =>
    callOperation(bus, op, { ctx: { requestId: randomUUID(), principal: p, ...(key ? { idempotency: { key, scope: `agent:${p.agentId}`, fingerprint: JSON.stringify(body) } } : {}) }, input: { path, query: {}, body } } as never, { timeoutMs: 10_000 });
  const outcome = (r: Awaited<ReturnType<typeof call>>) => (r.ok ? r.status : `${r.status} ${r.errors[0]!.code} ${JSON.stringify(r.errors[0]!.details ?? null)}`);
  const link = (p: Principal) => call(walletOps.linkPayoutAccount, p, { accountId: p.accountId }, {});
  const withdraw = (p: Principal, amountCents: number, key?: string) => call(walletOps.withdraw, p, { agentId: p.agentId }, { amountCents }, key);

  /** An agent whose wallet holds `cents`, credited through a paid Checkout Session. */
  async function funded(cents: number): Promise<Principal> {
    const p = await agent();
    const { sessionId } = await fund(p, cents);
    await deliver(standIn.event('checkout.session.completed', standIn.pay(sessionId)));
    return p;
  }

  it('links one connected account per exchange account, for its owner agent only, with a fresh onboarding page each time', async () => {
    const owner = await agent();
    const first = await link(owner);
    const again = await link(owner);
    expect(first.ok && again.ok).toBe(true);
    if (!first.ok || !again.ok) return;
    const [a, b] = [first.data as { url: string; stripeAccountId: string }, again.data as { url: string; stripeAccountId: string }];
    expect(a.stripeAccountId).toMatch(/^acct_/);
    expect(b.stripeAccountId).toBe(a.stripeAccountId);
    expect(a.url).toMatch(/^https:\/\/connect\.stripe\.com\//);
    expect(b.url).not.toBe(a.url);
    expect(standIn.accounts.get(a.stripeAccountId)!.metadata).toEqual({ exchangeAccountId: owner.accountId });
    const sibling: Principal = { ...owner, agentId: randomUUID(), isOwner: false };
    expect(outcome(await link(sibling))).toBe('403 FORBIDDEN null');
    const stranger = await agent();
    expect(outcome(await call(walletOps.linkPayoutAccount, stranger, { accountId: owner.accountId }, {}))).toBe('404 NOT_FOUND null');
  });

  it('refuses a withdrawal without an Idempotency-Key, or before the account is linked and able to receive, moving nothing', async () => {
    const p = await funded(6000);
    expect(outcome(await withdraw(p, 2500))).toMatch(/^400 VALIDATION_ERROR/);
    expect(outcome(await withdraw(p, 2500, randomUUID()))).toBe('409 INVALID_STATE {"status":"unlinked"}');
    await link(p);
    expect(outcome(await withdraw(p, 2500, randomUUID()))).toBe('409 INVALID_STATE {"status":"refused_by_processor"}');
    expect(await balance(p)).toEqual({ balanceCents: 6000, heldCents: 0 });
  });

  it('pays out once per key: a Transfer to the connected account, its idempotency key derived from ours, the payout entry with it', async () => {
    const p = await funded(9000);
    const acct = (await link(p) as { ok: true; data: { stripeAccountId: string } }).data.stripeAccountId;
    standIn.onboard(acct);
    const key = randomUUID();
    const first = await withdraw(p, 3000, key);
    const again = await withdraw(p, 3000, key);
    expect(first.ok && again.ok && again.data).toEqual(first.ok && first.data);
    const mine = standIn.transfers.filter((t) => t.destination === acct);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ amount: 3000, currency: 'usd' });
    const sent = standIn.requests.filter((r) => r.path === '/v1/transfers' && r.form['destination'] === acct);
    expect(sent.map((r) => r.idempotencyKey)).toEqual([`aex-payout:${operationKeyOf(`agent:${p.agentId}`, key)}`]);
    expect(first.ok && (first.data as { payoutId: string }).payoutId).toBe(mine[0]!.id);
    expect(await balance(p)).toEqual({ balanceCents: 6000, heldCents: 0 });
  });

  it('finishes a payout whose first attempt died after Stripe accepted it: the retry gets the same Transfer, paid once', async () => {
    const p = await funded(8000);
    const acct = (await link(p) as { ok: true; data: { stripeAccountId: string } }).data.stripeAccountId;
    standIn.onboard(acct);
    const key = randomUUID();
    const walletId = (await wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', p.agentId).executeTakeFirstOrThrow()).id;
    // The first attempt reached Stripe, then the process died before its commit: Stripe has the transfer, we have nothing.
    const operationId = `payout:${operationKeyOf(`agent:${p.agentId}`, key)}`;
    const dead = await stripe.createPayout(2500, new Date(), { operationId, walletId, destination: acct });
    expect(await balance(p)).toEqual({ balanceCents: 8000, heldCents: 0 });
    const retried = await withdraw(p, 2500, key);
    expect(retried.ok && (retried.data as { payoutId: string }).payoutId).toBe(dead.payoutId);
    expect(standIn.transfers.filter((t) => t.destination === acct)).toHaveLength(1);
    expect(await wallet.deps.db.selectFrom('ledgerEntries').select(['txType', 'amountCents']).where('operationId', '=', operationId).execute()).toEqual([{ txType: 'payout', amountCents: -2500 }]);
    expect(await balance(p)).toEqual({ balanceCents: 5500, heldCents: 0 });
    expect((await checkLedgerInvariants(wallet.deps)).violations).toEqual([]);
  });
});

describe('what Stripe says was paid in and out, against the ledger (D13.7)', () => {
  const reconcile = (from: Date, to: Date) =>
    callOrThrow(bus, walletOps.reconcilePayments, { ctx: { requestId: randomUUID(), principal: null, admin: true }, input: { path: {}, query: { from: from.toISOString(), to: to.toISOString() }, body: {} } }, 10_000);

  it('names a funding paid at Stripe and not yet credited, until it is; payouts and credited fundings agree', async () => {
    const from = new Date(Date.now() - 2000);
    const p = await agent();
    const credited = (await fund(p, 5000)).sessionId;
    await deliver(standIn.event('checkout.session.completed', standIn.pay(credited)));
    const lost = (await fund(p, 700)).sessionId;
    standIn.pay(lost);
    const acct = (await callOperation(bus, walletOps.linkPayoutAccount, { ctx: { requestId: randomUUID(), principal: p }, input: { path: { accountId: p.accountId }, query: {}, body: {} } }, { timeoutMs: 10_000 }) as { ok: true; data: { stripeAccountId: string } }).data.stripeAccountId;
    standIn.onboard(acct);
    const payout = await callOrThrow(bus, walletOps.withdraw, { ctx: { requestId: randomUUID(), principal: p, idempotency: { key: randomUUID(), scope: `agent:${p.agentId}`, fingerprint: 'f' } }, input: { path: { agentId: p.agentId }, query: {}, body: { amountCents: 2500 } } }, 10_000);
    const to = new Date(Date.now() + 2000);
    const mine = (items: Array<{ id: string }>) => items.filter((i) => [credited, lost, payout.payoutId].includes(i.id));
    const before = await reconcile(from, to);
    expect(mine(before.onlyAtProcessor)).toEqual([{ kind: 'funding', id: lost, amountCents: 700 }]);
    expect(mine(before.onlyInLedger)).toEqual([]);
    expect(before.ok).toBe(false);
    expect(before.processor.paidOutCents).toBeGreaterThanOrEqual(2500);
    await reconcileStripeFundings(wallet.deps, stripe, 0);
    const after = await reconcile(from, to);
    expect(mine(after.onlyAtProcessor)).toEqual([]);
    expect(after.ledger.paidInCents - before.ledger.paidInCents).toBe(700);
  });

  it('refuses a period that ends before it starts, or spans more than 31 days', async () => {
    const now = new Date();
    for (const [from, to] of [[now, new Date(now.getTime() - 1)], [new Date(now.getTime() - 32 * 86_400_000), now]] as const) {
      await expect(reconcile(from, to)).rejects.toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    }
  });
});
