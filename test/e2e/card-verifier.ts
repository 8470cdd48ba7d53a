import { canonicalize } from 'json-canonicalize';
import { createLocalJWKSet, flattenedVerify, type JSONWebKeySet, type ProtectedHeaderParameters } from 'jose';

// D21.1 as a stock verifier does it, with nothing of the exchange's code: the card without its
// `signatures`, in RFC 8785 form (`json-canonicalize`), is the detached payload of each JWS
// signature; `jose` verifies it with the key the JWK set names by the protected header's `kid`.

/** The exchange's JWK set (D18.1). */
export async function jwks(baseUrl: string): Promise<JSONWebKeySet> {
  const res = await fetch(`${baseUrl}/.well-known/jwks.json`);
  if (res.status !== 200) throw new Error(`jwks.json: ${res.status}`);
  return (await res.json()) as JSONWebKeySet;
}

interface CardSignature {
  protected: string;
  signature: string;
  header?: Record<string, unknown>;
}

/** Verifies the card's first signature; answers its protected header, throws when it does not verify. */
export async function verifyCard(card: Record<string, unknown>, keys: JSONWebKeySet): Promise<ProtectedHeaderParameters> {
  const { signatures, ...unsigned } = card as { signatures?: CardSignature[] };
  const first = signatures?.[0];
  if (!first) throw new Error('the card is not signed');
  const payload = Buffer.from(canonicalize(unsigned)).toString('base64url');
  const verified = await flattenedVerify({ payload, protected: first.protected, signature: first.signature, ...(first.header ? { header: first.header } : {}) }, createLocalJWKSet(keys));
  return verified.protectedHeader!;
}

/** The `kid` of the card's first signature. */
export function cardSignatureKid(card: Record<string, unknown>): string | undefined {
  const first = (card.signatures as CardSignature[] | undefined)?.[0];
  return first ? (JSON.parse(Buffer.from(first.protected, 'base64url').toString('utf8')) as { kid?: string }).kid : undefined;
}
