import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import type { OpenDisputeBody } from '@aex/contracts';
import { expectError, startTestExchange, type TestExchange } from './harness.js';
import { createHeld, funded, INPUT, ledgerOf, OUTPUT, party, serviceBody, wallet, waitForStatus, type Party } from './transaction-kit.js';

// D12: every dispute outcome reachable through the API and moving money exactly as
// D12.8 says (ledger entries of both parties), every route's errors and callers, and the deadline
// (DISPUTE_RESPONSE_SECONDS: the default 5 days, and 2 s on an exchange of its own) resolving for
// the consumer by a durable timer.

let ex: TestExchange;

beforeAll(async () => {
  ex = await startTestExchange({ SAGA_WAIT_MS: '2000' }, { timerPollMs: 100 });
}, 120_000);

afterAll(async () => {
  await ex?.stop();
});

const OPENING: OpenDisputeBody = { reason: 'output_quality', description: 'The digest does not match the payload.', evidence: { expected: 'abc' } };

/** A delivered 1000-cent transaction between a fresh provider and a consumer funded with 3000. */
async function delivered(on = ex): Promise<{ provider: Party; consumer: Party; txId: string }> {
  const provider = await party(on);
  const serviceId = unwrap(await provider.client.createService(serviceBody())).id;
  const consumer = await funded(on, 3000);
  const held = await createHeld(consumer, { serviceId, input: INPUT });
  unwrap(await provider.client.deliver(held.id, { output: OUTPUT }));
  return { provider, consumer, txId: held.id };
}

async function disputed(on = ex) {
  const d = await delivered(on);
  const dispute = unwrap(await d.consumer.client.openDispute(d.txId, OPENING));
  return { ...d, disputeId: dispute.id };
}

const REFUNDED = [['fund_hold', -1000], ['fund_return', 1000]];
const PAID = [['fund_hold', -1000], ['fund_release', 1000], ['settlement_out', -1000]];

describe('opening a dispute (D12.1)', () => {
  it('disputes a delivered transaction: 201 open, the provider\'s deadline 5 days on, the hold kept, the review window stopped', async () => {
    const { consumer, provider, txId } = await delivered();
    const r = await consumer.client.openDispute(txId, OPENING);
    expect(r.status).toBe(201);
    const d = unwrap(r);
    expect(d).toMatchObject({
      transactionId: txId, consumerAgentId: consumer.agentId, providerAgentId: provider.agentId, reason: 'output_quality',
      description: OPENING.description, evidence: OPENING.evidence, status: 'open', proposal: null, outcome: null, refundCents: null, resolvedAt: null, resolvedBy: null,
    });
    expect(Date.parse(d.deadlineAt) - Date.parse(d.openedAt)).toBe(5 * 86_400_000);
    expect(d.messages).toEqual([expect.objectContaining({ from: 'consumer', kind: 'opened', message: OPENING.description })]);
    expect(unwrap(await consumer.client.getTransaction(txId))).toMatchObject({ status: 'disputed', disputeId: d.id, reviewEndsAt: null });
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 3000, heldCents: 1000 });
    // Both parties read it by id and by transaction; nobody else.
    expect(unwrap(await provider.client.getDispute(d.id)).id).toBe(d.id);
    expect(unwrap(await provider.client.transactionDispute(txId)).id).toBe(d.id);
    const stranger = await party(ex);
    expectError(await stranger.client.getDispute(d.id), 404, 'NOT_FOUND');
    expectError(await stranger.client.transactionDispute(txId), 404, 'NOT_FOUND');
    const sibling = await ex.addAgent(consumer.owner);
    expectError(await sibling.client.getDispute(d.id), 404, 'NOT_FOUND');
    expectError(await ex.anon.getDispute(d.id), 401, 'UNAUTHENTICATED');
  });

  it('is the consumer\'s, on delivered only, once, with a valid body', async () => {
    const { consumer, provider, txId } = await delivered();
    expectError(await provider.client.openDispute(txId, OPENING), 403, 'FORBIDDEN');
    expectError(await (await party(ex)).client.openDispute(txId, OPENING), 404, 'NOT_FOUND');
    expectError(await consumer.client.openDispute(txId, { ...OPENING, description: 'too short' }), 400, 'VALIDATION_ERROR');
    expectError(await consumer.client.openDispute(txId, { ...OPENING, reason: 'bored' as never }), 400, 'VALIDATION_ERROR');
    expectError(await consumer.client.transactionDispute(txId), 404, 'NOT_FOUND');
    unwrap(await consumer.client.openDispute(txId, OPENING));
    expectError(await consumer.client.openDispute(txId, OPENING), 409, 'INVALID_STATE');
    const serviceId = unwrap(await provider.client.createService(serviceBody())).id;
    const held = await createHeld(consumer, { serviceId, input: INPUT });
    expectError(await consumer.client.openDispute(held.id, OPENING), 409, 'INVALID_STATE');
    expectError(await consumer.client.verify(txId), 409, 'INVALID_STATE');
  });
});

