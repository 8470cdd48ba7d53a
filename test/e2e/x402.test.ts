import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { decodePaymentResponseHeader } from '@x402/fetch';
import { unwrap } from '@agent-exchange/client';
import type { ReceiptPayload, TransactionView } from '@aex/contracts';
import { startTestExchange, type TestExchange } from './harness.js';
import { funded, ledgerOf, party, serviceBody, wallet, waitForStatus, type Party } from './transaction-kit.js';
import { decodeHeader, facilitator, payingFetch, PRICE_CENTS, providerServer, REPORT, requirementsOf, signedPayload, TIMEOUT_SECONDS, type ProviderServer } from './x402-kit.js';

// D19 end to end: a provider's own HTTP server, protected by stock @x402/express with the exchange
// as its facilitator, paid by a stock @x402/fetch client with the aex-escrow scheme of
// @agent-exchange/x402 from a card-funded (sandbox processor) exchange wallet. Real exchange,
// real Postgres and NATS; the provider's server and the buyer run in this process.

let ex: TestExchange;
let provider: Party;
let other: Party;
let serviceId: string;
let server: ProviderServer;
const FEE_CENTS = 25; // D9.11: 5 % of 500 cents.

beforeAll(async () => {
  ex = await startTestExchange({ SAGA_WAIT_MS: '5000' });
  provider = await party(ex);
  other = await party(ex);
  serviceId = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: PRICE_CENTS } }))).id;
  server = await providerServer(ex, provider, serviceId);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await ex?.stop();
});

const jwks = async () => (await (await fetch(`${ex.url}/.well-known/jwks.json`)).json()) as JSONWebKeySet;

/** The buyer's x402 transactions, newest first. */
const x402Transactions = async (buyer: Party): Promise<TransactionView[]> => unwrap(await buyer.client.listTransactions({ role: 'consumer' })).filter((t) => t.x402);

async function receiptClaims(buyer: Party, id: string): Promise<ReceiptPayload> {
  const { receipt } = unwrap(await buyer.client.receipt(id));
  const { payload } = await compactVerify(receipt, createLocalJWKSet(await jwks()));
  return JSON.parse(new TextDecoder().decode(payload)) as ReceiptPayload;
}

