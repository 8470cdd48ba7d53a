import * as ed from '@noble/ed25519';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { signingKeyProofMessage } from '@aex/contracts/signing-key-proof';
import { nodeCrypto, pureSha256, pureSign } from './ed25519.js';

// The client runs wherever an agent runs (Node, Deno, browsers, workers): node:crypto where the
// runtime has it, the pure-JS implementation elsewhere (ed25519.ts).
const native = nodeCrypto();
const sign = native?.sign ?? pureSign;
const sha256 = native?.sha256 ?? pureSha256;

/** An Ed25519 key pair; `publicKey` is what an agent registers as `signingKeyPublic`. */
export interface SigningKeyPair {
  /** 32-byte secret key, base64. Keep it where the agent keeps secrets. */
  secretKey: string;
  /** 32-byte raw public key, base64 (the form D3.2 and `signingKeyPublic` use). */
  publicKey: string;
}

export function generateSigningKey(): SigningKeyPair {
  const secret = ed.utils.randomSecretKey();
  return { secretKey: toBase64(secret), publicKey: toBase64(ed.getPublicKey(secret)) };
}

export function publicKeyOf(secretKeyB64: string): string {
  return toBase64(ed.getPublicKey(fromBase64(secretKeyB64)));
}

/** D3.1: `{timestamp}:{METHOD}:{path}:{bodyHash}`, bodyHash the lowercase hex SHA-256 of the raw body. */
export function signingString(timestamp: string, method: string, target: string, body: string | Uint8Array = ''): string {
  const bytes = typeof body === 'string' ? utf8ToBytes(body) : body;
  return `${timestamp}:${method.toUpperCase()}:${target}:${bytesToHex(sha256(bytes))}`;
}

let lastTimestampMs = 0;

/**
 * Now, as a signature timestamp: a millisecond later than the last one this process made when the
 * clock has not moved on. An exchange accepts a signature once (D24.2), and two identical requests
 * signed in the same millisecond would otherwise carry the same one.
 */
function freshTimestamp(): string {
  lastTimestampMs = Math.max(Date.now(), lastTimestampMs + 1);
  return new Date(lastTimestampMs).toISOString();
}

/**
 * The two D3 headers for one request; `target` is the path plus `?query` exactly as sent. Each call
 * signs anew (the exchange accepts a signature once, D24.2): sign every attempt of a request.
 */
export function signRequest(
  secretKeyB64: string,
  req: { method: string; target: string; body?: string | Uint8Array; timestamp?: string },
): { 'x-ae-signature': string; 'x-ae-signature-timestamp': string } {
  const timestamp = req.timestamp ?? freshTimestamp();
  const message = utf8ToBytes(signingString(timestamp, req.method, req.target, req.body));
  const signature = sign(message, fromBase64(secretKeyB64));
  return { 'x-ae-signature': toBase64(signature), 'x-ae-signature-timestamp': timestamp };
}

/**
 * RFC 9421 HTTP Message Signature headers for one request (D20): `Signature-Input` and `Signature`
 * (label `sig1`) over `@method`, `@target-uri` and — with a body — `content-digest`, whose RFC 9530
 * `Content-Digest` header is added too; parameters `created`, `keyid`, `alg="ed25519"` and `nonce` —
 * random unless given: `created` counts seconds, and the exchange accepts a signature, and a nonce,
 * once (D24.2). `url` is the full URL as sent (scheme, host, path and query); `keyId` the key's id in
 * the agent's DID document (`did:web:…#key-N`, the document's `assertionMethod`).
 */
export function signHttpMessage(
  secretKeyB64: string,
  req: { method: string; url: string; body?: string | Uint8Array; keyId: string; created?: number; nonce?: string },
): Record<string, string> {
  const created = req.created ?? Math.floor(Date.now() / 1000);
  const nonce = req.nonce ?? toBase64(crypto.getRandomValues(new Uint8Array(16))).replace(/=+$/, '');
  const headers: Record<string, string> = {};
  const components = ['@method', '@target-uri'];
  const values = [req.method.toUpperCase(), req.url];
  if (req.body !== undefined && req.body.length > 0) {
    const bytes = typeof req.body === 'string' ? utf8ToBytes(req.body) : req.body;
    headers['content-digest'] = `sha-256=:${toBase64(sha256(bytes))}:`;
    components.push('content-digest');
    values.push(headers['content-digest']);
  }
  if (/["\\]/.test(req.keyId) || /[^\x20-\x7e]/.test(req.keyId)) throw new Error('a keyid is printable ASCII without quotes or backslashes');
  if (/["\\]/.test(nonce) || /[^\x20-\x7e]/.test(nonce)) throw new Error('a nonce is printable ASCII without quotes or backslashes');
  const params = `(${components.map((c) => `"${c}"`).join(' ')});created=${created};keyid="${req.keyId}";alg="ed25519";nonce="${nonce}"`;
  const base = [...components.map((c, i) => `"${c}": ${values[i]}`), `"@signature-params": ${params}`].join('\n');
  headers['signature-input'] = `sig1=${params}`;
  headers.signature = `sig1=:${toBase64(sign(utf8ToBytes(base), fromBase64(secretKeyB64)))}:`;
  return headers;
}

/**
 * Proof of possession of a signing key (EXT, D3.2): the key's signature of
 * `agent-exchange signing-key proof v1:{accountId}:{publicKey}`. Send it as `signingKeyProof` with
 * `signingKeyPublic` — required when replacing a key the agent already has.
 */
export function signingKeyProof(secretKeyB64: string, accountId: string): string {
  const publicKey = publicKeyOf(secretKeyB64);
  return toBase64(sign(utf8ToBytes(signingKeyProofMessage(accountId, publicKey)), fromBase64(secretKeyB64)));
}

/** Checks a D3 signature with the pure-JS verifier (for agents checking each other's messages). */
export function verifySignature(publicKeyB64: string, signatureB64: string, message: string): boolean {
  try {
    return ed.verify(fromBase64(signatureB64), utf8ToBytes(message), fromBase64(publicKeyB64));
  } catch {
    return false;
  }
}

function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function fromBase64(b64: string): Uint8Array {
  const s = atob(b64.replace(/-/g, '+').replace(/_/g, '/'));
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
