import { createCipheriv, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { operationScope } from '../src/idempotency/records.js';
import { openReply, sealReply } from '../src/idempotency/reply-cipher.js';

// D5.5: a stored answer is readable only with its key and in its scope — for a client's key (HKDF)
// and for a key the gateway made (one HMAC, docs/idempotency.md "Operation keys") alike.

describe('sealed answers', () => {
  for (const [kind, scope] of [['a client\'s key', 'agent:a1'], ['a key the gateway made', operationScope('agent:a1')]] as const) {
    it(`under ${kind}: opened with the key in its scope, never with another key or scope`, () => {
      const key = kind === 'a key the gateway made' ? `aex-op-${randomUUID()}` : 'order-42';
      const sealed = sealReply(scope, key, '{"apiKey":"ae_live_secret"}');
      expect(sealed.toString('utf8')).not.toContain('ae_live_secret');
      expect(openReply(scope, key, sealed)).toBe('{"apiKey":"ae_live_secret"}');
      expect(openReply(scope, `${key}x`, sealed)).toBeNull();
      expect(openReply(scope === 'agent:a1' ? operationScope('agent:a1') : 'agent:a1', key, sealed)).toBeNull();
      expect(openReply(`${scope}2`, key, sealed)).toBeNull();
    });
  }

  it('opens an answer sealed under a client\'s key as stored before (HKDF-SHA256, kept across an upgrade)', () => {
    const key = Buffer.from(hkdfSync('sha256', 'order-42', 'aex-idempotency-seal-v1\0agent:a1', 'stored reply', 32));
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const body = Buffer.concat([cipher.update('kept', 'utf8'), cipher.final()]);
    expect(openReply('agent:a1', 'order-42', Buffer.concat([iv, cipher.getAuthTag(), body]))).toBe('kept');
  });
});
