import type { DidDocument } from '@aex/contracts';

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** base58btc (Bitcoin alphabet), leading zero bytes as '1'. */
export function base58btc(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  const digits: number[] = [];
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i]!;
    for (let j = 0; j < digits.length; j++) {
      carry += digits[j]! << 8;
      digits[j] = carry % 58;
      carry = (carry / 58) | 0;
    }
    while (carry > 0) {
      digits.push(carry % 58);
      carry = (carry / 58) | 0;
    }
  }
  return '1'.repeat(zeros) + digits.reverse().map((d) => ALPHABET[d]).join('');
}

/** D6.7: `z` + base58btc(0xed 0x01 + raw 32-byte Ed25519 key). */
export function ed25519Multibase(rawKey: Uint8Array): string {
  const prefixed = new Uint8Array(34);
  prefixed.set([0xed, 0x01]);
  prefixed.set(rawKey, 2);
  return `z${base58btc(prefixed)}`;
}

/** D6.6: the configured public host is the domain; a port is written `%3A<port>`. */
export { didWebFor } from '@aex/contracts';

export interface SigningKeyRecord {
  publicKey: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/**
 * D6.7 DID document: every key the agent ever registered (oldest first, `revoked` on replaced ones),
 * the current key alone in `authentication` and `assertionMethod`, and the exchange profile service.
 */
export function didDocument(opts: { did: string; profileUrl: string; keys: SigningKeyRecord[] }): DidDocument {
  const methods = opts.keys.map((k, i) => ({
    id: `${opts.did}#key-${i + 1}`,
    type: 'Multikey' as const,
    controller: opts.did,
    publicKeyMultibase: ed25519Multibase(Buffer.from(k.publicKey, 'base64')),
    ...(k.revokedAt ? { revoked: k.revokedAt.toISOString() } : {}),
  }));
  const current = methods.filter((_, i) => !opts.keys[i]!.revokedAt).map((m) => m.id);
  return {
    '@context': ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/multikey/v1'],
    id: opts.did,
    controller: opts.did,
    verificationMethod: methods,
    authentication: current,
    assertionMethod: current,
    service: [{ id: `${opts.did}#exchange-profile`, type: 'AgentExchangeProfile', serviceEndpoint: opts.profileUrl }],
  };
}
