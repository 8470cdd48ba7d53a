import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { generateSigningKey, unwrap } from '@agent-exchange/client';
import type { CreateServiceBody } from '@aex/contracts';
import { accessibilityProblems, consoleBrowser, layoutProblems, LAPTOP, PHONE, screenshot, signInAsOwner, type ConsoleBrowser } from './console-kit.js';
import { ADMIN_TOKEN, startTestExchange, type Member, type TestExchange } from './harness.js';

// The owner's desk (D23.2): a person decides in the console. Names, never bare ids (D23.1 gives the
// purchases theirs); an approval says what is bought, from whom, for what price against which rule,
// with the last day's spending against the daily limit and the input summarised; a notice belongs
// to its page; charts have axes and units; purchases are found by service or provider name; every
// page fits a laptop and a phone, and axe-core finds no violation on any of them.

let ex: TestExchange;
let browser: ConsoleBrowser;

beforeAll(async () => {
  ex = await startTestExchange({ SAGA_WAIT_MS: '3000' });
  browser = await consoleBrowser(() => ex);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await ex?.stop();
});

const LONG_TEXT = 'The quarterly report describes revenue, costs and the outlook for the next year in considerable detail. '.repeat(4);

function textService(over: Partial<CreateServiceBody>): CreateServiceBody {
  return {
    name: 'Text summariser',
    description: 'Summarises a text in a few sentences, in the language asked.',
    version: '1.2.0',
    category: 'text',
    inputSchema: { type: 'object', properties: { text: { type: 'string' }, maxWords: { type: 'integer' }, language: { type: 'string' } } },
    outputSchema: { type: 'object' },
    pricing: { model: 'fixed', basePriceCents: 1200 },
    sla: { maxLatencyMs: 2000, timeoutMs: 600_000, maxRetries: 1 },
    ...over,
  };
}

/** A provider named `name`: an account whose agent sells. */
async function provider(name: string): Promise<Member> {
  const owner = await ex.signUp();
  return ex.addAgent(owner, { name });
}

/**
 * The desk's scene: Acme sells a $12.00 text summariser, Pixel Works a $3.00 image resizer; the
 * owner's "Research assistant" has $100.00, needs approval above $2.00 and may spend $50.00 a day.
 * It asks for both, and both wait for the owner.
 */
async function scene() {
  const [acme, pixels] = await Promise.all([provider('Acme'), provider('Pixel Works')]);
  const summariser = unwrap(await acme.client.createService(textService({}))).id;
  const resizer = unwrap(await pixels.client.createService(textService({ name: 'Image resizer', description: 'Resizes an image to the sizes asked.', category: 'images', pricing: { model: 'fixed', basePriceCents: 300 } }))).id;
  const owner = await ex.signUp();
  const buyer = await ex.addAgent(owner, { name: 'Research assistant' });
  unwrap(await buyer.client.fund(buyer.agentId, 10_000));
  unwrap(await owner.client.setAgentDelegation(buyer.agentId, { requireHumanApprovalAboveCents: 200, maxDailySpendCents: 5000 }));
  const summary = unwrap(await buyer.client.createTransaction({ serviceId: summariser, input: { text: LONG_TEXT, maxWords: 50, language: 'en' } }));
  const resize = unwrap(await buyer.client.createTransaction({ serviceId: resizer, input: { text: 'logo.png', maxWords: 0 } }));
  expect([summary.status, resize.status]).toEqual(['awaiting_approval', 'awaiting_approval']);
  return { acme, pixels, owner, buyer, summary, resize };
}

const OWNER_PAGES = ['#/approvals', '#/purchases', '#/sessions', '#/sales', '#/disputes', '#/agents', '#/wallets', '#/webhooks'];
const OPERATOR_PAGES = ['#/operator/figures', '#/operator/disputes', '#/operator/dead-letters', '#/operator/agents', '#/operator/audit', '#/operator/ledger'];

/** Goes to a page of the console and waits until it is drawn. */
async function open(page: Page, hash: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  await page.locator('#page h1').waitFor();
  await page.locator('#page[aria-busy]').waitFor({ state: 'detached' });
}

