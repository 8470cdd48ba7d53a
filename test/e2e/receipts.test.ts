import http from 'node:http';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactVerify, createLocalJWKSet, createRemoteJWKSet, decodeProtectedHeader, type JSONWebKeySet } from 'jose';
import { signingString, unwrap, verifySignature } from '@agent-exchange/client';
import type { ReceiptPayload } from '@aex/contracts';
import { expectError, startTestExchange, type TestExchange } from './harness.js';
import { createHeld, funded, INPUT, OUTPUT, party, serviceBody, waitForStatus, webhookUrlKnown, type Party } from './transaction-kit.js';

// D18: every purchase that ends after its money was held has a receipt — a compact JWS that a stock
// JOSE library (`jose`) verifies with the exchange's JWK set alone, made once, carried by the event
// that ended the purchase, and still verifying after the operator rotates the key.

let ex: TestExchange;
let provider: Party;
let serviceId: string;
let meteredId: string;
/** The receipts the consumers' webhooks carried, by transaction. */
const hooked = new Map<string, string>();
let server: http.Server;
let hookUrl: string;

beforeAll(async () => {
  ex = await startTestExchange({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', SAGA_WAIT_MS: '5000' });
  provider = await party(ex);
  serviceId = unwrap(await provider.client.createService(serviceBody())).id;
  meteredId = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'per_unit', basePriceCents: 100, unit: 'page' } }))).id;
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.end();
      const event = JSON.parse(body) as { data: { transactionId?: string; receipt?: string } };
      if (event.data.transactionId && event.data.receipt) hooked.set(event.data.transactionId, event.data.receipt);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
}, 120_000);

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await ex?.stop();
});

/** RFC 8785 for the JSON these tests send, written here so the digests are not checked by the code that made them. */
function jcs(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs((v as Record<string, unknown>)[k])}`).join(',')}}`;
}
const digest = (v: unknown) => `sha-256=:${createHash('sha256').update(jcs(v)).digest('base64')}:`;