describe('outcomes and their money (D12.3–D12.8)', () => {
  it('consumer_wins from the provider: resolved at once, the whole price back, the transaction failed', async () => {
    const { consumer, provider, txId, disputeId } = await disputed();
    const d = unwrap(await provider.client.respondDispute(disputeId, { outcome: 'consumer_wins', message: 'Sorry.' }));
    expect(d).toMatchObject({ status: 'resolved', outcome: 'consumer_wins', refundCents: 1000, resolvedBy: 'provider' });
    expect(await waitForStatus(consumer, txId, 'failed')).toMatchObject({ statusReason: 'dispute_consumer_wins' });
    await expect.poll(async () => (await wallet(consumer)).heldCents).toBe(0);
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 3000 });
    expect(await ledgerOf(consumer, txId)).toEqual(REFUNDED);
    expect(await ledgerOf(provider, txId)).toEqual([]);
    // A lost dispute counts 0 for the provider's trust: 2.5 / 6.
    await expect.poll(async () => unwrap(await provider.client.getTrust(provider.agentId)).counts.disputesLost, { timeout: 10_000 }).toBe(1);
    expect(unwrap(await provider.client.getAgent(provider.agentId)).trustScore).toBe(42);
  });

  it('partial_refund proposed and accepted: the refund back, the rest paid with the fee on the rest', async () => {
    const { consumer, provider, txId, disputeId } = await disputed();
    const proposed = unwrap(await provider.client.respondDispute(disputeId, { outcome: 'partial_refund', refundCents: 400, evidence: { note: 'half right' } }));
    expect(proposed).toMatchObject({ status: 'proposed', proposal: { outcome: 'partial_refund', refundCents: 400 }, outcome: null });
    expectError(await provider.client.decideDispute(disputeId, { accept: true }), 403, 'FORBIDDEN');
    const d = unwrap(await consumer.client.decideDispute(disputeId, { accept: true }));
    expect(d).toMatchObject({ status: 'resolved', outcome: 'partial_refund', refundCents: 400, resolvedBy: 'consumer' });
    // 600 paid: the fee is 5 % of 600.
    expect(await waitForStatus(consumer, txId, 'settled')).toMatchObject({ statusReason: 'dispute_partial_refund', platformFeeCents: 30 });
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 2400, heldCents: 0 });
    expect(await wallet(provider)).toMatchObject({ balanceCents: 570 });
    expect(await ledgerOf(consumer, txId)).toEqual([['fund_hold', -1000], ['fund_release', 600], ['fund_return', 400], ['settlement_out', -600]]);
    expect(await ledgerOf(provider, txId)).toEqual([['platform_fee', -30], ['settlement_in', 600]]);
    expect(unwrap(await consumer.client.getDispute(disputeId)).messages.map((m) => [m.from, m.kind, m.outcome])).toEqual([
      ['consumer', 'opened', null], ['provider', 'responded', 'partial_refund'], ['consumer', 'decided', 'accept'],
    ]);
  });

  it('a refused proposal escalates; the operator resolves provider_wins: a normal settlement', async () => {
    const { consumer, provider, txId, disputeId } = await disputed();
    unwrap(await provider.client.respondDispute(disputeId, { outcome: 'partial_refund', refundCents: 100 }));
    expect(unwrap(await consumer.client.decideDispute(disputeId, { accept: false, message: 'Not enough.' })).status).toBe('escalated');
    expectError(await consumer.client.decideDispute(disputeId, { accept: true }), 409, 'INVALID_STATE');
    // The operator finds it among the escalated ones (D15.3); only the operator lists them.
    const escalated = unwrap(await ex.admin.listDisputes({ status: 'escalated', limit: 100 }));
    expect(escalated.find((d) => d.id === disputeId)).toMatchObject({ status: 'escalated', transactionId: txId });
    expect(escalated.every((d) => d.status === 'escalated')).toBe(true);
    expectError(await consumer.client.listDisputes({ status: 'escalated' }), 401, 'UNAUTHENTICATED');
    const r = await ex.admin.resolveDispute(disputeId, { outcome: 'provider_wins', note: 'The output matches the contract.' });
    expect(unwrap(r)).toMatchObject({ status: 'resolved', outcome: 'provider_wins', refundCents: 0, resolvedBy: 'operator' });
    expect(await waitForStatus(consumer, txId, 'settled')).toMatchObject({ statusReason: 'dispute_provider_wins', platformFeeCents: 50 });
    expect(unwrap(await ex.admin.listDisputes({ status: 'escalated', limit: 100 })).map((d) => d.id)).not.toContain(disputeId);
    expect(await ledgerOf(consumer, txId)).toEqual(PAID);
    expect(await ledgerOf(provider, txId)).toEqual([['platform_fee', -50], ['settlement_in', 1000]]);
    // In the operator's audit log.
    await expect.poll(async () => unwrap(await ex.admin.operatorActions({ limit: 100 })).find((a) => a.target?.id === disputeId), { timeout: 10_000 }).toMatchObject({
      action: 'dispute.resolve', service: 'transactions', details: { outcome: 'provider_wins', refundCents: 0, transactionId: txId },
    });
  });

  it('contest escalates; the operator may split it (partial_refund) or refuse a bad amount', async () => {
    const { consumer, provider, txId, disputeId } = await disputed();
    expect(unwrap(await provider.client.respondDispute(disputeId, { outcome: 'contest', message: 'It is right.' })).status).toBe('escalated');
    expectError(await ex.admin.resolveDispute(disputeId, { outcome: 'partial_refund', refundCents: 1000 }), 400, 'VALIDATION_ERROR');
    expectError(await ex.admin.resolveDispute(disputeId, { outcome: 'provider_wins', refundCents: 10 }), 400, 'VALIDATION_ERROR');
    expectError(await consumer.client.resolveDispute(disputeId, { outcome: 'consumer_wins' }), 401, 'UNAUTHENTICATED');
    unwrap(await ex.admin.resolveDispute(disputeId, { outcome: 'partial_refund', refundCents: 250 }));
    await waitForStatus(consumer, txId, 'settled');
    expect(await ledgerOf(provider, txId)).toEqual([['platform_fee', -38], ['settlement_in', 750]]);
    expectError(await ex.admin.resolveDispute(disputeId, { outcome: 'consumer_wins' }), 409, 'INVALID_STATE');
    expectError(await ex.admin.resolveDispute(randomUUID(), { outcome: 'consumer_wins' }), 404, 'NOT_FOUND');
  });

  it('withdrawn by the consumer: the provider wins', async () => {
    const { consumer, provider, txId, disputeId } = await disputed();
    expectError(await provider.client.withdrawDispute(disputeId), 403, 'FORBIDDEN');
    expect(unwrap(await consumer.client.withdrawDispute(disputeId, { message: 'My mistake.' }))).toMatchObject({ status: 'resolved', outcome: 'provider_wins', resolvedBy: 'consumer' });
    await waitForStatus(consumer, txId, 'settled');
    expect(await ledgerOf(provider, txId)).toEqual([['platform_fee', -50], ['settlement_in', 1000]]);
    expectError(await consumer.client.withdrawDispute(disputeId), 409, 'INVALID_STATE');
  });

  it('provider_redo accepted: executing again with a new expiresAt, then delivered and verified as usual', async () => {
    const { consumer, provider, txId, disputeId } = await disputed();
    unwrap(await provider.client.respondDispute(disputeId, { outcome: 'provider_redo', message: 'I will run it again.' }));
    const before = Date.now();
    expect(unwrap(await consumer.client.decideDispute(disputeId, { accept: true }))).toMatchObject({ status: 'resolved', outcome: 'provider_redo', refundCents: 0 });
    const redo = unwrap(await consumer.client.getTransaction(txId));
    expect(redo).toMatchObject({ status: 'executing', statusReason: 'dispute_provider_redo', output: null, deliveredAt: null, deliveryAttempts: 0, disputeId });
    expect(Date.parse(redo.expiresAt!)).toBeGreaterThanOrEqual(before + 600_000 - 1000);
    expect(await wallet(consumer)).toMatchObject({ heldCents: 1000 });
    unwrap(await provider.client.deliver(txId, { output: OUTPUT }));
    // Disputed once: the consumer verifies or lets the review window settle it.
    expectError(await consumer.client.openDispute(txId, OPENING), 409, 'INVALID_STATE');
    expect(unwrap(await consumer.client.verify(txId, { qualityScore: 70 })).status).toBe('settled');
    expect(await ledgerOf(provider, txId)).toEqual([['platform_fee', -50], ['settlement_in', 1000]]);
  });

  it('respond is the provider\'s, once, while open; the body is checked', async () => {
    const { consumer, disputeId } = await disputed();
    const provider = unwrap(await consumer.client.getDispute(disputeId)).providerAgentId;
    expect(provider).toBeTruthy();
    expectError(await consumer.client.respondDispute(disputeId, { outcome: 'contest' }), 403, 'FORBIDDEN');
    expectError(await (await party(ex)).client.respondDispute(disputeId, { outcome: 'contest' }), 404, 'NOT_FOUND');
    expectError(await consumer.client.decideDispute(disputeId, { accept: true }), 409, 'INVALID_STATE');
  });
});

