import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpbis } from 'http-message-signatures';
import { generateSigningKey, unwrap, type SigningKeyPair } from '@agent-exchange/client';
import { startTestExchange, type Member, type TestExchange } from './harness.js';
import { funded, INPUT, OUTPUT, party, serviceBody, waitForStatus, type Party } from './transaction-kit.js';
import { keyIdOf as keyIdAt, signerOf } from './rfc9421-kit.js';

// D20: every signed route accepts an RFC 9421 signature (with an RFC 9530 Content-Digest) in place
// of the X-AE-* headers. A stock library (`http-message-signatures`) signs here, so the gateway is
// checked against someone else's reading of the RFC.

let ex: TestExchange;
let provider: Party;
let serviceId: string;

beforeAll(async () => {
  ex = await startTestExchange({ SAGA_WAIT_MS: '5000' });
  provider = await party(ex);
  serviceId = unwrap(await provider.client.createService(serviceBody())).id;
}, 120_000);

afterAll(async () => {
  await ex?.stop();
});

const keyIdOf = (agentId: string) => keyIdAt(ex.url, agentId);

interface SignedOptions {
  keyid?: string;
  keys?: SigningKeyPair;
  fields?: string[];
  created?: Date;
  expires?: Date;
  /** Sent instead of the signed body (a body changed after signing). */
  sendBody?: string;
  digestOf?: string;
  extraHeaders?: Record<string, string>;
}

/** A request signed by the stock library; answers status and the envelope. */
async function signedCall(m: Member, method: string, path: string, body: unknown, o: SignedOptions = {}) {
  const text = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { authorization: `Bearer ${m.apiKey}`, ...o.extraHeaders };
  if (text !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-digest'] = `sha-256=:${createHash('sha256').update(o.digestOf ?? text).digest('base64')}:`;
  }
  const fields = o.fields ?? (text === undefined ? ['@method', '@target-uri'] : ['@method', '@target-uri', 'content-digest']);
  const keyid = o.keyid ?? (await keyIdOf(m.agentId));
  const now = o.created ?? new Date();
  const signed = await httpbis.signMessage(
    { key: signerOf(o.keys ?? m.keys!, keyid), fields, paramValues: { created: now, expires: o.expires ?? new Date(now.getTime() + 60_000) } },
    { method, url: `${ex.url}${path}`, headers },
  );
  const res = await fetch(`${ex.url}${path}`, { method, headers: signed.headers as Record<string, string>, body: o.sendBody ?? text });
  return { status: res.status, json: (await res.json()) as { data?: Record<string, unknown>; errors?: Array<{ code: string; message: string }>; meta?: unknown } };
}

const codeOf = (r: { json: { errors?: Array<{ code: string }> } }) => r.json.errors?.[0]?.code;

