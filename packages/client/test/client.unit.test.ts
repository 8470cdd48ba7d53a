import { createPublicKey, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ExchangeClient, generateSigningKey, publicKeyOf, signRequest, signingString, unwrap, verifySignature } from '../src/index.js';
import { nodeCrypto, pureSha256, pureSign } from '../src/ed25519.js';

describe('D3 signing', () => {
  const keys = generateSigningKey();

  it('produces raw 32-byte base64 keys', () => {
    expect(Buffer.from(keys.publicKey, 'base64')).toHaveLength(32);
    expect(publicKeyOf(keys.secretKey)).toBe(keys.publicKey);
  });

  it('signs the D3.1 string so that node:crypto verifies it', () => {
    const h = signRequest(keys.secretKey, { method: 'post', target: '/v1/x?y=1', body: '{"z":1}', timestamp: '2026-01-01T00:00:00.000Z' });
    const message = signingString('2026-01-01T00:00:00.000Z', 'POST', '/v1/x?y=1', '{"z":1}');
    expect(message).toMatch(/^2026-01-01T00:00:00.000Z:POST:\/v1\/x\?y=1:[0-9a-f]{64}$/);
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(keys.publicKey, 'base64').toString('base64url') }, format: 'jwk' });
    expect(verify(null, Buffer.from(message), key, Buffer.from(h['x-ae-signature'], 'base64'))).toBe(true);
    expect(verifySignature(keys.publicKey, h['x-ae-signature'], message)).toBe(true);
    expect(verifySignature(keys.publicKey, h['x-ae-signature'], `${message}x`)).toBe(false);
    expect(verifySignature(keys.publicKey, 'garbage', message)).toBe(false);
  });
});

describe('D3 signing: node:crypto where the runtime has it, pure JavaScript elsewhere', () => {
  const native = nodeCrypto()!;

  it('finds node:crypto on this Node', () => {
    expect(native).toBeDefined();
  });

  it('makes the same signatures and digests with either implementation (Ed25519 is deterministic)', () => {
    for (let i = 0; i < 20; i++) {
      const secret = Buffer.from(generateSigningKey().secretKey, 'base64');
      const message = Buffer.from(`2026-01-01T00:00:00.000Z:POST:/v1/transactions:${'ab'.repeat(32)}:${i}`);
      expect(Buffer.from(native.sign(message, secret)).toString('hex')).toBe(Buffer.from(pureSign(message, secret)).toString('hex'));
      expect(Buffer.from(native.sha256(message)).toString('hex')).toBe(Buffer.from(pureSha256(message)).toString('hex'));
    }
  });

  it('refuses a secret key that is not 32 bytes', () => {
    expect(() => native.sign(Buffer.from('x'), new Uint8Array(31))).toThrow(/32 bytes/);
  });

  it('falls back to pure JavaScript where there is no process.getBuiltinModule (browsers, workers)', () => {
    const saved = Object.getOwnPropertyDescriptor(globalThis, 'process')!;
    Object.defineProperty(globalThis, 'process', { value: undefined, configurable: true });
    try {
      expect(nodeCrypto()).toBeUndefined();
    } finally {
      Object.defineProperty(globalThis, 'process', saved);
    }
  });
});

describe('ExchangeClient', () => {
  const respond = (status: number, body: unknown, headers: Record<string, string> = {}) => async () => new Response(typeof body === 'string' ? body : JSON.stringify(body), { status, headers });

  it('unwraps the envelope on success', async () => {
    const c = new ExchangeClient({ baseUrl: 'http://x/', fetch: respond(200, { data: { a: 1 }, meta: { requestId: 'r1', timestamp: 't' }, errors: null }) });
    const r = await c.request<{ a: number }>('GET', '/v1/thing');
    expect(r).toMatchObject({ ok: true, status: 200, data: { a: 1 }, requestId: 'r1' });
    expect(unwrap(r)).toEqual({ a: 1 });
  });

  it('returns errors as values with every entry', async () => {
    const errors = [{ code: 'VALIDATION_ERROR', message: 'm1', field: '/body/a' }, { code: 'VALIDATION_ERROR', message: 'm2', field: '/body/b' }];
    const c = new ExchangeClient({ baseUrl: 'http://x', fetch: respond(400, { data: null, meta: { requestId: 'r2', timestamp: 't' }, errors }) });
    const r = await c.request('POST', '/v1/thing', { body: {} });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ status: 400, code: 'VALIDATION_ERROR', requestId: 'r2' });
    expect(r.error.errors).toHaveLength(2);
    expect(() => unwrap(r)).toThrow('m1');
  });

  it('reports a network failure and a body that is not the envelope as typed errors', async () => {
    const down = new ExchangeClient({ baseUrl: 'http://x', fetch: async () => Promise.reject(new Error('ECONNREFUSED')) });
    const a = await down.protocol();
    expect(!a.ok && [a.status, a.error.code]).toEqual([0, 'NETWORK_ERROR']);
    const html = new ExchangeClient({ baseUrl: 'http://x', fetch: respond(502, '<html>bad gateway</html>') });
    const b = await html.protocol();
    expect(!b.ok && [b.status, b.error.code]).toEqual([502, 'INVALID_RESPONSE']);
  });

  it('sends the key, signs authenticated requests and never signs or sends the key to operator routes', async () => {
    const keys = generateSigningKey();
    const seen: { url: string; headers: Record<string, string> }[] = [];
    const c = new ExchangeClient({
      baseUrl: 'http://x',
      apiKey: 'ae_live_k',
      signingSecretKey: keys.secretKey,
      adminToken: 'op-token',
      fetch: async (url, init) => {
        seen.push({ url: String(url), headers: init?.headers as Record<string, string> });
        return new Response(JSON.stringify({ data: [], meta: { requestId: 'r', timestamp: 't' }, errors: null }));
      },
    });
    await c.ledger('a b', { limit: 5 });
    await c.checkLedger();
    expect(seen[0]!.url).toBe('http://x/v1/wallets/a%20b/transactions?limit=5');
    expect(seen[0]!.headers.authorization).toBe('Bearer ae_live_k');
    const message = signingString(seen[0]!.headers['x-ae-signature-timestamp']!, 'GET', '/v1/wallets/a%20b/transactions?limit=5');
    expect(verifySignature(keys.publicKey, seen[0]!.headers['x-ae-signature']!, message)).toBe(true);
    expect(seen[1]!.headers.authorization).toBe('Bearer op-token');
    expect(seen[1]!.headers['x-ae-signature']).toBeUndefined();
  });
});

