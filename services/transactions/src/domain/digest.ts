import { createHash } from 'node:crypto';

/**
 * RFC 8785 (JCS) for JSON values as parsed: object keys sorted by their UTF-16 code units, no
 * whitespace, strings and numbers as ECMAScript serializes them (which is what JCS specifies).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new Error('JSON has no infinite or NaN numbers');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** D18.2: `sha-256=:<base64>:` of the canonical JSON of `value` (the form of RFC 9530's digests). */
export const jsonDigest = (value: unknown): string => `sha-256=:${createHash('sha256').update(canonicalJson(value)).digest('base64')}:`;
