import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExchangeClient, unwrap, type Outcome } from '@agent-exchange/client';
import { subjects } from '@aex/contracts';
import { ack } from '@aex/platform';
import { eventually } from '@aex/platform/testing';
import { ADMIN_TOKEN, expectError, startTestExchange, type Member, type TestExchange } from './harness.js';

// Wallets, funding, payouts, the ledger and its invariant check (D13, D15.3) through the gateway.
let ex: TestExchange;
let owner: Member;
let sibling: Member;
let stranger: Member;

beforeAll(async () => {
  ex = await startTestExchange();
  owner = await ex.signUp();
  sibling = await ex.addAgent(owner);
  stranger = await ex.signUp();
});
afterAll(async () => ex?.stop());

describe('GET /v1/wallets/{agentId} (D13.1)', () => {
  it('shows an agent its own wallet with availableCents', async () => {
    const agent = await ex.addAgent(owner);
    const w = unwrap(await agent.client.getWallet(agent.agentId));
    expect(w).toMatchObject({ agentId: agent.agentId, balanceCents: 0, heldCents: 0, availableCents: 0, lifetimeEarnedCents: 0, lifetimeSpentCents: 0 });
  });
  it('shows the owner agent any wallet of the account', async () => {
    expect(unwrap(await owner.client.getWallet(sibling.agentId)).agentId).toBe(sibling.agentId);
  });
  it('hides the owner’s wallet from another agent of the account as 404', async () => expectError(await sibling.client.getWallet(owner.agentId), 404, 'NOT_FOUND'));
  it('hides wallets of another account as 404', async () => expectError(await stranger.client.getWallet(owner.agentId), 404, 'NOT_FOUND'));
  it('answers an unknown agent with 404', async () => expectError(await owner.client.getWallet(randomUUID()), 404, 'NOT_FOUND'));
  it('needs authentication', async () => expectError(await ex.anon.getWallet(owner.agentId), 401, 'UNAUTHENTICATED'));
});

