import { createHash, timingSafeEqual } from 'node:crypto';

/** Constant-time equality of two secrets, compared by their SHA-256 (the same length whatever was given). */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(expected).digest());
}

/** The token of an `Authorization: Bearer <token>` header; undefined without one. */
export const bearerToken = (authorization: string | undefined): string | undefined => /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
