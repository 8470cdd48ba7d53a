import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateSigningKey, signRequest } from '@agent-exchange/client';
import { takeToken } from '../src/domain/token-bucket.js';
import { checkSignature, signingString } from '../src/domain/signature.js';
import { errorResponse } from '../src/http/envelope.js';
import { knownPaths } from '../src/http/routes.js';

describe('D4.1 token bucket', () => {
  it('starts full and takes one token per request', () => {
    const r = takeToken(null, 10, 0);
    expect(r).toMatchObject({ allowed: true, limit: 10, remaining: 9 });
  });

  it('refuses once empty, with Retry-After of at least one second', () => {
    let state = null;
    for (let i = 0; i < 10; i++) state = takeToken(state, 10, 0).state;
    const r = takeToken(state, 10, 0);
    expect(r.allowed).toBe(false);
    expect(r.remaining).toBe(0);
    // limit/60 tokens per second: one token takes 6 s at 10/min.
    expect(r.retryAfterSeconds).toBe(6);
    expect(r.resetSeconds).toBe(60);
  });

  it('refills continuously at limit/60 per second and never above capacity', () => {
    let state = null;
    for (let i = 0; i < 60; i++) state = takeToken(state, 60, 0).state;
    expect(takeToken(state, 60, 500).allowed).toBe(false);
    expect(takeToken(state, 60, 1000).allowed).toBe(true);
    const later = takeToken(state, 60, 10 * 60_000);
    expect(later.remaining).toBe(59);
  });

  it('treats a clock going backwards as no time passed', () => {
    const s = takeToken(null, 2, 10_000).state;
    const r = takeToken(s, 2, 5_000);
    expect(r.allowed).toBe(true);
    expect(r.remaining).toBe(0);
  });

  it('keeps Retry-After at least 1 even when a token is almost there', () => {
    const r = takeToken({ tokens: 0.999, atMs: 0 }, 60, 0);
    expect(r.allowed).toBe(false);
    expect(r.retryAfterSeconds).toBe(1);
  });
});