describe('POST /v1/wallets/{agentId}/fund (D13.4, D13.6)', () => {
  it('funds at once through the sandbox processor', async () => {
    const m = await ex.signUp();
    const f = unwrap(await m.client.fund(m.agentId, 12_345));
    expect(f).toMatchObject({ funded: true, amountCents: 12_345, newBalanceCents: 12_345 });
    expect(f.sessionId).toMatch(/^cs_sandbox_/);
    expect(f.checkoutUrl).toBe(`http://exchange.test:8080/sandbox/checkout/${f.sessionId}`);
    const again = unwrap(await m.client.fund(m.agentId, 500));
    expect(again.newBalanceCents).toBe(12_845);
    expect(unwrap(await m.client.getWallet(m.agentId))).toMatchObject({ balanceCents: 12_845, availableCents: 12_845 });
  });
  it('serves the page behind checkoutUrl without authentication, naming no wallet', async () => {
    const m = await ex.signUp();
    const f = unwrap(await m.client.fund(m.agentId, 700));
    const res = await fetch(`${ex.url}${new URL(f.checkoutUrl).pathname}`);
    expect(res.status).toBe(200);
    const page = ((await res.json()) as { data: Record<string, unknown> }).data;
    expect(page).toMatchObject({ sessionId: f.sessionId, provider: 'sandbox', status: 'paid', amountCents: 700 });
    expect(JSON.stringify(page)).not.toContain(m.agentId);
    expect((await fetch(`${ex.url}/sandbox/checkout/cs_sandbox_${'0'.repeat(24)}`)).status).toBe(404);
    expect((await fetch(`${ex.url}/sandbox/checkout/not-a-session`)).status).toBe(400);
  });
  it('lets the owner agent fund another agent of the account', async () => {
    const agent = await ex.addAgent(owner);
    expect(unwrap(await owner.client.fund(agent.agentId, 1000)).newBalanceCents).toBe(1000);
  });
  it('refuses a non-owner funding the owner’s wallet (404)', async () => expectError(await sibling.client.fund(owner.agentId, 1000), 404, 'NOT_FOUND'));
  it('refuses another account (404)', async () => expectError(await stranger.client.fund(owner.agentId, 1000), 404, 'NOT_FOUND'));
  it('needs authentication', async () => expectError(await ex.anon.fund(owner.agentId, 1000), 401, 'UNAUTHENTICATED'));
  it.each([
    [499, 'below 500'],
    [1_000_001, 'above 1,000,000'],
    [1000.5, 'not an integer'],
    ['1000', 'a string'],
  ] as [unknown, string][])('rejects %s (%s) with 400 at /body/amountCents', async (amount) => {
    const r = await owner.client.request('POST', `/v1/wallets/${owner.agentId}/fund`, { body: { amountCents: amount } });
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(!r.ok && r.error.errors[0]?.field).toBe('/body/amountCents');
  });
  it('accepts the bounds 500 and 1,000,000', async () => {
    const m = await ex.signUp();
    expect(unwrap(await m.client.fund(m.agentId, 500)).funded).toBe(true);
    expect(unwrap(await m.client.fund(m.agentId, 1_000_000)).newBalanceCents).toBe(1_000_500);
  });
  it('writes concurrent fundings together (group commit), each with its own entry, session, event and answer', async () => {
    const [a, b] = [await ex.signUp(), await ex.signUp()];
    const keyed = await ex.signUp();
    const calls = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? b : a));
    const [answers, keyedAnswer] = await Promise.all([
      Promise.all(calls.map((m) => m.client.fund(m.agentId, 500))),
      // One with an Idempotency-Key alongside: recorded with its own effect (D5.5), outside the batches.
      keyed.client.fund(keyed.agentId, 700, { idempotencyKey: randomUUID() }),
    ]);
    expect(unwrap(keyedAnswer).newBalanceCents).toBe(700);
    const funded = answers.map((r) => unwrap(r));
    // Each answer is the balance right after its own entry: 500, 1000, … in some order, per wallet.
    const balancesOf = (m: Member) => funded.filter((_, i) => calls[i] === m).map((f) => f.newBalanceCents).sort((x, y) => x! - y!);
    expect(balancesOf(a)).toEqual(Array.from({ length: 20 }, (_, i) => 500 * (i + 1)));
    expect(balancesOf(b)).toEqual(Array.from({ length: 10 }, (_, i) => 500 * (i + 1)));
    expect(unwrap(await a.client.getWallet(a.agentId)).balanceCents).toBe(10_000);
    const sessions = funded.map((f) => f.sessionId);
    expect(new Set(sessions).size).toBe(30);
    const sql = new pg.Client({ connectionString: ex.databaseUrl });
    await sql.connect();
    try {
      const entries = await sql.query<{ operation_id: string; tx: string }>(
        'select e.operation_id, e.xmin::text as tx from wallet.ledger_entries e where e.operation_id = any($1) order by e.seq', [sessions],
      );
      expect(entries.rows.map((e) => e.operation_id).sort()).toEqual([...sessions].sort());
      // Fewer database transactions than fundings: they were committed in groups.
      expect(new Set(entries.rows.map((e) => e.tx)).size).toBeLessThan(30);
      const paid = await sql.query('select id from wallet.funding_sessions where id = any($1) and status = $2', [sessions, 'paid']);
      expect(paid.rowCount).toBe(30);
    } finally {
      await sql.end();
    }
    // One `wallet.funded` event per funding, as published (the outbox removes a row once JetStream has it).
    const events: string[] = [];
    const consumer = await ex.bus.consume({
      stream: 'events',
      durable: `funded-${randomUUID().slice(0, 8)}`,
      filter: subjects.event(ex.bus.namespace, 'wallet.wallet.funded'),
      handler: async (msg) => {
        const sessionId = (msg.data as { data: { sessionId: string } }).data.sessionId;
        if (sessions.includes(sessionId)) events.push(sessionId);
        return ack();
      },
    });
    try {
      await eventually(async () => events.length >= sessions.length);
      expect(events.sort()).toEqual([...sessions].sort());
    } finally {
      await consumer.stop();
    }
    expect(unwrap(await ex.admin.checkLedger()).violations).toEqual([]);
  });
});