async function jwks(): Promise<JSONWebKeySet> {
  const res = await fetch(`${ex.url}/.well-known/jwks.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/jwk-set\+json/);
  return (await res.json()) as JSONWebKeySet;
}

/** Verifies a receipt as anyone would: `jose`'s compactVerify against the published JWK set. */
async function verified(jws: string, set?: JSONWebKeySet): Promise<{ kid: string; payload: ReceiptPayload }> {
  const { payload, protectedHeader } = await compactVerify(jws, createLocalJWKSet(set ?? (await jwks())));
  expect(protectedHeader).toMatchObject({ alg: 'EdDSA', typ: 'aex-receipt+jwt' });
  return { kid: protectedHeader.kid!, payload: JSON.parse(new TextDecoder().decode(payload)) as ReceiptPayload };
}

async function consumer(): Promise<Party> {
  const c = await funded(ex, 10_000);
  unwrap(await c.client.updateAgent(c.agentId, { webhookUrl: hookUrl }));
  await webhookUrlKnown(c.client, c.agentId);
  return c;
}

async function settled(c: Party) {
  const held = await createHeld(c, { serviceId, input: INPUT });
  unwrap(await provider.client.deliver(held.id, { output: OUTPUT }));
  unwrap(await c.client.verify(held.id));
  return waitForStatus(c, held.id, 'settled');
}

describe('signed receipts (D18)', () => {
  it('D18.1: the JWK set lists Ed25519 public keys only; the exchange DID document lists the same keys', async () => {
    const set = await jwks();
    expect(set.keys.length).toBeGreaterThan(0);
    for (const k of set.keys) {
      expect(k).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
      expect(k.kid).toEqual(expect.any(String));
      expect(k).not.toHaveProperty('d');
    }
    const res = await fetch(`${ex.url}/.well-known/did.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { id: string; verificationMethod: Array<{ id: string; publicKeyJwk: { kid: string; x: string } }>; assertionMethod: string[] };
    expect(doc.id).toBe('did:web:exchange.test%3A8080');
    expect(doc.verificationMethod.map((m) => m.publicKeyJwk.x)).toEqual(set.keys.map((k) => k.x));
    expect(doc.assertionMethod).toEqual(doc.verificationMethod.map((m) => m.id));
  });

  it('D18.2, D18.3: a settled purchase has a receipt jose verifies with the JWK set alone, stating the trade; made once', async () => {
    const c = await consumer();
    const t = await settled(c);
    const got = unwrap(await c.client.receipt(t.id));
    const { payload } = await verified(got.receipt);
    expect(payload).toMatchObject({ iss: 'did:web:exchange.test%3A8080', sub: t.id });
    expect(payload.iat).toEqual(expect.any(Number));
    expect(payload.receipt).toEqual({
      transactionId: t.id, status: 'settled', outcome: null, serviceId, serviceRevision: 1, serviceVersion: '1.0.0',
      consumer: `did:web:exchange.test%3A8080:agents:${c.agentId}`, provider: `did:web:exchange.test%3A8080:agents:${provider.agentId}`,
      inputDigest: digest(INPUT), outputDigest: digest(OUTPUT), units: 1, priceCents: 1000, platformFeeCents: 50, refundedCents: 0, currency: 'USD',
      sessionId: null, deliveredAt: t.deliveredAt, settledAt: t.settledAt, delivery: { scheme: 'x-ae', signature: expect.any(String), signatureTimestamp: expect.any(String) },
    });
    expect(got.claims).toEqual(payload.receipt);
    // The provider sees the same bytes; the event that settled it carried them too.
    expect(unwrap(await provider.client.receipt(t.id)).receipt).toBe(got.receipt);
    await expect.poll(() => hooked.get(t.id), { timeout: 15_000 }).toBe(got.receipt);
  });

  it('D18.2: the delivery signature in the receipt is the provider’s, over the delivery it made', async () => {
    const c = await consumer();
    const t = await settled(c);
    const { payload } = await verified(unwrap(await c.client.receipt(t.id)).receipt);
    const sig = payload.receipt.delivery!;
    // Anyone holding the provider's public key (its DID document lists it) checks it over the delivery's request.
    const message = signingString(sig.signatureTimestamp, 'POST', `/v1/transactions/${t.id}/deliver`, JSON.stringify({ output: OUTPUT }));
    expect(verifySignature(provider.keys!.publicKey, sig.signature, message)).toBe(true);
    expect(verifySignature(provider.keys!.publicKey, sig.signature, message.replace('POST', 'PUT'))).toBe(false);
  });

  it('D18.3: parties only; 409 before the purchase ends; none for a purchase that ended before any money was held', async () => {
    const c = await consumer();
    const held = await createHeld(c, { serviceId, input: INPUT });
    expectError(await c.client.receipt(held.id), 409, 'INVALID_STATE');
    expectError(await (await party(ex)).client.receipt(held.id), 404, 'NOT_FOUND');
    const res = await fetch(`${ex.url}/v1/transactions/${held.id}/receipt`);
    expect(res.status).toBe(401);
    // Cancelled with the price held: a receipt that says the whole hold came back.
    unwrap(await c.client.cancel(held.id));
    const cancelled = await waitForStatus(c, held.id, 'cancelled');
    const { payload } = await verified(unwrap(await c.client.receipt(cancelled.id)).receipt);
    expect(payload.receipt).toMatchObject({ status: 'cancelled', priceCents: 1000, platformFeeCents: 0, refundedCents: 1000, outputDigest: null, delivery: null, settledAt: null });
    // A purchase refused for funds never held anything: it has no receipt.
    const poor = await party(ex);
    const refused = await poor.client.createTransaction({ serviceId, input: INPUT });
    expect(refused.ok).toBe(false);
    const failed = unwrap(await poor.client.listTransactions({ status: 'failed' }))[0]!;
    expectError(await poor.client.receipt(failed.id), 404, 'NOT_FOUND');
  });

  it('D18.2 with D17: a metered receipt states the units used and the price of them; a partial refund its refund and outcome', async () => {
    const c = await consumer();
    const t = unwrap(await c.client.createTransaction({ serviceId: meteredId, input: INPUT, maxUnits: 10 }));
    await waitForStatus(c, t.id, 'funds_held');
    unwrap(await provider.client.deliver(t.id, { output: OUTPUT, usage: { units: 6 } }));
    const dispute = unwrap(await c.client.openDispute(t.id, { reason: 'usage_overstated', description: 'Four pages were read, six were billed.' }));
    unwrap(await provider.client.respondDispute(dispute.id, { outcome: 'partial_refund', refundCents: 200 }));
    unwrap(await c.client.decideDispute(dispute.id, { accept: true }));
    await waitForStatus(c, t.id, 'settled');
    const { payload } = await verified(unwrap(await c.client.receipt(t.id)).receipt);
    expect(payload.receipt).toMatchObject({ status: 'settled', outcome: 'partial_refund', units: 6, priceCents: 600, refundedCents: 200, platformFeeCents: 20 });
  });

  it('D18.4: after a rotation new receipts carry the new kid; receipts of the retired key still verify with the JWK set', async () => {
    const c = await consumer();
    const before = unwrap(await c.client.receipt((await settled(c)).id)).receipt;
    const oldKid = decodeProtectedHeader(before).kid!;
    expectError(await ex.anon.rotateReceiptKey(), 401, 'UNAUTHENTICATED');
    expectError(await c.client.rotateReceiptKey(), 401, 'UNAUTHENTICATED');
    const rotated = unwrap(await ex.admin.rotateReceiptKey());
    expect(rotated.current).not.toBe(oldKid);
    expect(rotated.retired.map((r) => r.kid)).toContain(oldKid);
    const after = unwrap(await c.client.receipt((await settled(c)).id)).receipt;
    expect(decodeProtectedHeader(after).kid).toBe(rotated.current);
    // Both verify against the published set — fetched as a remote JWK set, as a verifier elsewhere would.
    const remote = createRemoteJWKSet(new URL(`${ex.url}/.well-known/jwks.json`));
    for (const jws of [before, after]) expect((await compactVerify(jws, remote)).protectedHeader.typ).toBe('aex-receipt+jwt');
    // A receipt is made once: the old one is still the one answered.
    const firstId = (await verified(before)).payload.sub;
    expect(unwrap(await c.client.receipt(firstId)).receipt).toBe(before);
  });

  it('a receipt altered in any byte does not verify', async () => {
    const c = await consumer();
    const jws = unwrap(await c.client.receipt((await settled(c)).id)).receipt;
    const [h, p, s] = jws.split('.');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString('utf8')) as ReceiptPayload;
    claims.receipt.priceCents = 1;
    const forged = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
    await expect(compactVerify(forged, createLocalJWKSet(await jwks()))).rejects.toThrow();
  });
});
