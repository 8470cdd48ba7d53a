import { createPrivateKey, sign as edSign } from 'node:crypto';
import type { SigningKey } from 'http-message-signatures';
import type { SigningKeyPair } from '@agent-exchange/client';

// D20 as a stock signer does it: the `http-message-signatures` library's signing key made from an
// agent's key pair, and the key id its signatures name.

/** The stock library's signing key from an agent's base64 seed, node:crypto doing Ed25519. */
export function signerOf(keys: SigningKeyPair, keyid: string): SigningKey {
  const x = Buffer.from(keys.publicKey, 'base64').toString('base64url');
  const d = Buffer.from(keys.secretKey, 'base64').toString('base64url');
  const key = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', x, d }, format: 'jwk' });
  return { id: keyid, alg: 'ed25519', sign: async (data: Buffer) => edSign(null, data, key) };
}

/** The agent's current key id as its DID document lists it (D6.7, D20.1). */
export async function keyIdOf(baseUrl: string, agentId: string): Promise<string> {
  const res = await fetch(`${baseUrl}/v1/agents/${agentId}/did.json`);
  return ((await res.json()) as { data: { assertionMethod: string[] } }).data.assertionMethod[0]!;
}
