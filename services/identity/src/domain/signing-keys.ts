import { createPublicKey, verify } from 'node:crypto';
import { Point } from '@noble/ed25519';
import { signingKeyProofMessage } from '@aex/contracts';

/**
 * Rules for an agent's `signingKeyPublic` (D3.2). A key must be a valid Ed25519 public key that
 * can only have come from a secret key: its encoding canonical, its point on the curve, of the
 * prime order — the all-zero key, the identity and the other small-order points verify forged
 * signatures, so they are refused.
 */
export function signingKeyProblem(b64: string): string | null {
  const raw = Buffer.from(b64, 'base64');
  if (raw.length !== 32 || raw.toString('base64') !== b64) return 'must be the base64 of a raw 32-byte Ed25519 public key';
  let point: Point;
  try {
    point = Point.fromBytes(raw, false);
  } catch {
    return 'is not a point of the Ed25519 curve';
  }
  if (point.isSmallOrder() || !point.isTorsionFree()) return 'is a weak Ed25519 key (small-order or mixed-order point)';
  return null;
}

/** Whether `proof` (base64 or base64url of 64 bytes) is the key's signature of the proof text. */
export function verifySigningKeyProof(accountId: string, publicKey: string, proof: string): boolean {
  const sig = Buffer.from(proof.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (sig.length !== 64) return false;
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey, 'base64').toString('base64url') }, format: 'jwk' });
  return verify(null, Buffer.from(signingKeyProofMessage(accountId, publicKey), 'utf8'), key, sig);
}
