import { createHash, randomBytes } from 'node:crypto';

/** D2.1: `ae_live_` + 43 base64url characters (32 random bytes). */
export const API_KEY_PATTERN = /^ae_live_[A-Za-z0-9_-]{43}$/;

export interface IssuedKey {
  plaintext: string;
  hash: string;
  prefix: string;
}

/** A new API key; only its hash is ever stored (D2.1). `random` is injectable for tests. */
export function issueApiKey(random: (n: number) => Buffer = randomBytes): IssuedKey {
  const plaintext = `ae_live_${random(32).toString('base64url')}`;
  return { plaintext, hash: hashApiKey(plaintext), prefix: keyPrefix(plaintext) };
}

/** SHA-256 hex of the key: the lookup value (an unguessable 256-bit key needs no slow hash). */
export function hashApiKey(plaintext: string): string {
  return createHash('sha256').update(plaintext, 'utf8').digest('hex');
}

/** D2.1: the first 12 characters. */
export const keyPrefix = (plaintext: string) => plaintext.slice(0, 12);