describe('POST /v1/wallets/{agentId}/withdraw (D13.5)', () => {
  it('pays out at once with a payout entry and an arrival two days later', async () => {
    const m = await ex.signUp();
    unwrap(await m.client.fund(m.agentId, 10_000));
    const before = Date.now();
    const p = unwrap(await m.client.withdraw(m.agentId, 2500));
    expect(p.payoutId).toMatch(/^po_sandbox_/);
    expect(p.amountCents).toBe(2500);
    const arrival = Date.parse(p.estimatedArrival) - before;
    expect(arrival).toBeGreaterThan(2 * 86_400_000 - 60_000);
    expect(arrival).toBeLessThan(2 * 86_400_000 + 60_000);
    expect(unwrap(await m.client.getWallet(m.agentId))).toMatchObject({ balanceCents: 7500, availableCents: 7500 });
    const entries = unwrap(await m.client.ledger(m.agentId));
    expect(entries.map((e) => [e.txType, e.amountCents, e.balanceAfterCents, e.availableAfterCents])).toEqual([
      ['fund', 10_000, 10_000, 10_000],
      ['payout', -2500, 7500, 7500],
    ]);
  });
  it('refuses more than the available balance with 402 and moves nothing', async () => {
    const m = await ex.signUp();
    unwrap(await m.client.fund(m.agentId, 3000));
    const r = await m.client.withdraw(m.agentId, 3001);
    expectError(r, 402, 'INSUFFICIENT_FUNDS');
    expect(unwrap(await m.client.getWallet(m.agentId)).balanceCents).toBe(3000);
    expect(unwrap(await m.client.ledger(m.agentId))).toHaveLength(1);
  });
  it('rejects less than 2500 with 400', async () => {
    const r = await owner.client.withdraw(owner.agentId, 2499);
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(!r.ok && r.error.errors[0]?.field).toBe('/body/amountCents');
  });
  it('never overdraws under concurrent withdrawals', async () => {
    const m = await ex.signUp();
    unwrap(await m.client.fund(m.agentId, 10_000));
    const results = await Promise.all(Array.from({ length: 6 }, () => m.client.withdraw(m.agentId, 2500)));
    expect(results.filter((r) => r.ok)).toHaveLength(4);
    expect(results.filter((r) => !r.ok && r.error.code === 'INSUFFICIENT_FUNDS')).toHaveLength(2);
    expect(unwrap(await m.client.getWallet(m.agentId)).balanceCents).toBe(0);
  });
  it('lets the owner agent withdraw from another agent of the account', async () => {
    const w = await ex.addAgent(owner);
    unwrap(await owner.client.fund(w.agentId, 5000));
    expect(unwrap(await owner.client.withdraw(w.agentId, 2500)).amountCents).toBe(2500);
  });
  it('refuses a non-owner withdrawing from the owner’s wallet (404)', async () => expectError(await sibling.client.withdraw(owner.agentId, 2500), 404, 'NOT_FOUND'));
  it('refuses another account (404)', async () => expectError(await stranger.client.withdraw(owner.agentId, 2500), 404, 'NOT_FOUND'));
  it('needs authentication', async () => expectError(await ex.anon.withdraw(owner.agentId, 2500), 401, 'UNAUTHENTICATED'));
});

describe('GET /v1/wallets/{agentId}/transactions', () => {
  it('lists the ledger oldest first with exact pagination', async () => {
    const m = await ex.signUp();
    for (const amount of [500, 600, 700, 800, 900]) unwrap(await m.client.fund(m.agentId, amount));
    const page = await m.client.ledger(m.agentId, { limit: 2, offset: 1 });
    expect(page.ok).toBe(true);
    if (!page.ok) return;
    expect(page.data.map((e) => e.amountCents)).toEqual([600, 700]);
    expect(page.pagination).toEqual({ total: 5, limit: 2, offset: 1, hasMore: true });
    const last = await m.client.ledger(m.agentId, { limit: 2, offset: 4 });
    expect(last.ok && last.pagination).toEqual({ total: 5, limit: 2, offset: 4, hasMore: false });
    const all = unwrap(await m.client.ledger(m.agentId));
    const wallet = unwrap(await m.client.getWallet(m.agentId));
    // D13.2: entries sum to the available balance; each carries its wallet and the balance after it.
    expect(all.reduce((s, e) => s + e.amountCents, 0)).toBe(wallet.availableCents);
    expect(all.map((e) => e.balanceAfterCents)).toEqual([500, 1100, 1800, 2600, 3500]);
    expect(all.every((e) => e.walletId === wallet.id && e.txType === 'fund' && e.transactionId === null)).toBe(true);
  });
  it('lets the owner agent read another agent’s ledger', async () => expect((await owner.client.ledger(sibling.agentId)).status).toBe(200));
  it('hides the owner’s ledger from another agent of the account', async () => expectError(await sibling.client.ledger(owner.agentId), 404, 'NOT_FOUND'));
  it('hides another account’s ledger', async () => expectError(await stranger.client.ledger(owner.agentId), 404, 'NOT_FOUND'));
  it('needs authentication', async () => expectError(await ex.anon.ledger(owner.agentId), 401, 'UNAUTHENTICATED'));
  it('rejects a negative offset', async () => expectError(await owner.client.ledger(owner.agentId, { offset: -1 }), 400, 'VALIDATION_ERROR'));
});