describe('RFC 9421 signatures on the signed routes (D20.1)', () => {
  it('a purchase created and delivered with RFC 9421 signatures settles, and its receipt names the scheme (D20.1, D20.3)', async () => {
    const consumer = await funded(ex, 5_000);
    const created = await signedCall(consumer, 'POST', '/v1/transactions', { serviceId, input: INPUT });
    expect([201, 202]).toContain(created.status);
    const id = created.json.data!.id as string;
    await waitForStatus(consumer, id, 'funds_held');
    const delivered = await signedCall(provider, 'POST', `/v1/transactions/${id}/deliver`, { output: OUTPUT });
    expect(delivered.status).toBe(200);
    expect((await waitForStatus(consumer, id, 'delivered')).status).toBe('delivered');
    unwrap(await consumer.client.verify(id));
    await waitForStatus(consumer, id, 'settled');
    const receipt = unwrap(await consumer.client.receipt(id));
    expect(receipt.claims.delivery).toMatchObject({ scheme: 'rfc9421' });
    expect(receipt.claims.delivery!.signatureInput).toMatch(/^sig=\("@method" "@target-uri" "content-digest"\);keyid="did:web:[^"]+#key-1";alg="ed25519";created=\d+;expires=\d+$/);
    expect(receipt.claims.delivery!.signature).toMatch(/^sig=:[A-Za-z0-9+/]{86}==:$/);
  });

  it('@authority, @path and @query in place of @target-uri are accepted on a signed read (D20.1)', async () => {
    const consumer = await funded(ex, 1_000);
    const res = await signedCall(consumer, 'GET', `/v1/transactions?limit=5`, undefined, { fields: ['@method', '@authority', '@path', '@query'] });
    expect(res.status).toBe(200);
    const unsignedQuery = await signedCall(consumer, 'GET', `/v1/transactions?limit=5`, undefined, { fields: ['@method', '@authority', '@path'] });
    expect(unsignedQuery.status).toBe(401);
    expect(unsignedQuery.json.errors![0]!.message).toMatch(/@query/);
  });

  it('Web Bot Auth\'s Signature-Agent header is accepted and ignored (D20.2)', async () => {
    const consumer = await funded(ex, 5_000);
    const res = await signedCall(consumer, 'POST', '/v1/transactions', { serviceId, input: INPUT }, { extraHeaders: { 'signature-agent': '"https://bots.example.com"' } });
    expect([201, 202]).toContain(res.status);
  });

  it('a body changed after signing, a wrong digest, a missing content-digest and another key are refused 401 SIGNATURE_INVALID (D20.1)', async () => {
    const consumer = await funded(ex, 5_000);
    const body = { serviceId, input: INPUT };
    const changed = await signedCall(consumer, 'POST', '/v1/transactions', body, { sendBody: JSON.stringify({ ...body, maxPriceCents: 1 }) });
    expect([changed.status, codeOf(changed)]).toEqual([401, 'SIGNATURE_INVALID']);
    expect(changed.json.errors![0]!.message).toMatch(/Content-Digest/);
    const digestOfOther = await signedCall(consumer, 'POST', '/v1/transactions', body, { digestOf: '{}' });
    expect([digestOfOther.status, codeOf(digestOfOther)]).toEqual([401, 'SIGNATURE_INVALID']);
    const uncovered = await signedCall(consumer, 'POST', '/v1/transactions', body, { fields: ['@method', '@target-uri'] });
    expect([uncovered.status, codeOf(uncovered)]).toEqual([401, 'SIGNATURE_INVALID']);
    expect(uncovered.json.errors![0]!.message).toMatch(/content-digest/);
    const stranger = await signedCall(consumer, 'POST', '/v1/transactions', body, { keys: generateSigningKey() });
    expect([stranger.status, codeOf(stranger)]).toEqual([401, 'SIGNATURE_INVALID']);
    expect((stranger.json.errors![0] as unknown as { details: { signatureBase: string } }).details.signatureBase).toMatch(/^"@method": POST\n"@target-uri": /);
    const noMethod = await signedCall(consumer, 'POST', '/v1/transactions', body, { fields: ['@target-uri', 'content-digest'] });
    expect([noMethod.status, codeOf(noMethod)]).toEqual([401, 'SIGNATURE_INVALID']);
  });

  it('a keyid of another agent or of a replaced key is refused; the current key id verifies (D20.1, D6.7)', async () => {
    const consumer = await funded(ex, 5_000);
    const body = { serviceId, input: INPUT };
    const foreign = await signedCall(consumer, 'POST', '/v1/transactions', body, { keyid: await keyIdOf(provider.agentId) });
    expect([foreign.status, codeOf(foreign)]).toEqual([401, 'SIGNATURE_INVALID']);
    const oldKeyId = await keyIdOf(consumer.agentId);
    const next = generateSigningKey();
    unwrap(await consumer.client.updateAgent(consumer.agentId, { signingKeyPublic: next.publicKey }));
    const replaced = await signedCall(consumer, 'POST', '/v1/transactions', body, { keyid: oldKeyId, keys: next });
    expect([replaced.status, codeOf(replaced)]).toEqual([401, 'SIGNATURE_INVALID']);
    expect(replaced.json.errors![0]!.message).toMatch(/replaced key/);
    const current = await signedCall(consumer, 'POST', '/v1/transactions', body, { keys: next });
    expect([201, 202]).toContain(current.status);
  });

  it('a created time 10 minutes old, or an expires that is past, is refused 401 SIGNATURE_EXPIRED (D20.1)', async () => {
    const consumer = await funded(ex, 5_000);
    const body = { serviceId, input: INPUT };
    const old = await signedCall(consumer, 'POST', '/v1/transactions', body, { created: new Date(Date.now() - 600_000), expires: new Date(Date.now() + 60_000) });
    expect([old.status, codeOf(old)]).toEqual([401, 'SIGNATURE_EXPIRED']);
    const expired = await signedCall(consumer, 'POST', '/v1/transactions', body, { expires: new Date(Date.now() - 1_000) });
    expect([expired.status, codeOf(expired)]).toEqual([401, 'SIGNATURE_EXPIRED']);
  });

  it('garbage in Signature-Input or Signature is a clear 401, and an unsigned create is still 401 SIGNATURE_REQUIRED (D3.3)', async () => {
    const consumer = await funded(ex, 5_000);
    const headers = { authorization: `Bearer ${consumer.apiKey}`, 'content-type': 'application/json' };
    const post = (extra: Record<string, string>) => fetch(`${ex.url}/v1/transactions`, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify({ serviceId, input: INPUT }) });
    const garbage = await post({ 'signature-input': 'sig1=((', signature: 'sig1=:AAAA:' });
    expect(garbage.status).toBe(401);
    expect(((await garbage.json()) as { errors: Array<{ code: string; message: string }> }).errors[0]).toMatchObject({ code: 'SIGNATURE_INVALID', message: expect.stringMatching(/Signature-Input/) });
    const noSignature = await post({ 'signature-input': 'sig1=("@method");created=1;keyid="x"' });
    expect(((await noSignature.json()) as { errors: Array<{ message: string }> }).errors[0]!.message).toMatch(/Signature header/);
    const unsigned = await post({});
    expect(((await unsigned.json()) as { errors: Array<{ code: string }> }).errors[0]!.code).toBe('SIGNATURE_REQUIRED');
  });
});

