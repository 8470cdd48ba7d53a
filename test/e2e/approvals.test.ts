import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect } from 'vitest';
import { unwrap, type ExchangeClient } from '@agent-exchange/client';
import type { TransactionView } from '@aex/contracts';
import { eventually } from '@aex/platform/testing';
import { exchangeTest } from './fixtures.js';
import { expectError, type Member } from './harness.js';
import { funded, INPUT, ledgerOf, party, serviceBody, wallet, waitForStatus, webhookUrlKnown } from './transaction-kit.js';

// D10.3 through the gateway: a price the buyer's rules do not approve waits for its account's owner
// agent (`awaiting_approval`, 202, nothing held) instead of being refused; the owner approves (the
// price is then held) or denies; undecided, a durable timer cancels it. Every route with every
// caller: the owner, the buying agent, another agent of the account, the provider, another account
// and the anonymous.

const TTL_SECONDS = 60;
const base = exchangeTest({ APPROVAL_TTL_SECONDS: String(TTL_SECONDS), SAGA_WAIT_MS: '3000', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { timerPollMs: 100 });

/**
 * Each test's parties: a provider of a 1,000-cent service; a buyer with 3,000 cents whose owner asks
 * to approve anything above 500 cents; its purchase of the service, waiting for the approval.
 */
const it = base
  .extend('buyer', async ({ exchange }) => {
    const b = await funded(exchange, 3000);
    unwrap(await b.owner.client.setAgentDelegation(b.agentId, { requireHumanApprovalAboveCents: 500 }));
    return b;
  })
  .extend('asked', async ({ buyer, service }) => {
    const r = await buyer.client.createTransaction({ serviceId: service, input: INPUT });
    expect(r.ok && r.status).toBe(202);
    return unwrap(r);
  });

const approvalsOf = async (owner: Member, state?: 'pending' | 'decided' | 'all') => unwrap(await owner.client.listApprovals(owner.accountId, state ? { state } : {}));

describe('a purchase awaiting approval (D10.3)', () => {
  it('is created with 202 in awaiting_approval, with why and until when, and nothing held', async ({ buyer, asked }) => {
    expect(asked).toMatchObject({ status: 'awaiting_approval', agreedPriceCents: 1000, platformFeeCents: 50, fundsHeldAt: null });
    expect(asked.approval).toMatchObject({ rule: 'requireHumanApprovalAboveCents', limit: 500, attempted: 1000 });
    expect(Date.parse(asked.approval!.expiresAt) - Date.parse(asked.approval!.requestedAt)).toBe(TTL_SECONDS * 1000);
    expect(asked.approval).not.toHaveProperty('decidedAt');
    expect(await wallet(buyer)).toMatchObject({ balanceCents: 3000, heldCents: 0, availableCents: 3000 });
    expect(await ledgerOf(buyer, asked.id)).toEqual([]);
  });

  it('shows the provider that it waits, but not the buyer\'s limits', async ({ provider, asked }) => {
    const seen = unwrap(await provider.client.getTransaction(asked.id));
    expect(seen.status).toBe('awaiting_approval');
    expect(Object.keys(seen.approval!).sort()).toEqual(['expiresAt', 'requestedAt']);
  });

  it('is told to both parties and to the buyer\'s owner agent, who is not named in the payload', async ({ provider, buyer, service }) => {
    const hooks = await Promise.all([buyer, provider, buyer.owner].map((m) => receiverFor(m.client, m.agentId)));
    try {
      const t = unwrap(await buyer.client.createTransaction({ serviceId: service, input: INPUT }));
      const events = await Promise.all(hooks.map((h) => eventually(async () => h.got.find((e) => e.type === 'transaction.awaiting_approval' && e.data?.transactionId === t.id), 10_000)));
      for (const e of events) {
        expect(e.data).toMatchObject({ status: 'awaiting_approval', previousStatus: 'initiated', consumerAgentId: buyer.agentId, agreedPriceCents: 1000 });
        expect(e.data).not.toHaveProperty('ownerAgentId');
      }
      // The owner is told only of the wait: the other events go to the parties.
      expect(hooks[2]!.got.filter((e) => e.data?.transactionId === t.id).map((e) => e.type)).toEqual(['transaction.awaiting_approval']);
    } finally {
      await Promise.all(hooks.map((h) => h.close()));
    }
  });

  it('is approved by the owner agent only: its price held, who and when recorded', async ({ exchange, provider, buyer, asked }) => {
    const colleague = await exchange.addAgent(buyer.owner);
    const stranger = await party(exchange);
    // The buyer, another agent of its account and the provider know of it: 403.
    for (const m of [buyer, colleague, provider]) {
      expectError(await m.client.approve(asked.id), 403, 'FORBIDDEN');
      expectError(await m.client.deny(asked.id), 403, 'FORBIDDEN');
    }
    for (const m of [stranger, stranger.owner]) {
      expectError(await m.client.approve(asked.id), 404, 'NOT_FOUND');
      expectError(await m.client.deny(asked.id), 404, 'NOT_FOUND');
    }
    expectError(await exchange.anon.approve(asked.id), 401, 'UNAUTHENTICATED');
    expectError(await exchange.anon.deny(asked.id), 401, 'UNAUTHENTICATED');
    // Nothing above changed it.
    expect(unwrap(await buyer.client.getTransaction(asked.id)).status).toBe('awaiting_approval');

    const r = await buyer.owner.client.approve(asked.id);
    expect(r.ok && r.status).toBe(200);
    const approved = unwrap(r);
    expect(approved).toMatchObject({ status: 'funds_held', statusReason: null });
    expect(approved.approval).toMatchObject({ decision: 'approved', decidedBy: buyer.owner.agentId, rule: 'requireHumanApprovalAboveCents' });
    expect(Date.parse(approved.expiresAt!) - Date.parse(approved.fundsHeldAt!)).toBe(600_000);
    expect(await wallet(buyer)).toMatchObject({ balanceCents: 3000, heldCents: 1000 });
    // Decided once: a second approval or a denial now is 409.
    const again = await buyer.owner.client.approve(asked.id);
    expectError(again, 409, 'INVALID_STATE');
    if (!again.ok) expect(again.error.errors[0]!.details).toMatchObject({ status: 'funds_held' });
    expectError(await buyer.owner.client.deny(asked.id), 409, 'INVALID_STATE');
    // The approved purchase goes on as any other.
    expect(unwrap(await provider.client.deliver(asked.id, { output: { digest: 'a'.repeat(64) } })).status).toBe('delivered');
  });

  it('is denied by the owner: cancelled approval_denied with the reason, which only the buyer\'s account sees', async ({ provider, buyer, asked }) => {
    const denied = unwrap(await buyer.owner.client.deny(asked.id, { reason: 'Not this month.' }));
    expect(denied).toMatchObject({ status: 'cancelled', statusReason: 'approval_denied' });
    expect(denied.approval).toMatchObject({ decision: 'denied', decidedBy: buyer.owner.agentId, reason: 'Not this month.' });
    expect(unwrap(await buyer.client.getTransaction(asked.id)).approval).toMatchObject({ reason: 'Not this month.' });
    const toProvider = unwrap(await provider.client.getTransaction(asked.id));
    expect(toProvider).toMatchObject({ status: 'cancelled', statusReason: 'approval_denied' });
    expect(toProvider.approval).not.toHaveProperty('reason');
    expect(toProvider.approval).toMatchObject({ decision: 'denied' });
    expect(await wallet(buyer)).toMatchObject({ balanceCents: 3000, heldCents: 0 });
    expectError(await buyer.owner.client.approve(asked.id), 409, 'INVALID_STATE');
  });

  it('answers 402 when the buyer cannot pay at approval, and keeps waiting, undecided, until it can', async ({ exchange, service }) => {
    const poor = await funded(exchange, 500);
    unwrap(await poor.owner.client.setAgentDelegation(poor.agentId, { requireHumanApprovalAboveCents: 500 }));
    const t = unwrap(await poor.client.createTransaction({ serviceId: service, input: INPUT }));
    const r = await poor.owner.client.approve(t.id);
    expectError(r, 402, 'INSUFFICIENT_FUNDS');
    if (!r.ok) expect(r.error.errors[0]!.details).toMatchObject({ transactionId: t.id, requiredCents: 1000, status: 'awaiting_approval' });
    const waiting = unwrap(await poor.client.getTransaction(t.id));
    expect(waiting.status).toBe('awaiting_approval');
    expect(waiting.approval).not.toHaveProperty('decision');
    expect(await wallet(poor)).toMatchObject({ balanceCents: 500, heldCents: 0 });
    unwrap(await poor.client.fund(poor.agentId, 1000));
    expect(unwrap(await poor.owner.client.approve(t.id)).status).toBe('funds_held');
    expect(await wallet(poor)).toMatchObject({ balanceCents: 1500, heldCents: 1000 });
  });

  it('checks the buyer\'s other rules again at approval: 403 DELEGATION_EXCEEDED leaves it waiting', async ({ buyer, asked }) => {
    unwrap(await buyer.owner.client.setAgentDelegation(buyer.agentId, { requireHumanApprovalAboveCents: 500, maxTransactionCents: 800 }));
    const r = await buyer.owner.client.approve(asked.id);
    expectError(r, 403, 'DELEGATION_EXCEEDED');
    if (!r.ok) expect(r.error.errors[0]!.details).toEqual({ rule: 'maxTransactionCents', limit: 800, attempted: 1000 });
    expect(unwrap(await buyer.client.getTransaction(asked.id)).status).toBe('awaiting_approval');
    expect(await wallet(buyer)).toMatchObject({ heldCents: 0 });
  });

  it('counts as in progress, and toward the daily spend only once approved', async ({ buyer, service }) => {
    unwrap(await buyer.owner.client.setAgentDelegation(buyer.agentId, { requireHumanApprovalAboveCents: 500, maxDailySpendCents: 1500 }));
    // Two waiting purchases of 1,000 each: neither counts toward the 1,500 of the day.
    const [a, b] = [unwrap(await buyer.client.createTransaction({ serviceId: service, input: INPUT })), unwrap(await buyer.client.createTransaction({ serviceId: service, input: INPUT }))];
    expect([a.status, b.status]).toEqual(['awaiting_approval', 'awaiting_approval']);
    expect(unwrap(await buyer.owner.client.approve(a.id)).status).toBe('funds_held');
    const r = await buyer.owner.client.approve(b.id);
    expectError(r, 403, 'DELEGATION_EXCEEDED');
    if (!r.ok) expect(r.error.errors[0]!.details).toEqual({ rule: 'maxDailySpendCents', limit: 1500, attempted: 2000 });
  });

  it('may be cancelled by either party while it waits', async ({ provider, buyer, service }) => {
    for (const by of [buyer, provider]) {
      const t = unwrap(await buyer.client.createTransaction({ serviceId: service, input: INPUT }));
      const cancelled = unwrap(await by.client.cancel(t.id));
      expect(cancelled).toMatchObject({ status: 'cancelled', statusReason: by === buyer ? 'cancelled_by_consumer' : 'cancelled_by_provider' });
      expectError(await buyer.owner.client.approve(t.id), 409, 'INVALID_STATE');
    }
    expect(await wallet(buyer)).toMatchObject({ heldCents: 0 });
  });

  it('follows the account\'s default rules: autoApproveBelow asks for prices at or above it', async ({ exchange, service }) => {
    const b = await funded(exchange, 3000);
    unwrap(await b.owner.client.setAccountDelegation(b.accountId, { autoApproveBelow: 1000 }));
    const t = unwrap(await b.client.createTransaction({ serviceId: service, input: INPUT }));
    expect(t).toMatchObject({ status: 'awaiting_approval', approval: { rule: 'autoApproveBelow', limit: 1000, attempted: 1000 } });
  });
});

describe('the owner\'s inbox (D10.3)', () => {
  it('lists what waits, then what was decided, to the owner agent only', async ({ exchange, provider, buyer, asked }) => {
    expect((await approvalsOf(buyer.owner)).map((t) => t.id)).toEqual([asked.id]);
    expect(await approvalsOf(buyer.owner, 'decided')).toEqual([]);
    expectError(await buyer.client.listApprovals(buyer.accountId), 403, 'FORBIDDEN');
    expectError(await provider.owner.client.listApprovals(buyer.accountId), 404, 'NOT_FOUND');
    expectError(await exchange.anon.listApprovals(buyer.accountId), 401, 'UNAUTHENTICATED');
    const listed = unwrap(await buyer.owner.client.listApprovals(buyer.accountId, { state: 'all' }));
    expect(listed[0]!.approval).toMatchObject({ rule: 'requireHumanApprovalAboveCents', limit: 500, attempted: 1000 });
    expect(listed[0]!.input).toEqual(INPUT);
    unwrap(await buyer.owner.client.approve(asked.id));
    expect(await approvalsOf(buyer.owner)).toEqual([]);
    expect((await approvalsOf(buyer.owner, 'decided')).map((t) => [t.id, t.status, t.approval?.decision])).toEqual([[asked.id, 'funds_held', 'approved']]);
  });
});

describe('the account\'s purchases, for its owner agent', () => {
  it('lists and shows the purchases of the account\'s agents to the owner agent only', async ({ exchange, provider, buyer, asked }) => {
    const listed = unwrap(await buyer.owner.client.listAccountTransactions(buyer.accountId, { status: 'awaiting_approval' }));
    expect(listed.map((t) => t.id)).toEqual([asked.id]);
    expect(unwrap(await buyer.owner.client.listAccountTransactions(buyer.accountId, { agentId: provider.agentId }))).toEqual([]);
    const detail = unwrap(await buyer.owner.client.getAccountTransaction(buyer.accountId, asked.id));
    expect(detail).toMatchObject({ transaction: { id: asked.id, status: 'awaiting_approval', approval: { rule: 'requireHumanApprovalAboveCents' } }, negotiation: [], dispute: null });
    // The provider's owner sees it from its side, as a sale, without the buyer's limits.
    const sale = unwrap(await provider.owner.client.getAccountTransaction(provider.accountId, asked.id));
    expect(sale.roles).toEqual(['provider']);
    expect(Object.keys(sale.transaction.approval!).sort()).toEqual(['expiresAt', 'requestedAt']);
    expect(unwrap(await provider.owner.client.listAccountTransactions(provider.accountId, { role: 'provider' })).map((t) => t.id)).toEqual([asked.id]);
    // Another agent of the account: 403; another account: 404 (under its own account too); nobody: 401.
    const stranger = await party(exchange);
    expectError(await buyer.client.listAccountTransactions(buyer.accountId), 403, 'FORBIDDEN');
    expectError(await buyer.client.getAccountTransaction(buyer.accountId, asked.id), 403, 'FORBIDDEN');
    expectError(await provider.owner.client.listAccountTransactions(buyer.accountId), 404, 'NOT_FOUND');
    expectError(await stranger.owner.client.getAccountTransaction(stranger.accountId, asked.id), 404, 'NOT_FOUND');
    expectError(await exchange.anon.listAccountTransactions(buyer.accountId), 401, 'UNAUTHENTICATED');
  });

  it('shows the account\'s agents to its agents, its spending by category to its owner, and the exchange\'s figures to the operator', async ({ exchange, provider, buyer, asked }) => {
    unwrap(await buyer.owner.client.approve(asked.id));
    const agents = unwrap(await buyer.client.listAccountAgents(buyer.accountId));
    expect(agents.map((a) => a.id)).toEqual([buyer.owner.agentId, buyer.agentId]);
    expect(agents[1]).toMatchObject({ accountId: buyer.accountId, keyPrefix: buyer.apiKey.slice(0, agents[1]!.keyPrefix.length), delegation: { requireHumanApprovalAboveCents: 500 } });
    expectError(await provider.client.listAccountAgents(buyer.accountId), 404, 'NOT_FOUND');
    expect(unwrap(await buyer.owner.client.spending(buyer.accountId, { days: 7 }))).toEqual({ days: 7, categories: [{ category: 'crypto', purchases: 1, settledCents: 0, heldCents: 1000 }] });
    // D23.2: one agent's alone, what its daily limit is measured against; another agent of the account spent nothing.
    expect(unwrap(await buyer.owner.client.spending(buyer.accountId, { days: 1, agentId: buyer.agentId })).categories).toEqual([{ category: 'crypto', purchases: 1, settledCents: 0, heldCents: 1000 }]);
    expect(unwrap(await buyer.owner.client.spending(buyer.accountId, { days: 1, agentId: buyer.owner.agentId })).categories).toEqual([]);
    expect(unwrap(await buyer.owner.client.spending(buyer.accountId, { agentId: provider.agentId })).categories).toEqual([]);
    expectError(await buyer.client.spending(buyer.accountId), 403, 'FORBIDDEN');
    expectError(await provider.owner.client.spending(buyer.accountId), 404, 'NOT_FOUND');
    const figures = unwrap(await exchange.admin.figures({ hours: 2 }));
    expect(figures.perHour).toHaveLength(2);
    expect(figures.purchases).toBeGreaterThanOrEqual(1);
    expect(figures.heldCents).toBeGreaterThanOrEqual(1000);
    expectError(await buyer.owner.client.figures(), 401, 'UNAUTHENTICATED');
  });
});

describe('an accept at a price needing approval (D10.3, D11)', () => {
  it('agrees the price and waits; approved, it passes through matched to funds_held', async ({ provider, buyer }) => {
    const serviceId = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'negotiable', basePriceCents: 1000, minimumCents: 300, maximumCents: 2000 } }))).id;
    // The opening offer is above the threshold too: an offer needs no approval, its accept does.
    const t = unwrap(await buyer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 900 }));
    expect(t.status).toBe('negotiating');
    const r = await provider.client.negotiate(t.id, { type: 'accept', terms: {} });
    expect(r.ok && r.status).toBe(200);
    expect(unwrap(r)).toMatchObject({ status: 'awaiting_approval', agreedPriceCents: 900, platformFeeCents: 45 });
    expect(unwrap(await buyer.client.negotiations(t.id)).map((m) => m.messageType)).toEqual(['initial_offer', 'accept']);
    // The negotiation is over: no more messages.
    expectError(await buyer.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 800 } }), 409, 'INVALID_STATE');
    const hooks = await receiverFor(buyer.client, buyer.agentId);
    try {
      expect(unwrap(await buyer.owner.client.approve(t.id))).toMatchObject({ status: 'funds_held', agreedPriceCents: 900 });
      const moves = await eventually(async () => {
        // Events made before the receiver was set may reach it too: the ones of the approval are these.
        const got = hooks.got.filter((e) => e.data?.transactionId === t.id && ['matched', 'funds_held'].includes(e.data.status)).map((e) => `${e.data!.previousStatus}>${e.data!.status}`);
        return got.length >= 2 ? got.sort() : null;
      }, 10_000);
      expect(moves).toEqual(['awaiting_approval>matched', 'matched>funds_held']);
    } finally {
      await hooks.close();
    }
    expect(await wallet(buyer)).toMatchObject({ heldCents: 900 });
  });

  it('waits as well when the buyer accepts the provider\'s counter-offer', async ({ provider, buyer }) => {
    const serviceId = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'negotiable', basePriceCents: 1000, minimumCents: 300, maximumCents: 2000 } }))).id;
    const t = unwrap(await buyer.client.createTransaction({ serviceId, input: INPUT, maxPriceCents: 400 }));
    unwrap(await provider.client.negotiate(t.id, { type: 'counter_offer', terms: { priceCents: 700 } }));
    expect(unwrap(await buyer.client.negotiate(t.id, { type: 'accept', terms: {} }))).toMatchObject({ status: 'awaiting_approval', agreedPriceCents: 700 });
    expect(await wallet(buyer)).toMatchObject({ heldCents: 0 });
  });
});

