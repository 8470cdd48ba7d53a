import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap, type ExchangeClient } from '@agent-exchange/client';
import type { Pricing, SessionView } from '@aex/contracts';
import { eventually } from '@aex/platform/testing';
import { expectError, startTestExchange, type TestExchange } from './harness.js';
import { funded, INPUT, ledgerOf, OUTPUT, party, serviceBody, wallet, waitForStatus, webhookUrlKnown, type Party } from './transaction-kit.js';

// D17.4–D17.7: a prepaid session holds one budget; its calls reserve from it with no hold of their
// own, settle on a valid delivery, give back what they did not use; closing returns the rest once
// every call has ended. budget = spent + reserved + remaining, and the ledger check passes throughout.

let ex: TestExchange;
let provider: Party;
let fixedId: string;
let meteredId: string;
const events: Array<{ type: string; data: Record<string, unknown> }> = [];
let server: http.Server;
let hookUrl: string;

beforeAll(async () => {
  ex = await startTestExchange({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', SAGA_WAIT_MS: '5000', RATE_LIMIT_WRITE_PER_MIN: '100000', RATE_LIMIT_READ_PER_MIN: '100000' }, { timerPollMs: 100 });
  provider = await party(ex);
  fixedId = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: 100 } }))).id;
  meteredId = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'per_unit', basePriceCents: 10, unit: 'page' } as Pricing }))).id;
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.end();
      events.push(JSON.parse(body) as { type: string; data: Record<string, unknown> });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
}, 120_000);

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await ex?.stop();
});

const ledgerClean = async () => expect(unwrap(await ex.admin.checkLedger()).violations).toEqual([]);

async function openSession(c: Party, body: { serviceId: string; budgetCents: number; autoVerify?: boolean; expiresInSeconds?: number }): Promise<SessionView> {
  const r = unwrap(await c.client.openSession(body));
  return r.status === 'open' ? r : waitForSession(c.client, r.id, 'open');
}

