import { createPrivateKey, randomUUID, sign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ExchangeClient, signHttpMessage, signRequest, unwrap } from '@agent-exchange/client';
import { buildGateway } from '@aex/gateway';
import { testLogger } from '@aex/platform/testing';
import { startTestExchange, type TestExchange } from './harness.js';
import { createHeld, funded, INPUT, OUTPUT, party, serviceBody, wallet, type Party } from './transaction-kit.js';
import { keyIdOf } from './rfc9421-kit.js';

// D24.2: a signature is used once. The same signed request sent again within its window is refused
// (401 SIGNATURE_INVALID, reason "replayed") — on any gateway replica — unless it repeats the first
// one's Idempotency-Key, which replays the stored answer (D5). An RFC 9421 nonce is used once per key.

let ex: TestExchange;
let second: FastifyInstance;
let secondUrl: string;
let provider: Party;
let serviceId: string;

beforeAll(async () => {
  ex = await startTestExchange();
  second = await buildGateway({ bus: ex.bus, config: ex.config, logger: testLogger() });
  secondUrl = await second.listen({ host: '127.0.0.1', port: 0 });
  provider = await party(ex);
  serviceId = unwrap(await provider.client.createService(serviceBody())).id;
}, 120_000);

afterAll(async () => {
  await second?.close();
  await ex?.stop();
});

interface Sent {
  status: number;
  headers: Headers;
  text: string;
  json: { data: { id?: string; status?: string } | null; errors: Array<{ code: string; details?: Record<string, unknown> }> | null };
}