/** The durable timers still pending for `key` (a transaction or a dispute). */
async function pendingTimers(ex: TestExchange, key: string): Promise<number> {
  const c = new pg.Client({ connectionString: ex.databaseUrl });
  await c.connect();
  try {
    return Number((await c.query('select count(*) from transactions.timers where key = $1', [key])).rows[0].count);
  } finally {
    await c.end();
  }
}

describe('the owner agents of the parties\' accounts', () => {
  it('read the dispute and act for their agent: respond for the provider, decide for the consumer; anyone else is refused', async () => {
    const { consumer, provider, txId, disputeId } = await disputed();
    const stranger = await party(ex);
    // Each owner sees it, and the transaction from its side: a sale for one, a purchase for the other.
    expect(unwrap(await provider.owner.client.getDispute(disputeId)).status).toBe('open');
    expect(unwrap(await consumer.owner.client.getDispute(disputeId)).status).toBe('open');
    expect(unwrap(await provider.owner.client.listAccountTransactions(provider.accountId, { role: 'provider', status: 'disputed' })).map((t) => t.id)).toEqual([txId]);
    expect(unwrap(await provider.owner.client.getAccountTransaction(provider.accountId, txId))).toMatchObject({ roles: ['provider'], dispute: { id: disputeId } });
    expect(unwrap(await consumer.owner.client.getAccountTransaction(consumer.accountId, txId)).roles).toEqual(['consumer']);
    // Another account's owner, and another agent of an account, are refused.
    expectError(await stranger.owner.client.getDispute(disputeId), 404, 'NOT_FOUND');
    expectError(await stranger.owner.client.respondDispute(disputeId, { outcome: 'consumer_wins' }), 404, 'NOT_FOUND');
    const colleague = await ex.addAgent(provider.owner);
    expectError(await colleague.client.respondDispute(disputeId, { outcome: 'consumer_wins' }), 404, 'NOT_FOUND');
    // Each owner acts only for its own side.
    expectError(await consumer.owner.client.respondDispute(disputeId, { outcome: 'consumer_wins' }), 403, 'FORBIDDEN');
    unwrap(await provider.owner.client.respondDispute(disputeId, { outcome: 'partial_refund', refundCents: 400, message: 'Half-way, from the owner.' }));
    expectError(await provider.owner.client.decideDispute(disputeId, { accept: true }), 403, 'FORBIDDEN');
    const decided = unwrap(await consumer.owner.client.decideDispute(disputeId, { accept: true }));
    expect(decided).toMatchObject({ status: 'resolved', outcome: 'partial_refund', refundCents: 400 });
    expect(decided.messages.map((m) => m.from)).toEqual(['consumer', 'provider', 'consumer']);
    expect(await waitForStatus(consumer, txId, 'settled')).toMatchObject({ statusReason: 'dispute_partial_refund' });
  });
});

