import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { unwrap } from '@agent-exchange/client';
import { eventually } from '@aex/platform/testing';
import { accessibilityProblems, consoleBrowser, screenshot, signInAsOwner, type ConsoleBrowser } from './console-kit.js';
import { ADMIN_TOKEN, startTestExchange, type TestExchange } from './harness.js';
import { funded, INPUT, OUTPUT, party, serviceBody, webhookUrlKnown, type Party } from './transaction-kit.js';

// The web console in a real headless browser (Debian's chromium, driven by playwright-core): an owner
// signs in with the owner agent's key, approves a purchase and watches it settle on its timeline; an
// operator resolves an escalated dispute; sign-out ends the session; a page without a session, another
// account's session and a forged CSRF token are refused; axe-core finds no accessibility violation. The screenshots it takes (CONSOLE_SCREENSHOTS, default test/e2e/.artifacts/console) are
// checked to be non-blank; the README shows those of docs/images/.

let ex: TestExchange;
let browser: ConsoleBrowser;
const visit = (hash = '') => browser.visit(hash);

beforeAll(async () => {
  // Two quick attempts a webhook: a delivery to a dead receiver is dead-lettered within the test.
  ex = await startTestExchange({ SAGA_WAIT_MS: '3000', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_DELAYS_MS: '0,50', WEBHOOK_TIMEOUT_MS: '2000' });
  browser = await consoleBrowser(() => ex);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await ex?.stop();
});

/** A fetch made by the page itself, with its cookies: what a script of the page could send. */
const fetchInPage = (page: Page, method: string, path: string, headers: Record<string, string> = {}) =>
  page.evaluate(async ([m, p, h]) => {
    const r = await fetch(p, { method: m, headers: { 'content-type': 'application/json', ...h }, body: m === 'GET' ? undefined : '{}' });
    return { status: r.status, body: (await r.json()) as { errors?: Array<{ code: string; details?: Record<string, unknown> }> } };
  }, [method, path, headers] as const);

/** A buyer whose owner approves anything above 500 cents, and its purchase of a 1,000-cent service, waiting. */
async function awaitingPurchase(): Promise<{ buyer: Party; provider: Party; transactionId: string }> {
  const [buyer, provider] = await Promise.all([funded(ex, 3000), party(ex)]);
  unwrap(await buyer.owner.client.setAgentDelegation(buyer.agentId, { requireHumanApprovalAboveCents: 500 }));
  const serviceId = unwrap(await provider.client.createService(serviceBody())).id;
  const t = unwrap(await buyer.client.createTransaction({ serviceId, input: INPUT }));
  expect(t.status).toBe('awaiting_approval');
  return { buyer, provider, transactionId: t.id };
}

/** A purchase of a fresh provider's 1,000-cent service, delivered and disputed by its buyer. */
async function disputedPurchase(reason: 'output_incomplete' | 'output_quality', description: string) {
  const [consumer, provider] = await Promise.all([funded(ex, 3000), party(ex)]);
  const serviceId = unwrap(await provider.client.createService(serviceBody())).id;
  const t = unwrap(await consumer.client.createTransaction({ serviceId, input: INPUT }));
  unwrap(await provider.client.deliver(t.id, { output: OUTPUT }));
  const dispute = unwrap(await consumer.client.openDispute(t.id, { reason, description }));
  return { consumer, provider, serviceId, t, dispute };
}