describe('D5.4: a write whose outcome is unknown', () => {
  const envelope = (data: unknown, errors: unknown[] | null) => JSON.stringify({ data, meta: { requestId: 'r', timestamp: '2026-01-01T00:00:00.000Z' }, errors });
  const unknownOutcome = [{ code: 'IDEMPOTENCY_KEY_IN_USE', message: 'The outcome is not known yet.', details: { outcome: 'unknown', retryAfterSeconds: 1 } }];

  it('is repeated with the key the 202 gives, past a 409 in flight, until its outcome comes', async () => {
    const sent: Array<string | null> = [];
    const answers = [
      new Response(envelope(null, unknownOutcome), { status: 202, headers: { 'idempotency-key': 'aex-op-made', 'retry-after': '1' } }),
      new Response(envelope(null, [{ code: 'IDEMPOTENCY_KEY_IN_USE', message: 'In flight.' }]), { status: 409, headers: { 'retry-after': '1' } }),
      new Response(envelope({ id: 't1' }, null), { status: 201 }),
    ];
    const fetch = (async (_url: string, init: RequestInit) => {
      sent.push(new Headers(init.headers).get('idempotency-key'));
      return answers.shift()!;
    }) as unknown as typeof globalThis.fetch;
    const client = new ExchangeClient({ baseUrl: 'http://exchange', apiKey: 'ae_live_x', fetch });
    const outcome = await client.request<{ id: string }>('POST', '/v1/transactions', { body: { serviceId: 's' } });
    expect(outcome).toMatchObject({ ok: true, status: 201, data: { id: 't1' } });
    expect(sent).toEqual([null, 'aex-op-made', 'aex-op-made']);
  });

  it('D24.2: is signed anew on every repeat, in either scheme, and identical calls at once carry different signatures', async () => {
    const keys = generateSigningKey();
    for (const scheme of ['x-ae', 'rfc9421'] as const) {
      const signatures: string[] = [];
      const answers = [
        new Response(envelope(null, unknownOutcome), { status: 202, headers: { 'idempotency-key': 'aex-op-made', 'retry-after': '1' } }),
        new Response(envelope({ id: 't1' }, null), { status: 201 }),
      ];
      const fetch = (async (_url: string, init: RequestInit) => {
        const h = new Headers(init.headers);
        signatures.push(`${h.get('x-ae-signature') ?? h.get('signature')} ${h.get('x-ae-signature-timestamp') ?? h.get('signature-input')}`);
        return answers.shift() ?? new Response(envelope({ id: 'a' }, null), { status: 200 });
      }) as unknown as typeof globalThis.fetch;
      const client = new ExchangeClient({ baseUrl: 'http://exchange', apiKey: 'ae_live_x', signingSecretKey: keys.secretKey, signatureScheme: scheme, signingKeyId: 'did:web:exchange:agents:a#key-1', fetch });
      expect(await client.request('POST', '/v1/transactions', { body: { serviceId: 's' } })).toMatchObject({ ok: true, status: 201 });
      await Promise.all([1, 2, 3].map(() => client.request('GET', '/v1/agents/a')));
      expect(signatures).toHaveLength(5);
      expect(new Set(signatures).size).toBe(5);
    }
  });

  it('is given as it is when repeats are turned off', async () => {
    const fetch = (async () => new Response(envelope(null, unknownOutcome), { status: 202, headers: { 'idempotency-key': 'k' } })) as unknown as typeof globalThis.fetch;
    const client = new ExchangeClient({ baseUrl: 'http://exchange', fetch, outcomeRepeats: 0 });
    const outcome = await client.request('POST', '/v1/accounts', { body: {} });
    expect(outcome).toMatchObject({ ok: false, status: 202 });
    expect(!outcome.ok && outcome.error.code).toBe('IDEMPOTENCY_KEY_IN_USE');
  });
});