describe('the response deadline (D12.7)', () => {
  let fast: TestExchange;
  beforeAll(async () => {
    fast = await startTestExchange({ DISPUTE_RESPONSE_SECONDS: '2', SAGA_WAIT_MS: '2000' }, { timerPollMs: 100 });
  }, 120_000);
  afterAll(async () => {
    await fast?.stop();
  });

  it('resolves an unanswered dispute for the consumer, once, also across a restart', async () => {
    const { consumer, provider, txId, disputeId } = await disputed(fast);
    await fast.stopTransactions();
    // The provider's deadline passes while the service is down.
    fast.clock.advance(2500);
    await fast.startTransactions();
    expect(await waitForStatus(consumer, txId, 'failed', 10_000)).toMatchObject({ statusReason: 'dispute_consumer_wins' });
    expect(unwrap(await consumer.client.getDispute(disputeId))).toMatchObject({ status: 'resolved', outcome: 'consumer_wins', resolvedBy: 'deadline', refundCents: 1000 });
    await expect.poll(async () => ledgerOf(consumer, txId), { timeout: 10_000 }).toEqual(REFUNDED);
    expectError(await provider.client.respondDispute(disputeId, { outcome: 'contest' }), 409, 'INVALID_STATE');
  });

  it('leaves a dispute the provider answered in time alone', async () => {
    const { consumer, provider, txId, disputeId } = await disputed(fast);
    unwrap(await provider.client.respondDispute(disputeId, { outcome: 'contest' }));
    // The deadline passes, and its timer fires: it finds the dispute answered and leaves it.
    fast.clock.advance(2500);
    await fast.transactions!.fireDueTimers();
    await expect.poll(() => pendingTimers(fast, disputeId), { timeout: 5_000 }).toBe(0);
    expect(unwrap(await consumer.client.getDispute(disputeId)).status).toBe('escalated');
    expect(unwrap(await consumer.client.getTransaction(txId)).status).toBe('disputed');
  });

  it('keeps the ledger whole after a dispute resolved by its deadline', async () => {
    const { consumer, txId } = await disputed(fast);
    fast.clock.advance(2500);
    await fast.transactions!.fireDueTimers();
    expect(await waitForStatus(consumer, txId, 'failed', 10_000)).toMatchObject({ statusReason: 'dispute_consumer_wins' });
    expect(unwrap(await fast.admin.checkLedger()).violations).toEqual([]);
  });
});