describe('the client signs with RFC 9421 when told to (D20.1)', () => {
  it('signatureScheme "rfc9421" with agentId: the client reads its key id from the DID document, buys and delivers; the receipt says rfc9421', async () => {
    const consumer = await funded(ex, 5_000);
    const buyer = ex.anon.as({ apiKey: consumer.apiKey, signingSecretKey: consumer.keys!.secretKey, signatureScheme: 'rfc9421', agentId: consumer.agentId });
    const seller = ex.anon.as({ apiKey: provider.apiKey, signingSecretKey: provider.keys!.secretKey, signatureScheme: 'rfc9421', signingKeyId: await keyIdOf(provider.agentId) });
    const created = unwrap(await buyer.createTransaction({ serviceId, input: INPUT }));
    await waitForStatus(consumer, created.id, 'funds_held');
    unwrap(await seller.deliver(created.id, { output: OUTPUT }));
    unwrap(await buyer.verify(created.id));
    await waitForStatus(consumer, created.id, 'settled');
    expect(unwrap(await buyer.receipt(created.id)).claims.delivery).toMatchObject({ scheme: 'rfc9421', signatureInput: expect.stringMatching(/^sig1=\("@method" "@target-uri" "content-digest"\);created=\d+;keyid="did:web:[^"]+#key-1";alg="ed25519";nonce="[A-Za-z0-9+/]{22}"$/) });
  });

  it('after the agent registers a new key through the client, the client signs with the new key id (D6.7)', async () => {
    const consumer = await funded(ex, 5_000);
    const next = generateSigningKey();
    const buyer = ex.anon.as({ apiKey: consumer.apiKey, signingSecretKey: next.secretKey, signatureScheme: 'rfc9421', agentId: consumer.agentId });
    unwrap(await buyer.registerSigningKey(consumer.agentId, { previousSecretKey: consumer.keys!.secretKey }));
    const created = unwrap(await buyer.createTransaction({ serviceId, input: INPUT }));
    expect(['funds_held', 'initiated']).toContain(created.status);
    expect(await keyIdOf(consumer.agentId)).toMatch(/#key-2$/);
  });

  it('signatureScheme "rfc9421" without agentId or signingKeyId says what it needs', async () => {
    const consumer = await funded(ex, 1_000);
    const buyer = ex.anon.as({ apiKey: consumer.apiKey, signingSecretKey: consumer.keys!.secretKey, signatureScheme: 'rfc9421' });
    await expect(buyer.createTransaction({ serviceId, input: INPUT })).rejects.toThrow(/needs signingKeyId, or agentId/);
  });
});
