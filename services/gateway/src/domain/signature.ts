import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';

/** D3.1: `{timestamp}:{METHOD}:{path}:{bodyHash}` with the lowercase hex SHA-256 of the raw body. */
export function signingString(timestamp: string, method: string, target: string, rawBody: Uint8Array | string | undefined): string {
  return `${timestamp}:${method.toUpperCase()}:${target}:${bodyHashOf(rawBody)}`;
}

const bodyHashOf = (rawBody: Uint8Array | string | undefined) => createHash('sha256').update(rawBody ?? '').digest('hex');

function helpFor(input: { timestamp: string | undefined; method: string; target: string; rawBody: Uint8Array | undefined }, timestampUsable: boolean): SignatureHelp {
  const timestamp = input.timestamp ?? null;
  return {
    format: '{timestamp}:{METHOD}:{path}:{bodyHash}',
    headers: { signature: 'X-AE-Signature', timestamp: 'X-AE-Signature-Timestamp' },
    algorithm: 'Ed25519 over the UTF-8 signed string; the signature in standard base64; bodyHash the lowercase hex SHA-256 of the body bytes as sent (of the empty string without a body)',
    method: input.method.toUpperCase(),
    target: input.target,
    bodyHash: bodyHashOf(input.rawBody),
    timestamp,
    signedString: timestamp !== null && timestampUsable ? signingString(timestamp, input.method, input.target, input.rawBody) : null,
  };
}

const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})$/;
export const MAX_SKEW_MS = 300_000;

/**
 * What a refused signature's 401 tells the caller (docs/signing.md): the format of the signed
 * string and the server's reading of this request — method, target and body hash, and the string it
 * verified when the timestamp was usable. Nothing in it is secret: it is all derived from the request.
 */
export interface SignatureHelp {
  format: '{timestamp}:{METHOD}:{path}:{bodyHash}';
  headers: { signature: 'X-AE-Signature'; timestamp: 'X-AE-Signature-Timestamp' };
  algorithm: string;
  method: string;
  target: string;
  bodyHash: string;
  timestamp: string | null;
  signedString: string | null;
}

export type SignatureCheck =
  /** `signatureBytes`: the verified signature, decoded (what names its one use, D24.2). */
  | { ok: true; signatureBytes: Buffer }
  | { ok: false; code: 'SIGNATURE_REQUIRED' | 'SIGNATURE_INVALID' | 'SIGNATURE_EXPIRED'; message: string; help: SignatureHelp };

const keyCache = new Map<string, KeyObject>();

/** The registered key (base64 of the raw 32 bytes) as a node:crypto key, remembered; null when it is not 32 bytes. */
export function publicKeyObject(b64: string): KeyObject | null {
  let key = keyCache.get(b64);
  if (key) return key;
  const raw = Buffer.from(b64, 'base64');
  if (raw.length !== 32) return null;
  key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  if (keyCache.size > 10_000) keyCache.clear();
  keyCache.set(b64, key);
  return key;
}

/**
 * D3: verifies `X-AE-Signature` over the signed string with the agent's registered key. node:crypto
 * is used here because it verifies about 11× faster than @noble/ed25519 on these machines.
 */
export function checkSignature(input: {
  signature: string | undefined;
  timestamp: string | undefined;
  method: string;
  target: string;
  rawBody: Uint8Array | undefined;
  publicKey: string | null;
  nowMs: number;
}): SignatureCheck {
  const refuse = (code: 'SIGNATURE_REQUIRED' | 'SIGNATURE_INVALID' | 'SIGNATURE_EXPIRED', message: string, timestampUsable = true): SignatureCheck => ({ ok: false, code, message, help: helpFor(input, timestampUsable) });
  if (!input.signature || !input.timestamp) {
    return refuse('SIGNATURE_REQUIRED', 'This request must be signed by the agent\'s registered Ed25519 key: X-AE-Signature and X-AE-Signature-Timestamp headers over "{timestamp}:{METHOD}:{path}:{bodyHash}", or an RFC 9421 Signature-Input and Signature with Content-Digest (details.docs).');
  }
  if (!ISO_WITH_ZONE.test(input.timestamp) || Number.isNaN(Date.parse(input.timestamp))) {
    return refuse('SIGNATURE_INVALID', 'X-AE-Signature-Timestamp must be an ISO 8601 timestamp with a zone, such as 2026-01-31T12:00:00Z.', false);
  }
  if (Math.abs(input.nowMs - Date.parse(input.timestamp)) > MAX_SKEW_MS) {
    return refuse('SIGNATURE_EXPIRED', 'The signature timestamp is more than 5 minutes away from the server clock; sign with the current time.');
  }
  if (!input.publicKey) return refuse('SIGNATURE_INVALID', 'The agent has no registered signingKeyPublic: register one with PATCH /v1/agents/{id} first.');
  const key = publicKeyObject(input.publicKey);
  // D3.2: standard base64, base64url accepted too.
  const sig = /^[A-Za-z0-9+/_-]+={0,2}$/.test(input.signature) ? Buffer.from(input.signature.replace(/-/g, '+').replace(/_/g, '/'), 'base64') : null;
  if (!key || !sig || sig.length !== 64) return refuse('SIGNATURE_INVALID', 'X-AE-Signature is not the base64 of a 64-byte Ed25519 signature.');
  const message = Buffer.from(signingString(input.timestamp, input.method, input.target, input.rawBody), 'utf8');
  if (!verify(null, message, key, sig)) {
    return refuse('SIGNATURE_INVALID', 'The signature does not verify against the registered key: compare your signed string with details.signedString.');
  }
  return { ok: true, signatureBytes: sig };
}