describe('x402 facilitator routes (D19.2)', () => {
  it('GET /x402/supported names aex-escrow on aex:{domain}, x402 version 2, as bare JSON without a key', async () => {
    const res = await fetch(`${ex.url}/x402/supported`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { kinds: unknown[] };
    expect(body.kinds).toContainEqual({ x402Version: 2, scheme: 'aex-escrow', network: 'aex:exchange.test%3A8080' });
  });

  it('verify and settle refuse another agent\'s key (403) and no key (401) in the envelope', async () => {
    const buyer = await funded(ex, 2_000);
    const requirements = await requirementsOf(`${server.url}/report`);
    const payload = signedPayload(buyer, requirements);
    for (const path of ['verify', 'settle'] as const) {
      const foreign = await facilitator(ex, path, payload, requirements, other.apiKey);
      expect(foreign.status).toBe(403);
      expect(foreign.body).toMatchObject({ data: null, errors: [{ code: 'FORBIDDEN' }] });
      const anonymous = await facilitator(ex, path, payload, requirements);
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toMatchObject({ data: null, errors: [{ code: 'UNAUTHENTICATED' }] });
    }
    expect(await x402Transactions(buyer)).toEqual([]);
  });

  it('a body that is not an x402 facilitator request is a 400 VALIDATION_ERROR naming the field', async () => {
    const requirements = await requirementsOf(`${server.url}/report`);
    const res = await fetch(`${ex.url}/x402/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${provider.apiKey}` },
      body: JSON.stringify({ x402Version: 2, paymentRequirements: { ...requirements, amount: '5.00' } }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { errors: { code: string; field: string }[] };
    expect(body.errors.map((e) => e.field)).toEqual(expect.arrayContaining(['/body/paymentPayload', '/body/paymentRequirements/amount']));
    expect(body.errors.every((e) => e.code === 'VALIDATION_ERROR')).toBe(true);
  });

  it('a payload not signed by the payer\'s registered key is not valid, and nothing is held', async () => {
    const buyer = await funded(ex, 2_000);
    const requirements = await requirementsOf(`${server.url}/report`);
    const forged = signedPayload(buyer, requirements, { key: other.keys!.secretKey });
    const res = await facilitator(ex, 'verify', forged, requirements, provider.apiKey);
    expect(res).toMatchObject({ status: 200, body: { isValid: false, invalidReason: 'invalid_signature', payer: buyer.agentId } });
    expect((await wallet(buyer)).availableCents).toBe(2_000);
  });

  it('settle of a payment the exchange never verified, or of another provider\'s, is refused as unknown', async () => {
    const buyer = await funded(ex, 2_000);
    const requirements = await requirementsOf(`${server.url}/report`);
    const never = await facilitator(ex, 'settle', signedPayload(buyer, requirements), requirements, provider.apiKey);
    expect(never).toMatchObject({ status: 200, body: { success: false, errorReason: 'unknown_payment', transaction: '' } });
    // A payment to the provider, verified; then another provider presents the same nonce, signed for itself.
    const paid = signedPayload(buyer, requirements);
    expect((await facilitator(ex, 'verify', paid, requirements, provider.apiKey)).body).toMatchObject({ isValid: true });
    const theirs = { ...requirements, payTo: other.agentId };
    const foreign = await facilitator(ex, 'settle', signedPayload(buyer, theirs, { nonce: (paid.payload as { nonce: string }).nonce }), theirs, other.apiKey);
    expect(foreign).toMatchObject({ status: 200, body: { success: false, errorReason: 'unknown_payment' } });
    const [t] = await x402Transactions(buyer);
    expect(t).toMatchObject({ status: 'funds_held', providerAgentId: provider.agentId });
  });
});

describe('paying an x402 resource from an exchange wallet (D19)', () => {
  it('402, then the stock client pays: the resource, PAYMENT-RESPONSE naming the settled transaction, D13 entries, a D18 receipt', async () => {
    const buyer = await funded(ex, 2_000);
    const before = await wallet(provider);
    const unpaid = await fetch(`${server.url}/report`);
    expect(unpaid.status).toBe(402);
    const required = decodeHeader<{ x402Version: number; accepts: Record<string, unknown>[] }>(unpaid.headers.get('payment-required'));
    expect(required.x402Version).toBe(2);
    expect(required.accepts[0]).toMatchObject({
      scheme: 'aex-escrow', network: 'aex:exchange.test%3A8080', amount: String(PRICE_CENTS), asset: 'USD', payTo: provider.agentId, maxTimeoutSeconds: TIMEOUT_SECONDS, extra: { serviceId },
    });

    const res = await payingFetch(ex, buyer).fetch(`${server.url}/report`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(REPORT);
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settlement).toMatchObject({ success: true, network: 'aex:exchange.test%3A8080', payer: buyer.agentId });

    const t = await waitForStatus(buyer, settlement.transaction, 'settled');
    expect(t).toMatchObject({ x402: true, serviceId, providerAgentId: provider.agentId, agreedPriceCents: PRICE_CENTS, platformFeeCents: FEE_CENTS });
    expect(await ledgerOf(buyer, t.id)).toEqual([['fund_hold', -PRICE_CENTS], ['fund_release', PRICE_CENTS], ['settlement_out', -PRICE_CENTS]]);
    expect(await ledgerOf(provider, t.id)).toEqual([['platform_fee', -FEE_CENTS], ['settlement_in', PRICE_CENTS]]);
    expect(await wallet(buyer)).toMatchObject({ balanceCents: 2_000 - PRICE_CENTS, heldCents: 0 });
    expect((await wallet(provider)).balanceCents).toBe(before.balanceCents + PRICE_CENTS - FEE_CENTS);
    expect(unwrap(await ex.admin.checkLedger()).violations).toEqual([]);

    const claims = await receiptClaims(buyer, t.id);
    expect(claims.sub).toBe(t.id);
    expect(claims.receipt).toMatchObject({ transactionId: t.id, status: 'settled', serviceId, priceCents: PRICE_CENTS, platformFeeCents: FEE_CENTS, refundedCents: 0, currency: 'USD' });
  });

  it('a replayed payment is refused: the resource is not served again and no money moves (D19.2 nonce used once)', async () => {
    const buyer = await funded(ex, 2_000);
    const paying = payingFetch(ex, buyer);
    expect((await paying.fetch(`${server.url}/report`)).status).toBe(200);
    const [header] = paying.sent;
    const replay = await fetch(`${server.url}/report`, { headers: { 'payment-signature': header! } });
    expect(replay.status).toBe(402);
    expect(decodeHeader<{ error?: string }>(replay.headers.get('payment-required')).error).toBe('nonce_already_used');
    const payload = decodeHeader<{ accepted: unknown }>(header!);
    const direct = await facilitator(ex, 'verify', payload, payload.accepted, provider.apiKey);
    expect(direct).toMatchObject({ status: 200, body: { isValid: false, invalidReason: 'nonce_already_used' } });
    expect(await x402Transactions(buyer)).toHaveLength(1);
    expect(await wallet(buyer)).toMatchObject({ balanceCents: 2_000 - PRICE_CENTS, heldCents: 0 });
  });

  it('delegation limits apply: a payment above maxTransactionCents is not valid and nothing is held (D10.2)', async () => {
    const buyer = await funded(ex, 2_000);
    unwrap(await buyer.owner.client.setAgentDelegation(buyer.agentId, { maxTransactionCents: PRICE_CENTS - 1 }));
    const paying = payingFetch(ex, buyer);
    const res = await paying.fetch(`${server.url}/report`);
    expect(res.status).toBe(402);
    expect(decodeHeader<{ error?: string }>(res.headers.get('payment-required')).error).toBe('delegation_exceeded');
    expect(await x402Transactions(buyer)).toEqual([]);
    expect(await wallet(buyer)).toMatchObject({ availableCents: 2_000, heldCents: 0 });
  });

  it('a payer without the funds is not valid: insufficient_funds, and the payment fails with nothing held', async () => {
    const buyer = await party(ex);
    const res = await payingFetch(ex, buyer).fetch(`${server.url}/report`);
    expect(res.status).toBe(402);
    expect(decodeHeader<{ error?: string }>(res.headers.get('payment-required')).error).toBe('insufficient_funds');
    const [t] = await x402Transactions(buyer);
    expect(t).toMatchObject({ status: 'failed' });
  });

  it('a payment that needs approval waits awaiting_approval; once the owner approves, the same signed payment is paid once (D10.3)', async () => {
    const buyer = await funded(ex, 2_000);
    unwrap(await buyer.owner.client.setAgentDelegation(buyer.agentId, { requireHumanApprovalAboveCents: PRICE_CENTS - 1 }));
    const paying = payingFetch(ex, buyer);
    const asked = await paying.fetch(`${server.url}/report`);
    expect(asked.status).toBe(402);
    expect(decodeHeader<{ error?: string }>(asked.headers.get('payment-required')).error).toBe('approval_required');
    const [waiting] = await x402Transactions(buyer);
    expect(waiting).toMatchObject({ status: 'awaiting_approval', x402: true });
    expect((await wallet(buyer)).heldCents).toBe(0);

    const [header] = paying.sent;
    // Before the approval, the same payment is still not valid.
    expect((await fetch(`${server.url}/report`, { headers: { 'payment-signature': header! } })).status).toBe(402);
    unwrap(await buyer.owner.client.approve(waiting!.id));
    await waitForStatus(buyer, waiting!.id, 'funds_held');
    const paid = await fetch(`${server.url}/report`, { headers: { 'payment-signature': header! } });
    expect(paid.status).toBe(200);
    expect(await paid.json()).toEqual(REPORT);
    expect(decodePaymentResponseHeader(paid.headers.get('payment-response')!)).toMatchObject({ success: true, transaction: waiting!.id });
    await waitForStatus(buyer, waiting!.id, 'settled');
    // Once is all: the same payment again is a replay.
    expect((await fetch(`${server.url}/report`, { headers: { 'payment-signature': header! } })).status).toBe(402);
    expect(await wallet(buyer)).toMatchObject({ balanceCents: 2_000 - PRICE_CENTS, heldCents: 0 });
  });

  it('a server that never settles: the hold returns after maxTimeoutSeconds, expired, with its receipt (D19.2)', async () => {
    const buyer = await funded(ex, 2_000);
    const paying = payingFetch(ex, buyer);
    const res = await paying.fetch(`${server.url}/broken`);
    expect(res.status).toBe(500);
    const [t] = await x402Transactions(buyer);
    expect(t).toMatchObject({ status: 'funds_held', x402: true });
    expect(new Date(t!.expiresAt!).getTime() - new Date(t!.fundsHeldAt!).getTime()).toBe(TIMEOUT_SECONDS * 1000);
    expect(await wallet(buyer)).toMatchObject({ availableCents: 2_000 - PRICE_CENTS, heldCents: PRICE_CENTS });

    ex.clock.advance((TIMEOUT_SECONDS + 1) * 1000);
    const expired = await waitForStatus(buyer, t!.id, 'expired');
    expect(expired.statusReason).toBe('sla_timeout');
    expect(await wallet(buyer)).toMatchObject({ availableCents: 2_000, heldCents: 0 });
    expect(await ledgerOf(buyer, t!.id)).toEqual([['fund_hold', -PRICE_CENTS], ['fund_return', PRICE_CENTS]]);
    expect(unwrap(await ex.admin.checkLedger()).violations).toEqual([]);
    expect((await receiptClaims(buyer, t!.id)).receipt).toMatchObject({ status: 'expired', priceCents: PRICE_CENTS });
    // An expired payment cannot be settled any more.
    const payload = decodeHeader<{ accepted: unknown }>(paying.sent[0]!);
    const settle = await facilitator(ex, 'settle', payload, payload.accepted, provider.apiKey);
    expect(settle.body).toMatchObject({ success: false, errorReason: 'payment_expired', transaction: t!.id });
  });
});