describe('the owner\'s desk (D23.2)', () => {
  it('D23.2: an approval names what is bought, from whom, by which agent, against the rule and the day\'s spending; approve and deny say what they did', async () => {
    const { buyer, owner, summary, resize } = await scene();
    const page = await browser.visit();
    await signInAsOwner(page, owner.apiKey);
    const card = page.locator(`#approvals [data-transaction="${summary.id}"]`);
    await card.waitFor();
    const text = await card.textContent();
    expect(text).toContain('Text summariser from Acme for $12.00');
    expect(text).toContain('$12.00 — above the $2.00 that needs your approval');
    expect(text).toContain('Research assistant');
    expect(text).toContain('Summarises a text in a few sentences, in the language asked.');
    expect(await card.locator(`#trust-${summary.id}`).textContent()).toMatch(/trust \d+\/100/);
    expect(await card.locator(`#today-${summary.id}`).textContent()).toBe('This agent spent $0.00 of the $50.00 it may spend a day; with this purchase, $12.00.');
    // The input in a few lines, the long text cut, the whole of it behind a disclosure.
    const input = await card.locator(`#input-${summary.id}`).textContent();
    expect(input).toContain('maxWords50');
    expect(input).toMatch(/textThe quarterly report .{40,80}… \(\d+ characters\)/);
    expect(await card.locator('details pre').textContent()).toContain(LONG_TEXT.trim());
    // Ids are there for whoever needs them: on hover and behind a copy button, not as the text.
    expect(text).not.toContain(summary.serviceId);
    expect(await card.locator(`[title="${summary.serviceId}"]`).textContent()).toBe('Text summariser');
    expect(await card.getByRole('button', { name: 'Copy the agent id of Research assistant' }).count()).toBe(1);
    expect(await accessibilityProblems(page)).toEqual([]);
    await screenshot(page, 'desk-approvals');

    await card.getByRole('button', { name: 'Approve Text summariser from Acme for $12.00' }).click();
    await page.getByRole('status').getByText('Approved Text summariser from Acme for $12.00: the price is held.').waitFor();
    await card.waitFor({ state: 'detached' });
    const other = page.locator(`#approvals [data-transaction="${resize.id}"]`);
    await other.getByLabel('Reason to deny').fill('Not this week');
    await other.getByRole('button', { name: /^Deny/ }).click();
    await page.getByRole('status').getByText('Denied Image resizer from Pixel Works for $3.00.').waitFor();
    expect(unwrap(await buyer.client.getTransaction(resize.id))).toMatchObject({ status: 'cancelled', statusReason: 'approval_denied' });
    // Decided, they are listed by name with the decision.
    await expect.poll(() => page.locator('#decided').textContent()).toContain('Image resizer from Pixel WorksResearch assistantdenied (Not this week)');

    // A notice can be dismissed.
    await page.getByRole('button', { name: 'Dismiss this notice' }).click();
    expect(await page.getByRole('status').textContent()).toBe('');
    await page.locator('#no-approvals').waitFor();
  });

  it('D23.2, D6.8: a child\'s approval measures its day against the daily limit in force (its parent\'s, lowered below its own), and the agents page shows its rules in force', async () => {
    const { buyer, owner, summary } = await scene();
    const spawned = unwrap(await buyer.client.spawnAgent(buyer.agentId, { name: 'Research helper', budgetCents: 2000, delegation: { maxDailySpendCents: 4000 } }));
    unwrap(await owner.client.patchAgentDelegation(buyer.agentId, { maxDailySpendCents: 3000 }));
    const keys = generateSigningKey();
    // The child registers a signing key (unsigned: it has none yet) to buy on the signed route.
    unwrap(await ex.anon.as({ apiKey: spawned.apiKey }).updateAgent(spawned.id, { signingKeyPublic: keys.publicKey }));
    const child = ex.anon.as({ apiKey: spawned.apiKey, signingSecretKey: keys.secretKey });
    const asked = unwrap(await child.createTransaction({ serviceId: summary.serviceId, input: { text: 'A short text.', maxWords: 5 } }));
    expect(asked.status).toBe('awaiting_approval');
    const page = await browser.visit();
    await signInAsOwner(page, owner.apiKey);
    const today = page.locator(`#today-${asked.id}`);
    await today.waitFor();
    // Its own $40.00 over the account's defaults would name the wrong limit: the exchange says $30.00.
    expect(await today.textContent()).toBe('This agent spent $0.00 of the $30.00 it may spend a day; with this purchase, $12.00.');
    // The agents page shows, beside the child's own rules, those in force.
    await open(page, '#/agents');
    const inForce = await page.locator(`#in-force-${spawned.id}`).textContent();
    expect(inForce).toContain('max spending per 24 hours: $30.00');
    expect(inForce).toContain('ask me above: $2.00');
  });

  it('D23.2: a notice is cleared on navigation; purchases are found by service name and by provider name, the search kept in the address; an unsettled purchase says how it ended', async () => {
    const { buyer, owner, summary, resize } = await scene();
    unwrap(await owner.client.approve(summary.id));
    const page = await browser.visit();
    await signInAsOwner(page, owner.apiKey);
    const card = page.locator(`#approvals [data-transaction="${resize.id}"]`);
    await card.getByRole('button', { name: /^Deny/ }).click();
    await page.getByRole('status').getByText('Denied Image resizer from Pixel Works for $3.00.').waitFor();
    await page.getByRole('link', { name: 'Purchases' }).click();
    await page.getByRole('heading', { name: 'Purchases' }).waitFor();
    expect(await page.getByRole('status').textContent()).toBe('');

    const rows = () => page.locator('#purchases tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-transaction')));
    expect((await rows()).sort()).toEqual([summary.id, resize.id].sort());
    expect(await page.locator(`#purchases tr[data-transaction="${summary.id}"]`).textContent()).toMatch(/^Text summariserAcmeResearch assistantfunds held\$12\.00/);
    const search = page.getByLabel('Service or provider');
    await search.fill('pixel w');
    await page.getByRole('button', { name: 'Find' }).click();
    await expect.poll(rows).toEqual([resize.id]);
    expect(await page.locator('#purchases caption').textContent()).toBe('1 matching “pixel w”');
    await search.fill('SUMMARISER');
    await page.getByRole('button', { name: 'Find' }).click();
    await expect.poll(rows).toEqual([summary.id]);
    // The search is the page's address: kept on reload, and Back returns to the one before.
    expect(new URL(page.url()).hash).toBe('#/purchases?q=SUMMARISER');
    await page.reload();
    await expect.poll(rows).toEqual([summary.id]);
    expect(await page.getByLabel('Service or provider').inputValue()).toBe('SUMMARISER');
    await page.goBack();
    await expect.poll(rows).toEqual([resize.id]);
    await page.goForward();
    await expect.poll(rows).toEqual([summary.id]);
    expect(await accessibilityProblems(page)).toEqual([]);
    await screenshot(page, 'desk-purchases');
    await search.fill('100%');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.locator('#no-purchases').waitFor();
    await page.getByRole('button', { name: 'Show all' }).click();
    await expect.poll(async () => (await rows()).length).toBe(2);
    expect(new URL(page.url()).hash).toBe('#/purchases');

    // A purchase that was not settled says how it ended.
    await page.locator(`#purchases tr[data-transaction="${resize.id}"] a`).click();
    await page.getByRole('heading', { name: 'Purchase: Image resizer from Pixel Works' }).waitFor();
    expect(await page.locator('#timeline li').allTextContents()).toContainEqual(expect.stringMatching(/Cancelled \(approval denied\)$/));
    await page.goBack();

    // A purchase's page names its service, provider and buyer; the ids are on hover and copied.
    await page.locator(`#purchases tr[data-transaction="${summary.id}"] a`).click();
    await page.getByRole('heading', { name: 'Purchase: Text summariser from Acme' }).waitFor();
    expect(await page.locator('#purchase-service').textContent()).toContain('Text summariser');
    expect(await page.locator('#purchase-provider span[title]').getAttribute('title')).toBe(summary.providerAgentId);
    expect(await page.locator('#purchase-buyer').textContent()).toContain('Research assistant');
    expect(await page.locator('#timeline').textContent()).toContain('Approved by owner');
    expect(await page.locator('#page').textContent()).not.toContain(summary.serviceId);
    expect(await accessibilityProblems(page)).toEqual([]);
    await screenshot(page, 'desk-purchase');
    expect(buyer.agentId).toBe(summary.consumerAgentId);
  });

  it('D23.2: charts have time axes and units; spending says how many purchases and how much', async () => {
    const { owner, summary } = await scene();
    unwrap(await owner.client.approve(summary.id));
    const page = await browser.visit();
    await signInAsOwner(page, owner.apiKey);
    await open(page, '#/wallets');
    expect(await page.locator('#spending').textContent()).toBe('text1 purchase · $12.00');
    const chart = page.locator(`[data-wallet="${summary.consumerAgentId}"] svg.chart`);
    await chart.locator('polyline').waitFor({ state: 'attached' });
    expect(await chart.locator('.axis-label').allTextContents()).toEqual(['Date', 'Balance (US dollars)']);
    const ticks = await chart.locator('.tick').allTextContents();
    expect(ticks.some((t) => /^\$\d+\.\d\d$/.test(t))).toBe(true);
    expect(ticks.some((t) => /^[A-Z][a-z]{2} \d{1,2}(, \d\d:\d\d( [AP]M)?)?$/.test(t))).toBe(true);
    expect(await chart.getAttribute('aria-label')).toMatch(/^Balance of Research assistant: from \$100\.00 on .* to \$100\.00 on /);
    expect(await accessibilityProblems(page)).toEqual([]);
    await screenshot(page, 'desk-wallets');
  });

  it('D23.2: the rules editor sends only what changed, by PATCH, and says what changed', async () => {
    const { buyer, owner } = await scene();
    const page = await browser.visit();
    await signInAsOwner(page, owner.apiKey);
    await open(page, '#/agents');
    const form = page.locator(`#rules-${buyer.agentId}`);
    expect(await form.getByLabel('Ask me above ($)').inputValue()).toBe('2.00');
    expect(await form.getByLabel('Max spending per 24 hours ($)').inputValue()).toBe('50.00');
    // Labels and fields in one grid: every field starts at the same x.
    const lefts = await form.locator('input').evaluateAll((inputs) => inputs.map((i) => Math.round(i.getBoundingClientRect().left)));
    expect(new Set(lefts).size).toBe(1);
    const sent = page.waitForRequest((r) => r.url().endsWith(`/v1/agents/${buyer.agentId}/delegation`));
    await form.getByLabel('Max per purchase ($)').fill('2.50');
    await form.getByLabel('Ask me above ($)').fill('');
    await form.getByRole('button', { name: 'Save changes' }).click();
    const request = await sent;
    expect([request.method(), request.postDataJSON()]).toEqual(['PATCH', { maxTransactionCents: 250, requireHumanApprovalAboveCents: null }]);
    await page.getByRole('status').getByText('Changed: max per purchase $— → $2.50; ask me above $2.00 → $—.').waitFor();
    const agent = unwrap(await owner.client.getAgent(buyer.agentId)) as { delegation: Record<string, unknown> };
    expect(agent.delegation).toEqual({ maxTransactionCents: 250, maxDailySpendCents: 5000 });
  });

  for (const [size, viewport] of [['a phone', PHONE], ['a laptop', LAPTOP]] as const) {
    it(`D23.2: every page fits ${size} (${viewport.width}×${viewport.height}) — nothing wider than the screen, the sections in one row — with no accessibility violation`, async () => {
      const { owner, summary } = await scene();
      const page = await browser.visit('', viewport);
      await signInAsOwner(page, owner.apiKey);
      for (const hash of [...OWNER_PAGES, `#/purchases/${summary.id}`]) {
        await open(page, hash);
        expect(await layoutProblems(page), hash).toEqual([]);
        expect(await accessibilityProblems(page), hash).toEqual([]);
        if (viewport === PHONE && (hash === '#/approvals' || hash === '#/purchases')) await screenshot(page, `desk-phone-${hash.slice(2)}`);
      }
      const operator = await browser.visit('', viewport);
      await operator.getByLabel('Operator token').fill(ADMIN_TOKEN);
      await operator.locator('#operator-signin button[type=submit]').click();
      await operator.getByRole('heading', { name: 'Figures' }).waitFor();
      for (const hash of OPERATOR_PAGES) {
        await open(operator, hash);
        expect(await layoutProblems(operator), hash).toEqual([]);
        expect(await accessibilityProblems(operator), hash).toEqual([]);
      }
      const signIn = await browser.visit('#/signin', viewport);
      await signIn.getByRole('heading', { name: 'Sign in' }).waitFor();
      expect(await layoutProblems(signIn)).toEqual([]);
      expect(await accessibilityProblems(signIn)).toEqual([]);
    }, 180_000);
  }
});