describe('the console (owners)', () => {
  it('an owner signs in, approves a purchase, and sees it settle on its timeline', async () => {
    const { buyer, provider, transactionId } = await awaitingPurchase();
    const page = await visit();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);
    await screenshot(page, 'sign-in');

    await signInAsOwner(page, buyer.owner.apiKey);
    // The key is not kept by the browser: only the HttpOnly session cookie.
    const [cookie] = await page.context().cookies();
    expect(cookie).toMatchObject({ name: 'aex_console', httpOnly: true, sameSite: 'Strict' });
    expect(cookie!.value).not.toContain(buyer.owner.apiKey);
    expect(await page.evaluate('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie')).not.toContain('ae_live_');
    const row = page.locator(`#approvals [data-transaction="${transactionId}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('$10.00');
    expect(await row.textContent()).toContain('above the $5.00 that needs your approval');
    expect(await accessibilityProblems(page)).toEqual([]);
    await screenshot(page, 'approvals');

    await row.getByRole('button', { name: /^Approve/ }).click();
    await page.getByRole('status').getByText(/Approved Digest \w+ from worker for \$10\.00: the price is held\./).waitFor();
    expect(unwrap(await buyer.client.getTransaction(transactionId)).status).toBe('funds_held');

    // The provider delivers, the buyer verifies: the owner watches it settle.
    unwrap(await provider.client.deliver(transactionId, { output: OUTPUT }));
    unwrap(await buyer.client.verify(transactionId, { qualityScore: 90 }));
    await page.goto(`/console/#/purchases/${transactionId}`);
    await page.locator('#purchase-status').getByText('settled').waitFor();
    const timeline = await page.locator('#timeline').textContent();
    for (const step of ['Created', 'Awaiting approval (above the $5.00 that needs your approval)', 'Approved by owner', 'Price held in escrow', 'Delivered', 'Settled: the provider was paid', 'Ledger: fund hold −$10.00', 'Ledger: settlement out −$10.00']) {
      expect(timeline).toContain(step);
    }
    expect(await accessibilityProblems(page)).toEqual([]);
    await screenshot(page, 'purchase-timeline');
  });

  it('refuses a page without a session, another account\'s session, and a forged CSRF token', async () => {
    const { buyer, transactionId } = await awaitingPurchase();
    const stranger = await party(ex);
    // No session: the console asks to sign in, and the API refuses the page's calls.
    const anonymous = await visit('#/approvals');
    await anonymous.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect((await fetchInPage(anonymous, 'GET', `/v1/accounts/${buyer.accountId}/approvals`)).status).toBe(401);

    // Another account's owner: the API's own answer, as to its key (not found).
    const other = await visit();
    await signInAsOwner(other, stranger.owner.apiKey);
    const csrf = await other.evaluate(async () => ((await (await fetch('/console/api/session')).json()) as { data: { csrfToken: string } }).data.csrfToken);
    const foreign = await fetchInPage(other, 'POST', `/v1/transactions/${transactionId}/approve`, { 'x-csrf-token': csrf });
    expect([foreign.status, foreign.body.errors?.[0]?.code]).toEqual([404, 'NOT_FOUND']);
    expect((await fetchInPage(other, 'GET', `/v1/accounts/${buyer.accountId}/approvals`)).status).toBe(404);

    // The owner's own session, with a forged or missing CSRF token: refused, nothing decided.
    const owner = await visit();
    await signInAsOwner(owner, buyer.owner.apiKey);
    for (const headers of [{ 'x-csrf-token': 'forged-token-0123456789' }, {}] as Record<string, string>[]) {
      const r = await fetchInPage(owner, 'POST', `/v1/transactions/${transactionId}/deny`, headers);
      expect([r.status, r.body.errors?.[0]?.code, r.body.errors?.[0]?.details]).toEqual([403, 'FORBIDDEN', { reason: 'csrf' }]);
    }
    expect(unwrap(await buyer.client.getTransaction(transactionId)).status).toBe('awaiting_approval');
    // A page of another origin cannot read the session's CSRF token: the session route answers no CORS.
    const session = await fetch(`${ex.url}/console/api/session`, { headers: { origin: 'https://evil.example' } });
    expect(session.headers.get('access-control-allow-origin')).toBeNull();
    // Every console page forbids inline scripts and framing; answers with a session are not cached.
    const page = await fetch(`${ex.url}/console/`);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    // The page's modules come as its script does: JavaScript, under the same policy, never sniffed.
    const module = await fetch(`${ex.url}/console/pages/approvals.js`);
    expect([module.status, module.headers.get('content-type'), module.headers.get('content-security-policy'), module.headers.get('x-content-type-options')])
      .toEqual([200, 'text/javascript; charset=utf-8', page.headers.get('content-security-policy'), 'nosniff']);
    const cookies = await owner.context().cookies();
    const cached = await fetch(`${ex.url}/v1/accounts/${buyer.accountId}/approvals`, { headers: { cookie: `aex_console=${cookies[0]!.value}` } });
    expect([cached.status, cached.headers.get('cache-control')]).toEqual([200, 'no-store']);
  });

  it('signs out: the session ends on the server, and its cookie no longer opens anything', async () => {
    const { buyer } = await awaitingPurchase();
    const page = await visit();
    await signInAsOwner(page, buyer.owner.apiKey);
    const [cookie] = await page.context().cookies();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.context().cookies()).toEqual([]);
    // The old cookie, replayed: the server forgot the session.
    const replayed = await fetch(`${ex.url}/v1/accounts/${buyer.accountId}/approvals`, { headers: { cookie: `aex_console=${cookie!.value}` } });
    expect(replayed.status).toBe(401);
  });

  it('D24.3: the owner agent\'s key rotated, a reload finds the session ended and its cookie cleared', async () => {
    const { buyer } = await awaitingPurchase();
    const page = await visit();
    await signInAsOwner(page, buyer.owner.apiKey);
    unwrap(await buyer.owner.client.rotateKey(buyer.owner.agentId));
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.context().cookies()).toEqual([]);
  });

  it('takes the owner agent\'s key only: another agent\'s key and a wrong key are refused', async () => {
    const { buyer } = await awaitingPurchase();
    const page = await visit();
    const said = () => page.getByRole('status').textContent();
    await page.getByLabel('Owner agent API key').fill(buyer.apiKey);
    await page.locator('#owner-signin button[type=submit]').click();
    await expect.poll(said, { timeout: 10_000 }).toMatch(/FORBIDDEN: Sign in with your account's owner agent's API key/);
    await page.getByLabel('Owner agent API key').fill('ae_live_not-a-key-at-all');
    await page.locator('#owner-signin button[type=submit]').click();
    await expect.poll(said, { timeout: 10_000 }).toMatch(/UNAUTHENTICATED/);
    expect(await page.context().cookies()).toEqual([]);
  });
});

