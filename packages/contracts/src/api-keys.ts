import { hash } from 'node:crypto';

/**
 * D2.1 API keys, shared by identity (which issues them) and the gateway (which looks them up):
 * `ae_live_` + 43 base64url characters (32 random bytes).
 */
export const API_KEY_PATTERN = /^ae_live_[A-Za-z0-9_-]{43}$/;

/**
 * SHA-256 hex of the key: the only form stored, the lookup value of `identity.authenticate` and the
 * key of the gateway's cache (an unguessable 256-bit key needs no slow hash).
 */
export function hashApiKey(plaintext: string): string {
  // One-shot: no Hash object per call (the gateway hashes the key of every request).
  return hash('sha256', plaintext, 'hex');
}

/** D2.1: the first 12 characters. */
export const keyPrefix = (plaintext: string) => plaintext.slice(0, 12);