describe('an approval not decided in time (D10.3)', () => {
  it('is cancelled approval_expired by a durable timer, also across a restart of the transaction service', async ({ exchange, buyer, asked }) => {
    await exchange.stopTransactions();
    exchange.clock.advance(TTL_SECONDS * 1000 + 1000);
    await exchange.startTransactions();
    const expired = await waitForStatus(buyer, asked.id, 'cancelled');
    expect(expired.statusReason).toBe('approval_expired');
    expect(expired.approval).not.toHaveProperty('decision');
    expectError(await buyer.owner.client.approve(asked.id), 409, 'INVALID_STATE');
    expect(await wallet(buyer)).toMatchObject({ balanceCents: 3000, heldCents: 0 });
  });
});

interface Hooked { type: string; data?: TransactionView & { transactionId: string; previousStatus: string | null } }

/**
 * A local webhook receiver for the agent (its URL set through `client`), collecting the events it
 * gets — returned once a test delivery reached it, so the webhook service knows the URL already.
 */
async function receiverFor(client: ExchangeClient, agentId: string): Promise<{ got: Hooked[]; close(): Promise<void> }> {
  const got: Hooked[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      got.push(JSON.parse(body) as Hooked);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  unwrap(await client.updateAgent(agentId, { webhookUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` }));
  await webhookUrlKnown(client, agentId);
  return {
    got,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