describe('GET /admin/v1/ledger/check (D15.3, D13.2–D13.3)', () => {
  it('reports no violations after funding and payouts', async () => {
    const m = await ex.signUp();
    unwrap(await m.client.fund(m.agentId, 6000));
    unwrap(await m.client.withdraw(m.agentId, 2500));
    const r = unwrap(await ex.admin.checkLedger());
    expect(r.ok).toBe(true);
    expect(r.violations).toEqual([]);
    // Every agent's wallet (this test's and the file's three, at least) plus the platform wallet.
    expect(r.walletsChecked).toBeGreaterThanOrEqual(5);
    expect(Date.parse(r.checkedAt)).not.toBeNaN();
  });
  it('answers a missing or wrong operator token with 401', async () => {
    expectError(await ex.anon.checkLedger(), 401, 'UNAUTHENTICATED');
    expectError(await ex.anon.as({ adminToken: `${ADMIN_TOKEN}x` }).checkLedger(), 401, 'UNAUTHENTICATED');
  });
  it('does not accept an agent API key as the operator token', async () => {
    const res = await fetch(`${ex.url}/admin/v1/ledger/check`, { headers: { authorization: `Bearer ${owner.apiKey}` } });
    expect(res.status).toBe(401);
  });
});

describe('a revoked key is refused on every route (D2.5)', () => {
  it('answers 401 everywhere after rotation', async () => {
    const m = await ex.signUp();
    unwrap(await m.client.fund(m.agentId, 5000));
    const rotated = unwrap(await m.client.rotateKey(m.agentId));
    const old = m.client;
    const calls: Promise<Outcome<unknown>>[] = [
      old.getAccount(m.accountId),
      old.updateAccount(m.accountId, { displayName: 'x' }),
      old.setAccountDelegation(m.accountId, {}),
      old.createAgent({ name: 'x', agentType: 'persistent' }),
      old.getAgent(m.agentId),
      old.updateAgent(m.agentId, { name: 'x' }),
      old.deactivateAgent(randomUUID()),
      old.setAgentDelegation(m.agentId, {}),
      old.rotateKey(m.agentId),
      old.getWallet(m.agentId),
      old.fund(m.agentId, 500),
      old.withdraw(m.agentId, 2500),
      old.ledger(m.agentId),
    ];
    for (const r of await Promise.all(calls)) expectError(r, 401, 'UNAUTHENTICATED');
    // Nothing happened under the old key.
    const fresh = new ExchangeClient({ baseUrl: ex.url, apiKey: rotated.apiKey });
    expect(unwrap(await fresh.getWallet(m.agentId)).balanceCents).toBe(5000);
  });
});

describe('alternative configuration', () => {
  it('answers fund and withdraw with 501 when no payment processor is configured, and hides the operator API without a token', async () => {
    const bare = await startTestExchange({ PAYMENTS_PROVIDER: 'none', ADMIN_TOKEN: '' });
    try {
      const m = await bare.signUp();
      expectError(await m.client.fund(m.agentId, 1000), 501, 'PAYMENTS_NOT_CONFIGURED');
      expectError(await m.client.withdraw(m.agentId, 2500), 501, 'PAYMENTS_NOT_CONFIGURED');
      expectError(await bare.anon.as({ adminToken: ADMIN_TOKEN }).checkLedger(), 404, 'NOT_FOUND');
      expect(unwrap(await m.client.getWallet(m.agentId)).balanceCents).toBe(0);
    } finally {
      await bare.stop();
    }
  });
});
