import { randomBytes } from 'node:crypto';
import { hashApiKey, keyPrefix } from '@aex/contracts';

export { API_KEY_PATTERN, hashApiKey, keyPrefix } from '@aex/contracts';

export interface IssuedKey {
  plaintext: string;
  hash: string;
  prefix: string;
}

/** A new API key (D2.1); only its hash is ever stored. `random` is injectable for tests. */
export function issueApiKey(random: (n: number) => Buffer = randomBytes): IssuedKey {
  const plaintext = `ae_live_${random(32).toString('base64url')}`;
  return { plaintext, hash: hashApiKey(plaintext), prefix: keyPrefix(plaintext) };
}
