import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { signWebhook, verifyWebhook, WebhookVerificationError } from '@agent-exchange/client';
import { afterFailure, firstAttemptAt } from '../src/domain/schedule.js';
import { newSecret, sign, signatureHeader, webhookIdOf } from '../src/domain/signing.js';

// The reference vector of the Standard Webhooks libraries' own tests.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('Standard Webhooks signatures (D14.2, D14.3)', () => {
  it('signs the reference vector as the specification does, like the official library', () => {
    expect(sign(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
    expect(new Webhook(VECTOR.secret).sign(VECTOR.id, new Date(VECTOR.timestamp * 1000), VECTOR.body)).toBe(VECTOR.signature);
    expect(signWebhook(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
  });

  it('makes secrets of whsec_ and 24 random bytes that the official library accepts', () => {
    const secret = newSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(24);
    expect(newSecret()).not.toBe(secret);
    const now = Math.floor(Date.now() / 1000);
    const headers = { 'webhook-id': webhookIdOf('0f8fad5b-d9cb-469f-a165-70867728950e'), 'webhook-timestamp': String(now), 'webhook-signature': sign(secret, 'msg_0f8fad5bd9cb469fa16570867728950e', now, '{"a":1}') };
    expect(headers['webhook-id']).toBe('msg_0f8fad5bd9cb469fa16570867728950e');
    expect(new Webhook(secret).verify('{"a":1}', headers)).toEqual({ a: 1 });
  });

  it('carries one signature per secret in force, and either verifies (a rotation, D14.2)', () => {
    const [oldSecret, newer] = [newSecret(), newSecret()];
    const now = Math.floor(Date.now() / 1000);
    const header = signatureHeader([newer, oldSecret], 'msg_1', now, '{}');
    expect(header.split(' ')).toHaveLength(2);
    for (const s of [oldSecret, newer]) {
      expect(new Webhook(s).verify('{}', { 'webhook-id': 'msg_1', 'webhook-timestamp': String(now), 'webhook-signature': header })).toEqual({});
      expect(verifyWebhook({ 'webhook-id': 'msg_1', 'webhook-timestamp': String(now), 'webhook-signature': header }, '{}', s)).toEqual({});
    }
  });

  it('refuses in the client helper what the official library refuses: a changed body, another secret, an old timestamp, missing headers', () => {
    const secret = newSecret();
    const now = Math.floor(Date.now() / 1000);
    const good = { 'webhook-id': 'msg_2', 'webhook-timestamp': String(now), 'webhook-signature': sign(secret, 'msg_2', now, '{"x":1}') };
    const cases: [Record<string, string>, string, string][] = [
      [good, '{"x":2}', secret],
      [good, '{"x":1}', newSecret()],
      [{ ...good, 'webhook-timestamp': String(now - 3600), 'webhook-signature': sign(secret, 'msg_2', now - 3600, '{"x":1}') }, '{"x":1}', secret],
      [{ 'webhook-id': 'msg_2', 'webhook-timestamp': String(now) }, '{"x":1}', secret],
    ];
    for (const [headers, body, key] of cases) {
      expect(() => new Webhook(key).verify(body, headers)).toThrow();
      expect(() => verifyWebhook(headers, body, key)).toThrow(WebhookVerificationError);
    }
    expect(verifyWebhook(good, '{"x":1}', secret)).toEqual({ x: 1 });
  });
});

describe('the retry schedule (D14.4)', () => {
  const delays = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
  const now = new Date('2026-01-01T00:00:00Z');
  it('attempts at once, then waits each delay in turn, and dead-letters after the 8th failure', () => {
    expect(firstAttemptAt(delays, now)).toEqual(now);
    const waits: number[] = [];
    let left = delays.length;
    for (;;) {
      left -= 1;
      const next = afterFailure(delays, left, now);
      if (next.status === 'dead') break;
      waits.push(next.nextAttemptAt.getTime() - now.getTime());
    }
    expect(waits).toEqual(delays.slice(1));
    expect(delays.length - left).toBe(8);
  });
  it('gives a manual retry one attempt: a failure dead-letters it again', () => {
    expect(afterFailure(delays, 0, now)).toEqual({ status: 'dead' });
  });
});
