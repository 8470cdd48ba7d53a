import { createHash } from 'node:crypto';
import { canonicalJson } from '@aex/contracts';

/** D18.2: `sha-256=:<base64>:` of the canonical JSON of `value` (the form of RFC 9530's digests). */
export const jsonDigest = (value: unknown): string => `sha-256=:${createHash('sha256').update(canonicalJson(value)).digest('base64')}:`;
