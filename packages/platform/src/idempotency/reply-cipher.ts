import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';

/**
 * D5.5 records never hold an Idempotency-Key or a readable answer. The row is named by a hash of
 * (scope, key); the answer is sealed with AES-256-GCM under a key derived from the Idempotency-Key
 * (HKDF-SHA256, salted with the scope). Only a client presenting the key can have the answer again —
 * which matters because a sign-up answer carries the new agent's API key.
 */
export function idempotencyKeyHash(scope: string, key: string): string {
  return createHash('sha256').update(`aex-idempotency-name-v1\0${scope}\0${key}`).digest('hex');
}

/**
 * The name every retry of a keyed request shares, for another system's idempotency key (a payment
 * processor's): derived apart from the record's name, so neither tells the other.
 */
export function operationKeyOf(scope: string, key: string): string {
  return createHash('sha256').update(`aex-operation-v1\0${scope}\0${key}`).digest('hex');
}

/** The scopes of the keys the gateway makes (records.ts `operationScope`). */
export const OPERATION_SCOPE_PREFIX = 'operation:';

/**
 * HKDF-SHA256 for a client's key. A key the gateway made (the operation scope: a random UUID, on
 * every write sent without a key) takes one HMAC-SHA256 instead — as sound a derivation from a key of
 * that entropy (HKDF is two HMACs), at a tenth of `hkdfSync`'s cost, which was a twentieth of the
 * exchange's CPU once every write carried a key.
 */
function sealingKey(scope: string, key: string): Buffer {
  if (scope.startsWith(OPERATION_SCOPE_PREFIX)) return createHmac('sha256', key).update(`aex-operation-seal-v1\0${scope}`).digest();
  return Buffer.from(hkdfSync('sha256', key, `aex-idempotency-seal-v1\0${scope}`, 'stored reply', 32));
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** iv ‖ tag ‖ ciphertext of `plaintext`. */
export function sealReply(scope: string, key: string, plaintext: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(scope, key), iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** The plaintext, or null when `sealed` was not sealed under this scope and key. */
export function openReply(scope: string, key: string, sealed: Buffer): string | null {
  if (sealed.length < IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(scope, key), sealed.subarray(0, IV_BYTES));
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
