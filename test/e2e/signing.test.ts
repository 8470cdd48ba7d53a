import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKey, signRequest, signingString, unwrap } from '@agent-exchange/client';
import { expectError, startTestExchange, type Member, type TestExchange } from './harness.js';

// What a caller learns from a refused signature (D3, docs/signing.md), and D3.5 signing-key
// replacement in both modes: `plain` (the spec's PATCH) and `signed` (SIGNING_KEY_REPLACEMENT).

describe('a refused signature explains itself (D3)', () => {
  let ex: TestExchange;
  let owner: Member;
  let worker: Member;

  beforeAll(async () => {
    ex = await startTestExchange();
    owner = await ex.signUp();
    worker = await ex.addAgent(owner);
  });
  afterAll(() => ex.stop());

  it('answers a missing signature with the format, the server\'s reading of the request and a link to the docs', async () => {
    const body = JSON.stringify({ serviceId: randomUUID(), input: {} });
    const res = await fetch(`${ex.url}/v1/transactions`, { method: 'POST', headers: { authorization: `Bearer ${worker.apiKey}`, 'content-type': 'application/json' }, body });
    expect(res.status).toBe(401);
    const entry = ((await res.json()) as { errors: { code: string; message: string; details: Record<string, unknown> }[] }).errors[0]!;
    expect(entry.code).toBe('SIGNATURE_REQUIRED');
    expect(entry.message).toContain('{timestamp}:{METHOD}:{path}:{bodyHash}');
    expect(entry.details).toMatchObject({
      format: '{timestamp}:{METHOD}:{path}:{bodyHash}',
      method: 'POST',
      target: '/v1/transactions',
      bodyHash: signingString('t', 'POST', '/', body).split(':').pop(),
      timestamp: null,
      signedString: null,
      docs: `${ex.config.PUBLIC_BASE_URL}/docs/signing.md`,
    });
    const docs = await fetch(`${ex.url}/docs/signing.md`);
    expect([docs.status, docs.headers.get('content-type')]).toEqual([200, 'text/markdown; charset=utf-8']);
    expect(await docs.text()).toContain('{timestamp}:{METHOD}:{path}:{bodyHash}');
  });

  it('answers a wrong signature with the exact string the server verified, so the caller can compare', async () => {
    const target = `/v1/agents/${worker.agentId}?view=full`;
    const timestamp = new Date().toISOString();
    // Signed over another path than the one sent: the most common mistake (the query left out).
    const headers = signRequest(worker.keys!.secretKey, { method: 'GET', target: `/v1/agents/${worker.agentId}`, timestamp });
    const res = await fetch(`${ex.url}${target}`, { headers: { authorization: `Bearer ${worker.apiKey}`, ...headers } });
    const entry = ((await res.json()) as { errors: { code: string; details: Record<string, unknown> }[] }).errors[0]!;
    expect([res.status, entry.code]).toEqual([401, 'SIGNATURE_INVALID']);
    expect(entry.details).toMatchObject({ target, timestamp, signedString: signingString(timestamp, 'GET', target, '') });
  });

  it('serves the docs index and refuses names outside it', async () => {
    expect(await (await fetch(`${ex.url}/docs/`)).text()).toContain('[signing.md](/docs/signing.md)');
    for (const path of ['/docs/../package.json', '/docs/%2e%2e%2fpackage.json', '/docs/nothing.md']) {
      const r = await fetch(`${ex.url}${path}`);
      expect(r.status, path).toBe(404);
    }
  });
});

describe("the client's registerSigningKey (no chicken-and-egg)", () => {
  let ex: TestExchange;
  beforeAll(async () => {
    ex = await startTestExchange();
  });
  afterAll(() => ex.stop());

  it('registers the key a client was made with, with a proof, so its signed calls verify at once', async () => {
    const owner = await ex.signUp();
    const keys = generateSigningKey();
    const me = ex.anon.as({ apiKey: owner.apiKey, signingSecretKey: keys.secretKey });
    expectError(await me.getAgent(owner.agentId), 401, 'SIGNATURE_INVALID');
    expect(unwrap(await me.registerSigningKey(owner.agentId)).signingKeyPublic).toBe(keys.publicKey);
    expect(unwrap(await me.getAgent(owner.agentId)).id).toBe(owner.agentId);
  });

  it("refuses another account's agent without sending its key", async () => {
    const [a, b] = await Promise.all([ex.signUp(), ex.signUp()]);
    const me = ex.anon.as({ apiKey: a.apiKey, signingSecretKey: generateSigningKey().secretKey });
    expectError(await me.registerSigningKey(b.agentId), 403, 'FORBIDDEN');
  });

  it('throws at once when the client has no signing key to register', async () => {
    const owner = await ex.signUp();
    await expect(owner.client.registerSigningKey(owner.agentId)).rejects.toThrow(/signingSecretKey/);
  });
});

