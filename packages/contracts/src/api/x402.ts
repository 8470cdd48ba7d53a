import { Type, type Static } from '@sinclair/typebox';
import { Uuid } from '../common.js';

/**
 * D19: x402 v2 through exchange escrow. The exchange is the facilitator of one scheme of its own,
 * `aex-escrow`, on the network `aex:{domain}`: a payment is an exchange purchase whose price is held
 * at verify, captured at settle, and returned when the resource server never settles.
 */

import { X402_VERSION } from '../x402-signing.js';

export { AEX_ESCROW, X402_VERSION, aexNetworkOf, x402SigningString, type SignedRequirements } from '../x402-signing.js';

/** Facilitator's bounds on `maxTimeoutSeconds`: at least a second, at most a day (the approval TTL's default). */
export const X402_TIMEOUT = { min: 1, max: 86_400 } as const;

/** D19.1: PaymentRequirements of `aex-escrow` (x402 v2's fields; others are x402's own, kept as given). */
export const X402Requirements = Type.Object({
  scheme: Type.String({ minLength: 1, maxLength: 64 }),
  network: Type.String({ minLength: 3, maxLength: 300 }),
  /** Integer cents, as a string (x402 amounts are atomic units). */
  amount: Type.String({ pattern: '^[1-9][0-9]{0,11}$', description: 'Integer cents as a string' }),
  asset: Type.String({ minLength: 1, maxLength: 64 }),
  /** The provider agent's id. */
  payTo: Uuid,
  maxTimeoutSeconds: Type.Integer({ minimum: X402_TIMEOUT.min, maximum: X402_TIMEOUT.max }),
  extra: Type.Object({ serviceId: Uuid }, { additionalProperties: true }),
}, { additionalProperties: true });
export type X402Requirements = Static<typeof X402Requirements>;

/**
 * D19.2: what the payer signs and sends as the payment payload's `payload`: its agent id, a nonce
 * used once, the Unix second after which the payload is refused, and its Ed25519 signature of
 * `x402SigningString` with its registered signing key (base64 of the 64 bytes).
 */
export const AexEscrowPayload = Type.Object({
  payer: Uuid,
  nonce: Type.String({ pattern: '^[A-Za-z0-9_-]{16,128}$' }),
  validBefore: Type.Integer({ minimum: 0, maximum: 1e11 }),
  signature: Type.String({ pattern: '^[A-Za-z0-9+/]{86}==$' }),
});
export type AexEscrowPayload = Static<typeof AexEscrowPayload>;

/** x402 v2's PaymentPayload, as the facilitator reads it. */
export const X402PaymentPayload = Type.Object({
  x402Version: Type.Literal(X402_VERSION),
  resource: Type.Optional(Type.Object({ url: Type.String({ maxLength: 4096 }) }, { additionalProperties: true })),
  accepted: X402Requirements,
  payload: AexEscrowPayload,
  extensions: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
}, { additionalProperties: true });
export type X402PaymentPayload = Static<typeof X402PaymentPayload>;

/** POST /x402/verify and /x402/settle: x402 v2's facilitator request (what `HTTPFacilitatorClient` sends). */
export const X402FacilitatorBody = Type.Object({
  x402Version: Type.Literal(X402_VERSION),
  paymentPayload: X402PaymentPayload,
  paymentRequirements: X402Requirements,
}, { additionalProperties: false });
export type X402FacilitatorBody = Static<typeof X402FacilitatorBody>;

/** x402 v2's VerifyResponse (bare JSON, not the envelope: x402 clients parse it as it is). */
export const X402VerifyResponse = Type.Object({
  isValid: Type.Boolean(),
  invalidReason: Type.Optional(Type.String()),
  invalidMessage: Type.Optional(Type.String()),
  payer: Type.Optional(Type.String()),
  /** The exchange's transaction of the payment, when there is one (EXT). */
  extra: Type.Optional(Type.Object({ transactionId: Uuid, status: Type.String() })),
});
export type X402VerifyResponse = Static<typeof X402VerifyResponse>;

/** x402 v2's SettleResponse: `transaction` is the exchange's transaction id (D19.2). */
export const X402SettleResponse = Type.Object({
  success: Type.Boolean(),
  errorReason: Type.Optional(Type.String()),
  errorMessage: Type.Optional(Type.String()),
  payer: Type.Optional(Type.String()),
  transaction: Type.String(),
  network: Type.String(),
  amount: Type.Optional(Type.String()),
});
export type X402SettleResponse = Static<typeof X402SettleResponse>;

/** x402 v2's SupportedResponse (D19.2, no authentication). */
export const X402SupportedResponse = Type.Object({
  kinds: Type.Array(Type.Object({ x402Version: Type.Integer(), scheme: Type.String(), network: Type.String(), extra: Type.Optional(Type.Record(Type.String(), Type.Unknown())) })),
  extensions: Type.Array(Type.String()),
  signers: Type.Record(Type.String(), Type.Array(Type.String())),
});
export type X402SupportedResponse = Static<typeof X402SupportedResponse>;
