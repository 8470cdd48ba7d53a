import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { unwrap, type ExchangeClient } from '@agent-exchange/client';
import { buildGateway } from '@aex/gateway';
import { freePort } from '@aex/platform';
import { testLogger } from '@aex/platform/testing';
import { expectError, startTestExchange, type Member, type TestExchange } from './harness.js';

// D23.4: a one-time sign-in link for the web console (`aex console`): made with the owner agent's
// key, used once on any gateway, dead after two minutes or once the key is rotated; the console's
// sign-in page trades it for a session and takes it out of the address.

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

let ex: TestExchange;
let browser: Browser;
const contexts: BrowserContext[] = [];
let owner: Member;
let worker: Member;

beforeAll(async () => {
  // The link's address is PUBLIC_BASE_URL's: here, the test exchange's own, which the browser opens.
  const port = await freePort();
  ex = await startTestExchange({ PUBLIC_BASE_URL: `http://127.0.0.1:${port}` }, { port });
  owner = await ex.signUp();
  worker = await ex.addAgent(owner);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
}, 120_000);

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await ex?.stop();
});

const tokenOf = (url: string) => new URL(url).hash.replace('#/signin?link=', '');

/** `POST /console/api/session` with a link's token, at `base` (a gateway): its status, cookie and first error. */
async function signInWith(token: string, base = ex.url) {
  const res = await fetch(`${base}/console/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ link: token }) });
  const body = (await res.json()) as { data: { kind: string; agentId: string; accountId: string } | null; errors: Array<{ code: string; message: string }> | null };
  return { status: res.status, cookie: res.headers.get('set-cookie')?.split(';')[0], data: body.data, error: body.errors?.[0] };
}

async function link(client: ExchangeClient = owner.client) {
  return unwrap(await client.consoleSignInLink());
}

describe('POST /console/api/sign-in-links (D23.4)', () => {
  it('D23.4: answers the owner agent a link to the console with a 43-character token in the fragment, for two minutes', async () => {
    const before = Date.now();
    const r = await owner.client.consoleSignInLink();
    expect(r.status).toBe(201);
    const { url, expiresAt } = unwrap(r);
    expect(url).toMatch(new RegExp(`^${ex.config.PUBLIC_BASE_URL}/console/#/signin\\?link=[A-Za-z0-9_-]{43}$`));
    expect(Date.parse(expiresAt) - before).toBeGreaterThan(110_000);
    expect(Date.parse(expiresAt) - before).toBeLessThanOrEqual(125_000);
    expect(url).not.toContain(owner.apiKey);
  });
  it('D23.4: refuses another agent of the account with 403, as the console’s sign-in does', async () => expectError(await worker.client.consoleSignInLink(), 403, 'FORBIDDEN'));
  it('D23.4: needs authentication', async () => {
    expectError(await ex.anon.consoleSignInLink(), 401, 'UNAUTHENTICATED');
    expectError(await ex.anon.as({ apiKey: `${owner.apiKey.slice(0, -4)}AAAA` }).consoleSignInLink(), 401, 'UNAUTHENTICATED');
  });

  it('D23.4: signs in once as the owner agent; a second use is refused', async () => {
    const token = tokenOf((await link()).url);
    const first = await signInWith(token);
    expect(first.status).toBe(201);
    expect(first.data).toMatchObject({ kind: 'owner', agentId: owner.agentId, accountId: owner.accountId });
    const session = await fetch(`${ex.url}/v1/accounts/${owner.accountId}`, { headers: { cookie: first.cookie! } });
    expect(session.status).toBe(200);
    const again = await signInWith(token);
    expect([again.status, again.error?.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect(again.error?.message).toContain('used or has expired');
  });

  it('D23.4: used at once on two gateway replicas, signs in on exactly one', async () => {
    const replica = await buildGateway({ bus: ex.bus, config: ex.config, logger: testLogger() });
    const replicaUrl = await replica.listen({ host: '127.0.0.1', port: 0 });
    try {
      for (let i = 0; i < 4; i++) {
        const token = tokenOf((await link()).url);
        const both = await Promise.all([signInWith(token), signInWith(token, replicaUrl)]);
        expect(both.map((r) => r.status).sort()).toEqual([201, 401]);
      }
    } finally {
      await replica.close();
    }
  });

  it('D23.4: is useless after two minutes', async () => {
    const token = tokenOf((await link()).url);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 2 * 60_000 + 1000);
      const late = await signInWith(token);
      expect([late.status, late.error?.code]).toEqual([401, 'UNAUTHENTICATED']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('D23.4: is useless once the key it was made with is rotated', async () => {
    const account = await ex.signUp();
    const token = tokenOf((await link(account.client)).url);
    unwrap(await account.client.rotateKey(account.agentId));
    const r = await signInWith(token);
    expect([r.status, r.error?.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect(r.error?.message).toContain('rotated or revoked');
  });

  it('D23.4: a link’s token is no session id, and an unknown token signs no one in', async () => {
    const token = tokenOf((await link()).url);
    const asCookie = await fetch(`${ex.url}/console/api/session`, { headers: { cookie: `aex_console=${token}` } });
    expect(asCookie.status).toBe(401);
    expect((await signInWith('A'.repeat(43))).status).toBe(401);
    expect((await signInWith(token)).status).toBe(201);
  });
});

describe('the console’s sign-in page with a link (D23.4)', () => {
  it('D23.4: opens the link signed in, on the approvals, with the token gone from the address; a used link says so over the sign-in form', async () => {
    const { url } = await link();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(url);
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    expect(new URL(page.url()).hash).toBe('#/approvals');
    expect(page.url()).not.toContain('link=');
    // Signed in as the owner agent, named (D23.2), its id on hover.
    expect(await page.locator('#who').textContent()).toContain('Signed in as ');
    expect(await page.locator('#who span').getAttribute('title')).toBe(owner.agentId);
    // The session is the page's cookie: the API answers the owner's own account through it.
    expect(await page.evaluate(async (id) => (await fetch(`/v1/accounts/${id}`)).status, owner.accountId)).toBe(200);

    const other = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    contexts.push(other);
    const again = await other.newPage();
    await again.goto(url);
    await again.getByLabel('Owner agent API key').waitFor();
    expect(await again.locator('#status').textContent()).toContain('This sign-in link has been used or has expired');
    expect(new URL(again.url()).hash).toBe('#/signin');
  });
});