describe('an outcome while the wallet is away (D9.9, terminal means settled)', () => {
  it('answers 202 with the dispute resolved, the transaction still disputed, and fails it once the price is back', async () => {
    const { consumer, provider, txId, disputeId } = await disputed();
    await ex.stopWallet();
    try {
      const r = await provider.client.respondDispute(disputeId, { outcome: 'consumer_wins' });
      expect(r.status).toBe(202);
      expect(unwrap(r)).toMatchObject({ status: 'resolved', outcome: 'consumer_wins' });
      expect(unwrap(await consumer.client.getTransaction(txId))).toMatchObject({ status: 'disputed' });
    } finally {
      await ex.startWallet();
    }
    expect(await waitForStatus(consumer, txId, 'failed')).toMatchObject({ statusReason: 'dispute_consumer_wins' });
    expect(await ledgerOf(consumer, txId)).toEqual(REFUNDED);
  });
});

describe('the ledger after each outcome', () => {
  it('holds every invariant once a dispute ended each way: refunded, split, paid, redone and settled', async () => {
    const won = await disputed();
    unwrap(await won.provider.client.respondDispute(won.disputeId, { outcome: 'consumer_wins' }));
    const split = await disputed();
    unwrap(await split.provider.client.respondDispute(split.disputeId, { outcome: 'partial_refund', refundCents: 400 }));
    unwrap(await split.consumer.client.decideDispute(split.disputeId, { accept: true }));
    const withdrawn = await disputed();
    unwrap(await withdrawn.consumer.client.withdrawDispute(withdrawn.disputeId, {}));
    const redone = await disputed();
    unwrap(await redone.provider.client.respondDispute(redone.disputeId, { outcome: 'provider_redo' }));
    unwrap(await redone.consumer.client.decideDispute(redone.disputeId, { accept: true }));
    unwrap(await redone.provider.client.deliver(redone.txId, { output: OUTPUT }));
    unwrap(await redone.consumer.client.verify(redone.txId, { qualityScore: 80 }));
    for (const [d, status] of [[won, 'failed'], [split, 'settled'], [withdrawn, 'settled'], [redone, 'settled']] as const) await waitForStatus(d.consumer, d.txId, status);
    expect(unwrap(await ex.admin.checkLedger()).violations).toEqual([]);
  });
});