describe('D3.5 plain: an authenticated PATCH replaces the signing key (the default)', () => {
  let ex: TestExchange;
  let owner: Member;

  beforeAll(async () => {
    ex = await startTestExchange();
    owner = await ex.signUp();
  });
  afterAll(() => ex.stop());

  it('replaces the key without a proof or signature, and the old key stops verifying at once', async () => {
    const m = await ex.addAgent(owner);
    const next = generateSigningKey();
    const unsigned = ex.anon.as({ apiKey: m.apiKey });
    expect(unwrap(await unsigned.updateAgent(m.agentId, { signingKeyPublic: next.publicKey })).signingKeyPublic).toBe(next.publicKey);
    expectError(await m.client.getAgent(m.agentId), 401, 'SIGNATURE_INVALID');
    expect(unwrap(await ex.anon.as({ apiKey: m.apiKey, signingSecretKey: next.secretKey }).getAgent(m.agentId)).id).toBe(m.agentId);
  });
});

describe('D3.5 signed: replacing a registered key needs the current key or the owner agent (SIGNING_KEY_REPLACEMENT=signed)', () => {
  let ex: TestExchange;
  let owner: Member;

  beforeAll(async () => {
    ex = await startTestExchange({ SIGNING_KEY_REPLACEMENT: 'signed' });
    owner = await ex.signUp();
  });
  afterAll(() => ex.stop());

  it('refuses an API key alone with 401 SIGNATURE_REQUIRED and keeps the key', async () => {
    const m = await ex.addAgent(owner);
    const stolen = ex.anon.as({ apiKey: m.apiKey });
    const r = await stolen.updateAgent(m.agentId, { signingKeyPublic: generateSigningKey().publicKey });
    expectError(r, 401, 'SIGNATURE_REQUIRED');
    expect(unwrap(await m.client.getAgent(m.agentId))).toMatchObject({ signingKeyPublic: m.keys!.publicKey });
  });

  it('replaces it on a request signed by the current key', async () => {
    const m = await ex.addAgent(owner);
    const next = generateSigningKey();
    expect(unwrap(await m.client.updateAgent(m.agentId, { signingKeyPublic: next.publicKey })).signingKeyPublic).toBe(next.publicKey);
  });

  it("lets the account's owner agent replace a lost key without a signature", async () => {
    const m = await ex.addAgent(owner);
    const next = generateSigningKey();
    expect(unwrap(await owner.client.updateAgent(m.agentId, { signingKeyPublic: next.publicKey })).signingKeyPublic).toBe(next.publicKey);
  });

  it("the client's registerSigningKey replaces its own key when given the one it replaces, and is refused without it", async () => {
    const m = await ex.addAgent(owner);
    const next = generateSigningKey();
    const withNext = ex.anon.as({ apiKey: m.apiKey, signingSecretKey: next.secretKey });
    expectError(await withNext.registerSigningKey(m.agentId), 401, 'SIGNATURE_REQUIRED');
    expect(unwrap(await withNext.registerSigningKey(m.agentId, { previousSecretKey: m.keys!.secretKey })).signingKeyPublic).toBe(next.publicKey);
    // Every later call of that client is signed with the new key, and verifies.
    expect(unwrap(await withNext.getAgent(m.agentId)).id).toBe(m.agentId);
  });

  it('takes a first key unsigned: there is nothing to sign with yet', async () => {
    const m = await ex.signUp();
    const other = await ex.addAgent(m, { signingKeyPublic: undefined });
    const first = generateSigningKey();
    expect(unwrap(await other.client.as({ apiKey: other.apiKey }).updateAgent(other.agentId, { signingKeyPublic: first.publicKey })).signingKeyPublic).toBe(first.publicKey);
  });
});
