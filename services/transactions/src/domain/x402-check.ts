import { createPublicKey, verify } from 'node:crypto';
import { AEX_ESCROW, canonicalJson, x402SigningString, type X402FacilitatorBody } from '@aex/contracts';

/**
 * D19.1, D19.2: what the facilitator checks of a payment before anything is held: that it is of
 * its own kind, that the payload accepted the requirements the resource server sends, that it is
 * still valid, and that the payer's registered key signed it. An x402 verdict: a reason in x402's
 * words (`invalidReason`) and a sentence, or null when it passes. No I/O: the key comes in.
 */
export interface X402Problem {
  reason: string;
  message: string;
}

const REQUIREMENT_FIELDS = ['scheme', 'network', 'amount', 'asset', 'payTo', 'maxTimeoutSeconds', 'extra'] as const;

/** The requirements' kind (scheme, network, asset) and the payload's agreement with them, at `now`. */
export function requirementsProblem(body: X402FacilitatorBody, network: string, now: Date): X402Problem | null {
  const r = body.paymentRequirements;
  if (r.scheme !== AEX_ESCROW) return { reason: 'unsupported_scheme', message: `This facilitator settles the ${AEX_ESCROW} scheme only.` };
  if (r.network !== network) return { reason: 'invalid_network', message: `The ${AEX_ESCROW} network of this exchange is ${network}.` };
  if (r.asset !== 'USD') return { reason: 'invalid_asset', message: 'Exchange wallets pay in USD: asset must be "USD" (amount in cents).' };
  const accepted = body.paymentPayload.accepted;
  if (REQUIREMENT_FIELDS.some((f) => canonicalJson(accepted[f]) !== canonicalJson(r[f]))) {
    return { reason: 'requirements_mismatch', message: 'The payment accepted other requirements than these.' };
  }
  if (body.paymentPayload.payload.validBefore * 1000 <= now.getTime()) {
    return { reason: 'payment_expired', message: 'The payment\'s validBefore has passed: sign a new one.' };
  }
  return null;
}

/** D19.2: the payload's Ed25519 signature of `x402SigningString`, by the raw 32-byte public key. */
export function signatureValid(body: X402FacilitatorBody, publicKey: Uint8Array): boolean {
  const p = body.paymentPayload.payload;
  const message = Buffer.from(x402SigningString({ requirements: body.paymentPayload.accepted, payer: p.payer, nonce: p.nonce, validBefore: p.validBefore }), 'utf8');
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey).toString('base64url') }, format: 'jwk' });
    return verify(null, message, key, Buffer.from(p.signature, 'base64'));
  } catch {
    return false;
  }
}

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** D6.7: the raw Ed25519 key of a Multikey `publicKeyMultibase` (`z` + base58btc of 0xed 0x01 + key); null when it is not one. */
export function ed25519OfMultibase(multibase: string): Uint8Array | null {
  if (!multibase.startsWith('z')) return null;
  let n = 0n;
  for (const ch of multibase.slice(1)) {
    const digit = BASE58.indexOf(ch);
    if (digit < 0) return null;
    n = n * 58n + BigInt(digit);
  }
  const bytes: number[] = [];
  while (n > 0n) {
    bytes.unshift(Number(n % 256n));
    n /= 256n;
  }
  for (const ch of multibase.slice(1)) {
    if (ch !== '1') break;
    bytes.unshift(0);
  }
  if (bytes.length !== 34 || bytes[0] !== 0xed || bytes[1] !== 0x01) return null;
  return Uint8Array.from(bytes.slice(2));
}