async function waitForSession(client: ExchangeClient, id: string, status: string, ms = 10_000): Promise<SessionView> {
  const deadline = Date.now() + ms;
  for (;;) {
    const s = unwrap(await client.getSession(id));
    if (s.status === status) return s;
    if (Date.now() > deadline) throw new Error(`session ${id} is ${s.status}, not ${status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A call in the session, delivered; settled on the delivery (autoVerify). */
async function paidCall(c: Party, sessionId: string, usage?: number) {
  const call = unwrap(await c.client.createTransaction({ sessionId, input: INPUT, ...(usage !== undefined ? { maxUnits: 10 } : {}) }));
  expect(call).toMatchObject({ status: 'funds_held', sessionId });
  const d = unwrap(await provider.client.deliver(call.id, { output: OUTPUT, ...(usage !== undefined && { usage: { units: usage } }) }));
  return d.status === 'settled' ? d : waitForStatus(c, call.id, 'settled');
}

/** The consumer's wallet once its calls' captures are in: the wallet applies them just after the calls settle (D17.7). */
const walletCaptured = (c: Party, want: { balanceCents: number; heldCents: number }) => eventually(async () => {
  const w = await wallet(c);
  return w.balanceCents === want.balanceCents && w.heldCents === want.heldCents ? w : null;
}, 10_000, 20).catch(() => wallet(c));

/** Budget = spent + reserved + remaining (+ returned once closed), as the session shows it. */
const adds = (s: SessionView) => expect(s.spentCents + s.reservedCents + s.remainingCents + s.returnedCents).toBe(s.budgetCents);

describe('prepaid sessions (D17.4–D17.7)', () => {
  it('D17.4, D17.5: one hold for the budget; calls reserve with no hold of their own and settle on a valid delivery', async () => {
    const c = await funded(ex, 5000);
    const s = await openSession(c, { serviceId: fixedId, budgetCents: 1000 });
    expect(s).toMatchObject({ status: 'open', budgetCents: 1000, spentCents: 0, reservedCents: 0, remainingCents: 1000, calls: 0, autoVerify: true, closedAt: null });
    expect(await wallet(c)).toMatchObject({ balanceCents: 5000, heldCents: 1000 });
    for (let i = 0; i < 3; i++) expect(await paidCall(c, s.id)).toMatchObject({ status: 'settled', agreedPriceCents: 100 });
    const after = unwrap(await c.client.getSession(s.id));
    expect(after).toMatchObject({ spentCents: 300, reservedCents: 0, remainingCents: 700, calls: 3 });
    adds(after);
    expect(await walletCaptured(c, { balanceCents: 4700, heldCents: 700 })).toMatchObject({ balanceCents: 4700, heldCents: 700 });
    const entries = unwrap(await c.client.ledger(c.agentId, { limit: 100 }));
    expect(entries.filter((e) => e.txType === 'fund_hold')).toHaveLength(1);
    await ledgerClean();
    // The metrics count the calls and what they reserved.
    const metrics = await (await fetch(`${ex.url}/metrics`)).text();
    expect(Number(/^aex_session_calls_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(3);
    expect(Number(/^aex_session_reserved_cents_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(300);
  });

  it('D17.5: not enough left is 402 with what remains; the session must be the caller’s and of the service named', async () => {
    const c = await funded(ex, 5000);
    const s = await openSession(c, { serviceId: fixedId, budgetCents: 150 });
    await paidCall(c, s.id);
    const short = await c.client.createTransaction({ sessionId: s.id, input: INPUT });
    expectError(short, 402, 'INSUFFICIENT_FUNDS');
    expect(!short.ok && short.error.errors[0]?.details).toMatchObject({ remainingCents: 50, requiredCents: 100 });
    expectError(await (await funded(ex, 1000)).client.createTransaction({ sessionId: s.id, input: INPUT }), 404, 'NOT_FOUND');
    expectError(await provider.client.createTransaction({ sessionId: s.id, input: INPUT }), 403, 'FORBIDDEN');
    expectError(await c.client.createTransaction({ sessionId: s.id, serviceId: meteredId, input: INPUT }), 400, 'VALIDATION_ERROR');
    expectError(await c.client.createTransaction({ sessionId: s.id, input: { wrong: true } }), 400, 'SCHEMA_VALIDATION_FAILED');
    // None of them reserved anything.
    expect(unwrap(await c.client.getSession(s.id))).toMatchObject({ spentCents: 100, reservedCents: 0, remainingCents: 50, calls: 1 });
  });

  it('D17.6: closing returns the unspent budget once; no new calls; both parties told session.opened and session.closed', async () => {
    const c = await funded(ex, 5000);
    unwrap(await c.client.updateAgent(c.agentId, { webhookUrl: hookUrl }));
    await webhookUrlKnown(c.client, c.agentId);
    const s = await openSession(c, { serviceId: fixedId, budgetCents: 500 });
    await paidCall(c, s.id);
    const closed = unwrap(await provider.client.closeSession(s.id));
    const final = closed.status === 'closed' ? closed : await waitForSession(c.client, s.id, 'closed');
    expect(final).toMatchObject({ status: 'closed', statusReason: 'closed_by_provider', spentCents: 100, returnedCents: 400, remainingCents: 0 });
    expect(final.closedAt).not.toBeNull();
    adds(final);
    expect(await wallet(c)).toMatchObject({ balanceCents: 4900, heldCents: 0 });
    expect(await ledgerOf(c, s.id)).toEqual([['fund_hold', -500], ['fund_return', 400]]);
    expectError(await c.client.createTransaction({ sessionId: s.id, input: INPUT }), 409, 'INVALID_STATE');
    // Closing again changes nothing.
    expect(unwrap(await c.client.closeSession(s.id))).toMatchObject({ status: 'closed', returnedCents: 400 });
    await expect.poll(() => events.filter((e) => e.data.sessionId === s.id).map((e) => e.type).sort(), { timeout: 15_000 }).toEqual(['session.closed', 'session.opened']);
    await ledgerClean();
  });

  it('D17.6: a session closed with a call in progress returns the rest only when that call ends', async () => {
    const c = await funded(ex, 5000);
    const s = await openSession(c, { serviceId: fixedId, budgetCents: 500 });
    const call = unwrap(await c.client.createTransaction({ sessionId: s.id, input: INPUT }));
    const closing = unwrap(await c.client.closeSession(s.id));
    expect(closing).toMatchObject({ status: 'closing', reservedCents: 100, remainingCents: 400, returnedCents: 0 });
    adds(closing);
    expect(unwrap(await provider.client.deliver(call.id, { output: OUTPUT })).status).toMatch(/settled|delivered/);
    const closed = await waitForSession(c.client, s.id, 'closed');
    expect(closed).toMatchObject({ spentCents: 100, returnedCents: 400, reservedCents: 0 });
    expect(await wallet(c)).toMatchObject({ balanceCents: 4900, heldCents: 0 });
    await ledgerClean();
  });

  it('D17.5: a call that ends unpaid frees its reservation; a metered call pays only what it used', async () => {
    const c = await funded(ex, 5000);
    const s = await openSession(c, { serviceId: meteredId, budgetCents: 1000 });
    // Cancelled: its 100 (10 units × 10) comes back to the session at once.
    const cancelled = unwrap(await c.client.createTransaction({ sessionId: s.id, input: INPUT, maxUnits: 10 }));
    expect(unwrap(await c.client.getSession(s.id))).toMatchObject({ reservedCents: 100, remainingCents: 900 });
    expect(unwrap(await c.client.cancel(cancelled.id))).toMatchObject({ status: 'cancelled' });
    expect(unwrap(await c.client.getSession(s.id))).toMatchObject({ reservedCents: 0, remainingCents: 1000, spentCents: 0 });
    // Metered: reserves the price of maxUnits, pays for 4 units.
    expect(await paidCall(c, s.id, 4)).toMatchObject({ units: 4, agreedPriceCents: 40 });
    const after = unwrap(await c.client.getSession(s.id));
    expect(after).toMatchObject({ spentCents: 40, reservedCents: 0, remainingCents: 960, calls: 2 });
    adds(after);
    expect(await walletCaptured(c, { balanceCents: 4960, heldCents: 960 })).toMatchObject({ balanceCents: 4960, heldCents: 960 });
    await ledgerClean();
  });

  it('D17.5: without autoVerify a call waits for the consumer’s verify, as a purchase does', async () => {
    const c = await funded(ex, 5000);
    const s = await openSession(c, { serviceId: fixedId, budgetCents: 300, autoVerify: false });
    const call = unwrap(await c.client.createTransaction({ sessionId: s.id, input: INPUT }));
    expect(unwrap(await provider.client.deliver(call.id, { output: OUTPUT }))).toMatchObject({ status: 'delivered' });
    expect(unwrap(await c.client.getSession(s.id))).toMatchObject({ reservedCents: 100, spentCents: 0 });
    expect(unwrap(await c.client.verify(call.id))).toMatchObject({ status: 'settled' });
    expect(unwrap(await c.client.getSession(s.id))).toMatchObject({ reservedCents: 0, spentCents: 100 });
  });

  it('D17.4: refused for negotiable services, over the rules, without the funds; a budget over the approval rule waits for the owner', async () => {
    const c = await funded(ex, 2000);
    const negotiable = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'negotiable', basePriceCents: 100, minimumCents: 50, maximumCents: 200 } as Pricing }))).id;
    expectError(await c.client.openSession({ serviceId: negotiable, budgetCents: 500 }), 400, 'VALIDATION_ERROR');
    expectError(await c.client.openSession({ serviceId: fixedId, budgetCents: 5000 }), 402, 'INSUFFICIENT_FUNDS');
    expect(await wallet(c)).toMatchObject({ balanceCents: 2000, heldCents: 0 });
    unwrap(await c.owner.client.setAgentDelegation(c.agentId, { maxTransactionCents: 800, requireHumanApprovalAboveCents: 300 }));
    expectError(await c.client.openSession({ serviceId: fixedId, budgetCents: 900 }), 403, 'DELEGATION_EXCEEDED');
    const waiting = unwrap(await c.client.openSession({ serviceId: fixedId, budgetCents: 600 }));
    expect(waiting.status).toBe('awaiting_approval');
    expect(await wallet(c)).toMatchObject({ heldCents: 0 });
    expectError(await c.client.approveSession(waiting.id), 403, 'FORBIDDEN');
    const approved = unwrap(await c.owner.client.approveSession(waiting.id));
    expect(approved.status === 'open' ? approved : await waitForSession(c.client, waiting.id, 'open')).toMatchObject({ budgetCents: 600 });
    expect(await wallet(c)).toMatchObject({ heldCents: 600 });
    // Inside the open session, a call needs no approval of its own.
    expect(await paidCall(c, waiting.id)).toMatchObject({ status: 'settled' });
  });

  it('D10.2 with D17.4: a session\'s budget counts in the buyer\'s daily spending, its calls not again', async () => {
    const c = await funded(ex, 5000);
    unwrap(await c.owner.client.setAgentDelegation(c.agentId, { maxDailySpendCents: 1000 }));
    const s = await openSession(c, { serviceId: fixedId, budgetCents: 800 });
    await paidCall(c, s.id);
    expectError(await c.client.openSession({ serviceId: fixedId, budgetCents: 300 }), 403, 'DELEGATION_EXCEEDED');
    expectError(await c.client.createTransaction({ serviceId: meteredId, input: INPUT, maxUnits: 30 }), 403, 'DELEGATION_EXCEEDED');
    // Closed, what it did not spend no longer counts: 100 of 1,000 spent.
    unwrap(await c.client.closeSession(s.id));
    await waitForSession(c.client, s.id, 'closed');
    expect((await openSession(c, { serviceId: fixedId, budgetCents: 900 })).status).toBe('open');
  });

  it('D17.6: a session closes by itself at expiresAt and returns what it did not spend', async () => {
    const c = await funded(ex, 5000);
    const s = await openSession(c, { serviceId: fixedId, budgetCents: 400, expiresInSeconds: 60 });
    await paidCall(c, s.id);
    ex.clock.advance(61_000);
    await ex.transactions!.fireDueTimers();
    const closed = await waitForSession(c.client, s.id, 'closed');
    expect(closed).toMatchObject({ statusReason: 'expired', spentCents: 100, returnedCents: 300 });
    expect(await wallet(c)).toMatchObject({ balanceCents: 4900, heldCents: 0 });
    await ledgerClean();
  });

  it('parties only: a session is invisible to other accounts and listed for its two parties', async () => {
    const c = await funded(ex, 1000);
    const s = await openSession(c, { serviceId: fixedId, budgetCents: 200 });
    expectError(await (await party(ex)).client.getSession(s.id), 404, 'NOT_FOUND');
    expectError(await (await party(ex)).client.closeSession(s.id), 404, 'NOT_FOUND');
    expect(unwrap(await c.client.listSessions({ status: 'open' })).map((x) => x.id)).toContain(s.id);
    expect(unwrap(await provider.client.listSessions({ role: 'provider', limit: 100 })).map((x) => x.id)).toContain(s.id);
    const res = await fetch(`${ex.url}/v1/sessions/${s.id}`);
    expect(res.status).toBe(401);
  });

  it('D18 with D17.5: every paid call has its own receipt naming its session', async () => {
    const c = await funded(ex, 1000);
    const s = await openSession(c, { serviceId: fixedId, budgetCents: 200 });
    const call = await paidCall(c, s.id);
    const r = unwrap(await c.client.receipt(call.id));
    expect(r.claims).toMatchObject({ sessionId: s.id, status: 'settled', priceCents: 100 });
  });
});