describe('D3 signatures', () => {
  const keys = generateSigningKey();
  const now = Date.parse('2026-06-01T12:00:00.000Z');
  const signed = (over: Partial<Parameters<typeof checkSignature>[0]> = {}) => {
    const h = signRequest(keys.secretKey, { method: 'POST', target: '/v1/transactions?x=1', body: '{"a":1}', timestamp: '2026-06-01T12:00:00.000Z' });
    return checkSignature({ signature: h['x-ae-signature'], timestamp: h['x-ae-signature-timestamp'], method: 'POST', target: '/v1/transactions?x=1', rawBody: Buffer.from('{"a":1}'), publicKey: keys.publicKey, nowMs: now, ...over });
  };

  it('builds the D3.1 signed string with the lowercase hex SHA-256 of the body (of "" without one)', () => {
    expect(signingString('T', 'get', '/p', undefined)).toBe('T:GET:/p:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('verifies a signature made by the client package (noble) with node:crypto', () => {
    const h = signRequest(keys.secretKey, { method: 'POST', target: '/v1/transactions?x=1', body: '{"a":1}', timestamp: '2026-06-01T12:00:00.000Z' });
    expect(signed()).toEqual({ ok: true, signatureBytes: Buffer.from(h['x-ae-signature'], 'base64') });
  });

  it('verifies a signature made by node:crypto itself', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'jwk' }).x!;
    const ts = new Date(now).toISOString();
    const sig = sign(null, Buffer.from(signingString(ts, 'GET', '/v1/x', undefined)), privateKey).toString('base64');
    expect(checkSignature({ signature: sig, timestamp: ts, method: 'GET', target: '/v1/x', rawBody: undefined, publicKey: Buffer.from(raw, 'base64url').toString('base64'), nowMs: now })).toEqual({ ok: true, signatureBytes: Buffer.from(sig, 'base64') });
  });

  it.each([
    ['another path', { target: '/v1/transactions?x=2' }],
    ['another method', { method: 'PUT' }],
    ['another body', { rawBody: Buffer.from('{"a":2}') }],
    ['another key', { publicKey: generateSigningKey().publicKey }],
    ['a truncated signature', { signature: 'AAAA' }],
    ['non-base64 garbage', { signature: '!!!not base64!!!' }],
    ['no registered key', { publicKey: null }],
    ['a timestamp without a zone', { timestamp: '2026-06-01T12:00:00' }],
  ])('rejects %s as SIGNATURE_INVALID', (_label, over) => {
    expect(signed(over as never)).toMatchObject({ ok: false, code: 'SIGNATURE_INVALID' });
  });

  it('requires both headers', () => {
    expect(signed({ signature: undefined })).toMatchObject({ ok: false, code: 'SIGNATURE_REQUIRED' });
    expect(signed({ timestamp: undefined })).toMatchObject({ ok: false, code: 'SIGNATURE_REQUIRED' });
  });

  it('tells a refused caller the signed-string format and its reading of the request, nothing secret', () => {
    const refused = signed({ rawBody: Buffer.from('{"a":2}') });
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.help).toEqual({
      format: '{timestamp}:{METHOD}:{path}:{bodyHash}',
      headers: { signature: 'X-AE-Signature', timestamp: 'X-AE-Signature-Timestamp' },
      algorithm: expect.stringContaining('Ed25519'),
      method: 'POST',
      target: '/v1/transactions?x=1',
      bodyHash: createHash('sha256').update('{"a":2}').digest('hex'),
      timestamp: '2026-06-01T12:00:00.000Z',
      signedString: signingString('2026-06-01T12:00:00.000Z', 'POST', '/v1/transactions?x=1', '{"a":2}'),
    });
    expect(JSON.stringify(refused.help)).not.toContain(keys.publicKey);
  });

  it('names no signed string when the timestamp is missing or unreadable', () => {
    const missing = signed({ timestamp: undefined });
    expect(!missing.ok && missing.help).toMatchObject({ timestamp: null, signedString: null, method: 'POST', target: '/v1/transactions?x=1' });
    const unreadable = signed({ timestamp: 'yesterday' });
    expect(!unreadable.ok && unreadable.help).toMatchObject({ timestamp: 'yesterday', signedString: null });
  });

  it('accepts 300 s of skew either way and no more (D3.4)', () => {
    expect(signed({ nowMs: now + 300_000 }).ok).toBe(true);
    expect(signed({ nowMs: now - 300_000 }).ok).toBe(true);
    expect(signed({ nowMs: now + 300_001 })).toMatchObject({ ok: false, code: 'SIGNATURE_EXPIRED' });
    expect(signed({ nowMs: now - 300_001 })).toMatchObject({ ok: false, code: 'SIGNATURE_EXPIRED' });
  });
});

describe('error envelope', () => {
  it('adds Retry-After from details, and 1 s for the limiter and in-flight idempotency keys', () => {
    expect(errorResponse(429, [{ code: 'RATE_LIMITED', message: 'm', details: { retryAfterSeconds: 7 } }], 'r').headers).toEqual({ 'retry-after': '7' });
    expect(errorResponse(503, [{ code: 'RATE_LIMITER_UNAVAILABLE', message: 'm' }], 'r').headers).toEqual({ 'retry-after': '1' });
    expect(errorResponse(400, [{ code: 'VALIDATION_ERROR', message: 'm' }], 'r').headers).toEqual({});
    const body = JSON.parse(errorResponse(400, [{ code: 'VALIDATION_ERROR', message: 'm' }], 'r').body);
    expect(body).toMatchObject({ data: null, meta: { requestId: 'r' }, errors: [{ code: 'VALIDATION_ERROR', message: 'm' }] });
  });
});

describe('route table', () => {
  it('recognises known paths for 405 and nothing else', () => {
    const known = (p: string) => knownPaths.some((k) => k.re.test(p));
    expect(known('/v1/agents/abc')).toBe(true);
    expect(known('/v1/agents/abc/keys/rotate')).toBe(true);
    expect(known('/v1/agents/abc/def')).toBe(false);
    expect(known('/v1/agentsX')).toBe(false);
  });
});
