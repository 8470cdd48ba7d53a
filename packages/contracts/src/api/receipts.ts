import { Type, type Static } from '@sinclair/typebox';
import { Timestamp, Uuid } from '../common.js';
import { TransactionStatus } from './transactions.js';

/**
 * D18: the exchange's signed receipts. A receipt is a compact JWS (EdDSA, `typ: aex-receipt+jwt`)
 * whose payload says what a purchase came to; anyone verifies it with the exchange's JWK set alone.
 */

/** `did:web` of a host: the port's colon written `%3A` (did:web method). */
const didHost = (publicBaseUrl: string) => new URL(publicBaseUrl).host.replace(':', '%3A');

/** D18.1: the exchange's own DID, the issuer of its receipts. */
export const exchangeDidOf = (publicBaseUrl: string): string => `did:web:${didHost(publicBaseUrl)}`;

/** D6.7: an agent's DID. */
export const didWebFor = (publicBaseUrl: string, agentId: string): string => `did:web:${didHost(publicBaseUrl)}:agents:${agentId}`;

/** D18.2: a digest as receipts write it: `sha-256=:<base64>:` of the RFC 8785 canonical JSON. */
export const DigestString = Type.String({ pattern: '^sha-256=:[A-Za-z0-9+/]{43}=:$' });

const NullableInt = Type.Union([Type.Integer(), Type.Null()]);
const NullableTime = Type.Union([Timestamp, Type.Null()]);

/** D18.2: what a receipt states about the purchase. */
export const ReceiptClaims = Type.Object({
  transactionId: Uuid,
  status: TransactionStatus,
  /** The dispute's outcome when a dispute ended it; null otherwise. */
  outcome: Type.Union([Type.String(), Type.Null()]),
  serviceId: Uuid,
  serviceRevision: Type.Integer(),
  serviceVersion: Type.String(),
  consumer: Type.String({ description: 'The consumer agent\'s did:web' }),
  provider: Type.String({ description: 'The provider agent\'s did:web' }),
  inputDigest: Type.Union([DigestString, Type.Null()]),
  outputDigest: Type.Union([DigestString, Type.Null()]),
  units: NullableInt,
  priceCents: NullableInt,
  platformFeeCents: Type.Integer(),
  refundedCents: Type.Integer(),
  currency: Type.Literal('USD'),
  sessionId: Type.Union([Uuid, Type.Null()]),
  deliveredAt: NullableTime,
  settledAt: NullableTime,
  /**
   * The provider's signature of its delivery as the gateway verified it, and its scheme (D20.3):
   * `x-ae` — X-AE-Signature and its timestamp (D3); `rfc9421` — the Signature header, the `created`
   * time and the Signature-Input it covered (D20).
   */
  delivery: Type.Union([Type.Object({
    scheme: Type.Union([Type.Literal('x-ae'), Type.Literal('rfc9421')]),
    signature: Type.String(),
    signatureTimestamp: Type.String(),
    signatureInput: Type.Optional(Type.String()),
  }), Type.Null()]),
});
export type ReceiptClaims = Static<typeof ReceiptClaims>;

/** The JWS payload: issuer, subject, time of issue, and the claims. */
export interface ReceiptPayload {
  iss: string;
  sub: string;
  iat: number;
  receipt: ReceiptClaims;
}

/** GET /v1/transactions/{id}/receipt. */
export const ReceiptView = Type.Object({
  receipt: Type.String({ description: 'Compact JWS (EdDSA), verifiable with /.well-known/jwks.json' }),
  claims: ReceiptClaims,
});
export type ReceiptView = Static<typeof ReceiptView>;

/** D18.1: a public key of the exchange, as a JWK. */
export const ReceiptJwk = Type.Object({
  kty: Type.Literal('OKP'),
  crv: Type.Literal('Ed25519'),
  alg: Type.Literal('EdDSA'),
  use: Type.Literal('sig'),
  kid: Type.String(),
  x: Type.String(),
});
export type ReceiptJwk = Static<typeof ReceiptJwk>;

/** The exchange's receipt keys: the current one first, then every retired one (they keep verifying). */
export const ReceiptKeysView = Type.Object({
  keys: Type.Array(ReceiptJwk),
  current: Type.String({ description: 'kid of the key signing new receipts' }),
  retired: Type.Array(Type.Object({ kid: Type.String(), retiredAt: Timestamp })),
});
export type ReceiptKeysView = Static<typeof ReceiptKeysView>;

/**
 * D18.1: the exchange's own DID document (`did:web:{domain}`, at /.well-known/did.json): its
 * receipt keys as JsonWebKey2020 verification methods, the current one first; a receipt's `kid`
 * names the method `{did}#{kid}`.
 */
export const ExchangeDidDocument = Type.Object({
  '@context': Type.Array(Type.String()),
  id: Type.String(),
  verificationMethod: Type.Array(Type.Object({ id: Type.String(), type: Type.Literal('JsonWebKey2020'), controller: Type.String(), publicKeyJwk: ReceiptJwk })),
  assertionMethod: Type.Array(Type.String()),
});
export type ExchangeDidDocument = Static<typeof ExchangeDidDocument>;

export function exchangeDidDocument(publicBaseUrl: string, keys: readonly ReceiptJwk[]): ExchangeDidDocument {
  const did = exchangeDidOf(publicBaseUrl);
  const methods = keys.map((k) => ({ id: `${did}#${k.kid}`, type: 'JsonWebKey2020' as const, controller: did, publicKeyJwk: k }));
  return { '@context': ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/suites/jws-2020/v1'], id: did, verificationMethod: methods, assertionMethod: methods.map((m) => m.id) };
}