describe('the console (owners): agents, rules, wallets, webhooks', () => {
  it('an owner edits an agent\'s rules, reads its wallet and spending, and retries a dead letter', async () => {
    const { buyer, provider, transactionId } = await awaitingPurchase();
    // A receiver that is down: the buyer's events are dead-lettered after their two attempts.
    let up = false;
    const got: string[] = [];
    const receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (up) got.push(req.headers['webhook-id'] as string);
        res.statusCode = up ? 200 : 503;
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      unwrap(await buyer.client.updateAgent(buyer.agentId, { webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` }));
      await webhookUrlKnown(buyer.client, buyer.agentId);
      unwrap(await buyer.owner.client.approve(transactionId));
      unwrap(await provider.client.deliver(transactionId, { output: OUTPUT }));
      unwrap(await buyer.client.verify(transactionId));
      await eventually(async () => unwrap(await buyer.client.webhookDeliveries(buyer.agentId, { status: 'dead' })).some((d) => d.eventType === 'transaction.settled') || null, 15_000);

      const page = await visit();
      await signInAsOwner(page, buyer.owner.apiKey);
      // Rules: the buyer's own, edited in the console (only what changed is sent, D23.2), as the API then has them.
      await page.getByRole('link', { name: 'Agents and rules' }).click();
      await page.locator(`tr[data-agent="${buyer.agentId}"]`).waitFor();
      const form = page.locator(`#rules-${buyer.agentId}`);
      expect(await form.getByLabel('Ask me above ($)').inputValue()).toBe('5.00');
      expect(await accessibilityProblems(page)).toEqual([]);
      await screenshot(page, 'agents-and-rules');
      await form.getByLabel('Max per purchase ($)').fill('25');
      await form.getByLabel('Ask me above ($)').fill('8');
      await form.getByLabel('Blocked categories').fill('gambling, crypto');
      await form.getByRole('button', { name: 'Save changes' }).click();
      await page.getByRole('status').getByText('Changed: max per purchase $— → $25.00; blocked categories — → gambling, crypto; ask me above $5.00 → $8.00.').waitFor();
      const agent = unwrap(await buyer.owner.client.getAgent(buyer.agentId)) as { delegation: Record<string, unknown> };
      expect(agent.delegation).toEqual({ maxTransactionCents: 2500, requireHumanApprovalAboveCents: 800, blockedCategories: ['gambling', 'crypto'] });

      // The wallet: its balance over time and what was spent, by category.
      await page.getByRole('link', { name: 'Wallets' }).click();
      await page.locator(`[data-wallet="${buyer.agentId}"] svg.chart polyline`).waitFor();
      expect(await page.locator('#spending').textContent()).toContain('crypto1 purchase · $10.00');
      expect(await page.locator(`[data-wallet="${buyer.agentId}"]`).textContent()).toContain('Balance$20.00');
      expect(await accessibilityProblems(page)).toEqual([]);
      await screenshot(page, 'wallets');

      // A dead letter, retried once the receiver is back.
      up = true;
      await page.getByRole('link', { name: 'Webhooks' }).click();
      // The settlement's event, whichever order the dead letters are listed in.
      const retry = page.locator('tr', { hasText: 'transaction.settled' }).getByRole('button', { name: /^Retry/ });
      await retry.waitFor();
      expect(await accessibilityProblems(page)).toEqual([]);
      await screenshot(page, 'webhooks');
      await retry.click();
      await page.getByRole('status').getByText(/Sent again: transaction\.settled to worker is (pending|delivered)\./).waitFor();
      // Received once, and recorded as delivered: the settlement's event, and only it.
      await expect.poll(() => got.length, { timeout: 10_000 }).toBe(1);
      await expect.poll(async () => unwrap(await buyer.client.webhookDeliveries(buyer.agentId, { status: 'delivered' })).map((d) => d.eventType), { timeout: 10_000 }).toEqual(['transaction.settled']);
    } finally {
      receiver.closeAllConnections();
      await new Promise((r) => receiver.close(r));
    }
  });
});

describe('the console (owners): disputes, services and sales', () => {
  it('the provider\'s owner answers a dispute for its agent and sees its sales; the buyer\'s owner accepts the proposal', async () => {
    const { consumer, provider, serviceId, t, dispute } = await disputedPurchase('output_incomplete', 'Half of the digest is missing.');

    const seller = await visit();
    await signInAsOwner(seller, provider.owner.apiKey);
    await seller.getByRole('link', { name: 'Services and sales' }).click();
    const service = seller.locator(`tr[data-service="${serviceId}"]`);
    await service.waitFor();
    expect(await service.textContent()).toMatch(/\$10\.001\$0\.00$/);
    await seller.getByRole('link', { name: 'Disputes' }).click();
    await seller.locator(`#owner-disputes tr[data-transaction="${t.id}"] a`).click();
    await seller.getByRole('heading', { name: /^Sale: Digest \w+ from worker$/ }).waitFor();
    await seller.getByLabel('Answer', { exact: true }).selectOption('partial_refund');
    await seller.getByLabel('Refund (cents, for a partial refund)').fill('300');
    await seller.getByLabel('Message').fill('We refund the missing part.');
    expect(await accessibilityProblems(seller)).toEqual([]);
    await screenshot(seller, 'owner-dispute');
    await seller.getByRole('button', { name: 'Send answer' }).click();
    await seller.getByRole('status').getByText('Answered: the dispute is proposed.').waitFor();

    const buyer = await visit();
    await signInAsOwner(buyer, consumer.owner.apiKey);
    await buyer.goto(`/console/#/purchases/${t.id}`);
    await buyer.locator('#decide').getByText('The provider proposes partial refund of $3.00.').waitFor();
    await buyer.getByRole('button', { name: 'Accept proposal' }).click();
    await buyer.getByRole('status').getByText('Accepted: the dispute is resolved (partial refund).').waitFor();
    expect(unwrap(await consumer.client.getDispute(dispute.id))).toMatchObject({ status: 'resolved', outcome: 'partial_refund', refundCents: 300 });
    // The settlement follows through the wallet: the page shows it once read again.
    await expect.poll(async () => unwrap(await consumer.client.getTransaction(t.id)).status, { timeout: 10_000 }).toBe('settled');
    await buyer.reload();
    await expect.poll(() => buyer.locator('#purchase-status').textContent(), { timeout: 10_000 }).toMatch(/^settled\b/);
  });
});

describe('the console (owners): sessions, usage and receipts (D17, D18)', () => {
  it('an owner sees its agent\'s session with its calls and what is left, a metered call\'s usage and its receipt', async () => {
    const provider = await party(ex);
    const perPage = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'per_unit', basePriceCents: 10, unit: 'page' } }))).id;
    const buyer = await funded(ex, 5000);
    const opened = unwrap(await buyer.client.openSession({ serviceId: perPage, budgetCents: 1000 }));
    const call = unwrap(await buyer.client.callInSession(opened.id, INPUT, { maxUnits: 20 }));
    unwrap(await provider.client.deliver(call.id, { output: OUTPUT, usage: { units: 7 } }));
    await eventually(async () => unwrap(await buyer.client.getTransaction(call.id)).status === 'settled' || null, 10_000, 100);

    const page = await visit();
    await signInAsOwner(page, buyer.owner.apiKey);
    await page.getByRole('link', { name: 'Sessions' }).click();
    const row = page.locator(`tr[data-session="${opened.id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toMatch(/open\$10\.00\$0\.70\$0\.00\$9\.30/);
    expect(await accessibilityProblems(page)).toEqual([]);
    await row.getByRole('link').click();
    await page.locator('#session-left').getByText('$9.30').waitFor();
    expect(await page.locator('#session-calls').textContent()).toContain('$0.70');
    expect(await accessibilityProblems(page)).toEqual([]);
    await screenshot(page, 'session');
    await page.locator('#session-calls a').first().click();
    await page.locator('#purchase-usage').getByText('7 of at most 20 units').waitFor();
    const receipt = await page.locator('#receipt').textContent();
    expect(receipt).toContain('settled');
    expect(receipt).toMatch(/Input digestsha-256=:/);
    // Its parties by name; their DIDs on hover and copied, never shown bare.
    expect(receipt).not.toContain('did:web:');
    expect(await page.locator('#receipt-provider span[title]').getAttribute('title')).toMatch(/^did:web:/);
    expect(await accessibilityProblems(page)).toEqual([]);
  });
});

describe('the console (operators)', () => {
  it('an operator signs in with the token, finds an escalated dispute and resolves it', async () => {
    const { consumer, provider, dispute } = await disputedPurchase('output_quality', 'The digest is not the expected one.');
    expect(unwrap(await provider.client.respondDispute(dispute.id, { outcome: 'contest' })).status).toBe('escalated');

    const page = await visit();
    await page.getByLabel('Operator token').fill(ADMIN_TOKEN);
    await page.locator('#operator-signin button[type=submit]').click();
    await page.getByRole('heading', { name: 'Figures' }).waitFor();
    await page.getByRole('link', { name: 'Escalated disputes' }).click();
    await page.getByRole('heading', { name: 'Escalated disputes' }).waitFor();
    const row = page.locator(`tr[data-dispute="${dispute.id}"]`);
    await row.waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);
    await screenshot(page, 'operator-disputes');
    await row.getByLabel(/^Outcome for dispute/).selectOption('provider_wins');
    await row.getByRole('button', { name: 'Resolve' }).click();
    await page.getByRole('status').getByText(/Resolved dispute .*: provider_wins/).waitFor();
    await row.waitFor({ state: 'detached' });
    expect(unwrap(await consumer.client.getDispute(dispute.id))).toMatchObject({ status: 'resolved', outcome: 'provider_wins', resolvedBy: 'operator' });

    // The exchange's figures, the audit log with that resolution, an agent suspended.
    await page.getByRole('link', { name: 'Figures' }).click();
    await page.locator('#figures').waitFor();
    expect(await page.locator('#figures').textContent()).toMatch(/Purchases, last 24 h[1-9]\d*/);
    expect(await page.locator('svg.chart').count()).toBe(3);
    expect(await accessibilityProblems(page)).toEqual([]);
    await screenshot(page, 'operator-figures');
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.locator('#audit').getByText('dispute.resolve').first().waitFor();
    await page.getByRole('link', { name: 'Suspend' }).click();
    await page.getByLabel('Agent id').fill(provider.agentId);
    await page.getByRole('button', { name: 'Suspend' }).click();
    await page.getByRole('status').getByText(/is deactivated/).waitFor();
    expect((unwrap(await provider.owner.client.getAgent(provider.agentId)) as { status: string }).status).toBe('deactivated');

    await page.getByRole('link', { name: 'Ledger check' }).click();
    await page.locator('#ledger-result').getByText(/^OK: \d+ wallets checked/).waitFor();
    // An operator's session acts as no agent.
    expect((await fetchInPage(page, 'GET', `/v1/wallets/${consumer.agentId}`)).status).toBe(403);
  });
});
