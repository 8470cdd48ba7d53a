import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';

/** Why a webhook was refused: the receiver answers 400 and the exchange tries again later. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyOptions {
  /** How far `webhook-timestamp` may be from now (default 5 minutes, as Standard Webhooks advises). */
  toleranceSeconds?: number;
  now?: () => Date;
}

const fromBase64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const toBase64 = (b: Uint8Array) => btoa(String.fromCharCode(...b));

/** HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed with the base64 part of a `whsec_` secret. */
const mac = (secret: string, id: string, timestamp: string | number, body: string) =>
  hmac(sha256, fromBase64(secret.startsWith('whsec_') ? secret.slice(6) : secret), new TextEncoder().encode(`${id}.${timestamp}.${body}`));

/** Equal in time that does not depend on where they differ. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/**
 * Verifies a webhook the exchange sent (Standard Webhooks, D14.2–D14.3) and returns its parsed
 * payload: `webhook-signature` must hold a `v1,` signature by `secret` (`whsec_…`) of
 * `{webhook-id}.{webhook-timestamp}.{body}` — the raw body, as received — and the timestamp must be
 * recent. During a secret rotation the header carries two signatures; either verifies. Deduplicate
 * on `webhook-id`: a delivery may arrive more than once.
 */
export function verifyWebhook(headers: Record<string, string | string[] | undefined> | Headers, body: string, secret: string, opts: VerifyOptions = {}): { type: string; timestamp: string; data: Record<string, unknown> } {
  const header = (name: string) => {
    const v = headers instanceof Headers ? headers.get(name) : headers[name] ?? headers[name.toLowerCase()];
    return Array.isArray(v) ? v[0] : v ?? undefined;
  };
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not a Unix time in seconds');
  const now = Math.floor((opts.now?.() ?? new Date()).getTime() / 1000);
  if (Math.abs(now - Number(timestamp)) > (opts.toleranceSeconds ?? 300)) throw new WebhookVerificationError('webhook-timestamp is too far from now');
  const expected = mac(secret, id, timestamp, body);
  const ok = signatures.split(' ').some((s) => {
    const [version, value] = s.split(',', 2);
    if (version !== 'v1' || !value) return false;
    try {
      return sameBytes(fromBase64(value), expected);
    } catch {
      return false;
    }
  });
  if (!ok) throw new WebhookVerificationError('no webhook-signature matches the secret');
  return JSON.parse(body) as { type: string; timestamp: string; data: Record<string, unknown> };
}

/** The signature the exchange puts in `webhook-signature` (for receivers' tests). */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  return `v1,${toBase64(mac(secret, id, timestampSeconds, body))}`;
}