/** Sends exactly these bytes with exactly these headers (what a replaying attacker holds). */
async function send(base: string, method: string, target: string, headers: Record<string, string>, body?: string): Promise<Sent> {
  const res = await fetch(base + target, { method, headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: JSON.parse(text) as Sent['json'] };
}

/** A request signed once with the X-AE headers: its headers and body, to be sent as often as a test likes. */
function signedXae(m: Party, method: string, target: string, body?: unknown) {
  const text = body === undefined ? undefined : JSON.stringify(body);
  return { headers: { authorization: `Bearer ${m.apiKey}`, ...signRequest(m.keys!.secretKey, { method, target, ...(text !== undefined ? { body: text } : {}) }) }, body: text };
}

const replayed = (r: Sent) => {
  expect(r.status).toBe(401);
  expect(r.json.errors?.[0]).toMatchObject({ code: 'SIGNATURE_INVALID', details: { reason: 'replayed' } });
};

const heldOf = async (m: Party) => (await wallet(m)).heldCents;

describe('a signature is used once (D24.2)', () => {
  it('D24.2: the same signed purchase sent twice is refused the second time, and the price is held once', async () => {
    const consumer = await funded(ex, 3000);
    const buy = signedXae(consumer, 'POST', '/v1/transactions', { serviceId, input: INPUT });
    const first = await send(ex.url, 'POST', '/v1/transactions', buy.headers, buy.body);
    expect([201, 202]).toContain(first.status);
    replayed(await send(ex.url, 'POST', '/v1/transactions', buy.headers, buy.body));
    await createHeldWait(consumer, first.json.data!.id!);
    expect(await heldOf(consumer)).toBe(1000);
    expect(unwrap(await consumer.client.listTransactions({ role: 'consumer' }))).toHaveLength(1);
  });

  it('D24.2: the same signed purchase with the first one\'s Idempotency-Key is answered with the stored answer', async () => {
    const consumer = await funded(ex, 3000);
    const key = randomUUID();
    const buy = signedXae(consumer, 'POST', '/v1/transactions', { serviceId, input: INPUT });
    const headers = { ...buy.headers, 'idempotency-key': key };
    const first = await send(ex.url, 'POST', '/v1/transactions', headers, buy.body);
    expect([201, 202]).toContain(first.status);
    const again = await send(ex.url, 'POST', '/v1/transactions', headers, buy.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect([again.status, again.text]).toEqual([first.status, first.text]);
    // Another key, or none, under the used signature: refused.
    replayed(await send(ex.url, 'POST', '/v1/transactions', { ...buy.headers, 'idempotency-key': randomUUID() }, buy.body));
    replayed(await send(ex.url, 'POST', '/v1/transactions', buy.headers, buy.body));
    await createHeldWait(consumer, first.json.data!.id!);
    expect(await heldOf(consumer)).toBe(1000);
  });

  it('D24.2: a signature first sent without a key is not let through by adding one', async () => {
    const consumer = await funded(ex, 3000);
    const buy = signedXae(consumer, 'POST', '/v1/transactions', { serviceId, input: INPUT });
    expect([201, 202]).toContain((await send(ex.url, 'POST', '/v1/transactions', buy.headers, buy.body)).status);
    replayed(await send(ex.url, 'POST', '/v1/transactions', { ...buy.headers, 'idempotency-key': randomUUID() }, buy.body));
  });

  it('D24.2: a replay through another gateway replica is refused too', async () => {
    const consumer = await funded(ex, 3000);
    const buy = signedXae(consumer, 'POST', '/v1/transactions', { serviceId, input: INPUT });
    const first = await send(ex.url, 'POST', '/v1/transactions', buy.headers, buy.body);
    expect([201, 202]).toContain(first.status);
    replayed(await send(secondUrl, 'POST', '/v1/transactions', buy.headers, buy.body));
    await createHeldWait(consumer, first.json.data!.id!);
    expect(await heldOf(consumer)).toBe(1000);
  });

  it('D24.2: of the same signed purchase sent to two replicas at once, one is accepted', async () => {
    const consumer = await funded(ex, 3000);
    const buy = signedXae(consumer, 'POST', '/v1/transactions', { serviceId, input: INPUT });
    const answers = await Promise.all([ex.url, secondUrl, ex.url, secondUrl].map((base) => send(base, 'POST', '/v1/transactions', buy.headers, buy.body)));
    const accepted = answers.filter((a) => a.status === 201 || a.status === 202);
    expect(accepted).toHaveLength(1);
    for (const a of answers.filter((x) => !accepted.includes(x))) replayed(a);
    await createHeldWait(consumer, accepted[0]!.json.data!.id!);
    expect(await heldOf(consumer)).toBe(1000);
  });

  it('D24.2: a signed delivery sent again is refused', async () => {
    const consumer = await funded(ex, 3000);
    const trade = await createHeld(consumer, { serviceId, input: INPUT });
    const target = `/v1/transactions/${trade.id}/deliver`;
    const deliver = signedXae(provider, 'POST', target, { output: OUTPUT });
    expect((await send(ex.url, 'POST', target, deliver.headers, deliver.body)).status).toBe(200);
    replayed(await send(secondUrl, 'POST', target, deliver.headers, deliver.body));
  });

  it('D24.2: a signed read is used once too; base64url of the same signature is the same signature', async () => {
    const target = `/v1/agents/${provider.agentId}`;
    const read = signedXae(provider, 'GET', target);
    expect((await send(ex.url, 'GET', target, read.headers)).status).toBe(200);
    replayed(await send(ex.url, 'GET', target, read.headers));
    const url = read.headers['x-ae-signature'].replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    replayed(await send(ex.url, 'GET', target, { ...read.headers, 'x-ae-signature': url }));
  });

  it('D24.2: an RFC 9421 signature sent again is refused, and so is its nonce under a new signature', async () => {
    const consumer = await funded(ex, 3000);
    const keyId = await keyIdOf(ex.url, consumer.agentId);
    const body = JSON.stringify({ serviceId, input: INPUT });
    const nonce = randomUUID();
    const now = Math.floor(Date.now() / 1000);
    // Signed for the public address, which every replica answers to.
    const sign = (created: number, n: string): Record<string, string> => ({ authorization: `Bearer ${consumer.apiKey}`, ...signHttpMessage(consumer.keys!.secretKey, { method: 'POST', url: `${ex.config.PUBLIC_BASE_URL}/v1/transactions`, body, keyId, created, nonce: n }) });
    const first = sign(now, nonce);
    expect([201, 202]).toContain((await send(ex.url, 'POST', '/v1/transactions', first, body)).status);
    replayed(await send(ex.url, 'POST', '/v1/transactions', first, body));
    // A new `created`, so a new signature, under the same nonce: refused (on the other replica too).
    const renewed = sign(now - 1, nonce);
    expect(renewed.signature).not.toBe(first.signature);
    replayed(await send(secondUrl, 'POST', '/v1/transactions', renewed, body));
    // Also under the first signature's Idempotency-Key: the exception is for the same signature only.
    replayed(await send(ex.url, 'POST', '/v1/transactions', { ...renewed, 'idempotency-key': randomUUID() }, body));
    // A new nonce is a new signature.
    expect([201, 202]).toContain((await send(ex.url, 'POST', '/v1/transactions', sign(now, randomUUID()), body)).status);
    expect(unwrap(await consumer.client.listTransactions({ role: 'consumer' }))).toHaveLength(2);
  });

  it('D24.2: without a nonce, an RFC 9421 signature is used once by its bytes', async () => {
    const keyId = await keyIdOf(ex.url, provider.agentId);
    const target = `/v1/agents/${provider.agentId}`;
    const url = ex.config.PUBLIC_BASE_URL + target;
    const headers = { authorization: `Bearer ${provider.apiKey}`, ...signHttpMessage(provider.keys!.secretKey, { method: 'GET', url, keyId }) };
    // The client's signer adds a nonce; this one is signed without, as a stock signer may.
    const created = Math.floor(Date.now() / 1000);
    const plain = withoutNonce(provider, url, keyId, created);
    expect((await send(ex.url, 'GET', target, headers)).status).toBe(200);
    expect((await send(ex.url, 'GET', target, plain)).status).toBe(200);
    replayed(await send(secondUrl, 'GET', target, plain));
  });

  it('D24.2: the client signs every request anew: identical calls at once, in both schemes, all pass', async () => {
    const consumer = await funded(ex, 3000);
    const rfc = new ExchangeClient({ baseUrl: ex.url, apiKey: consumer.apiKey, signingSecretKey: consumer.keys!.secretKey, signatureScheme: 'rfc9421', agentId: consumer.agentId });
    for (const client of [consumer.client, rfc]) {
      const reads = await Promise.all(Array.from({ length: 5 }, () => client.getAgent(consumer.agentId)));
      expect(reads.map((r) => r.ok)).toEqual([true, true, true, true, true]);
    }
    // A call repeated under the same Idempotency-Key is signed anew: the stored answer comes back.
    const key = randomUUID();
    const first = unwrap(await rfc.createTransaction({ serviceId, input: INPUT }, { idempotencyKey: key }));
    const again = await rfc.createTransaction({ serviceId, input: INPUT }, { idempotencyKey: key });
    expect(again.ok && again.data.id).toBe(first.id);
    expect(again.headers?.get('idempotent-replayed')).toBe('true');
  });
});

/** The headers of an RFC 9421 signature of a GET without a nonce parameter, made by hand. */
function withoutNonce(m: Party, url: string, keyId: string, created: number): Record<string, string> {
  const params = `("@method" "@target-uri");created=${created};keyid="${keyId}";alg="ed25519"`;
  const base = `"@method": GET\n"@target-uri": ${url}\n"@signature-params": ${params}`;
  return { authorization: `Bearer ${m.apiKey}`, 'signature-input': `sig1=${params}`, signature: `sig1=:${edSign(base, m)}:` };
}

/** Standard base64 of the Ed25519 signature of `text` by a key pair's base64 seed. */
function edSign(text: string, m: Party): string {
  const x = Buffer.from(m.keys!.publicKey, 'base64').toString('base64url');
  const d = Buffer.from(m.keys!.secretKey, 'base64').toString('base64url');
  return sign(null, Buffer.from(text), createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', x, d }, format: 'jwk' })).toString('base64');
}

async function createHeldWait(m: Party, id: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    if (unwrap(await m.client.getTransaction(id)).status === 'funds_held') return;
  }
  throw new Error(`transaction ${id} never held its price`);
}
