export { ExchangeClient, ExchangeError, unwrap, type ClientOptions, type Outcome, type RequestOptions, type Success, type Failure } from './client.js';
export { generateSigningKey, publicKeyOf, signHttpMessage, signRequest, signingKeyProof, signingString, verifySignature, type SigningKeyPair } from './signing.js';
export { signWebhook, verifyWebhook, WebhookVerificationError, type VerifyOptions } from './webhooks.js';
export { verifyReceipt, ReceiptVerificationError } from './receipts.js';
export { deliveryDeadlineMs, waitForDelivery, type DeliveryWait, type WaitForDeliveryOptions } from './delivery.js';
export type { FromSchema } from './schema-types.js';
export type { ServiceContract, ServiceHandle, TypedDeliverBody, TypedDeliveryWait, TypedTransaction } from './typed-service.js';
import type { DelegationInForceView as InForceView, DelegationRules as Rules } from '@aex/contracts';
// Aliases, not re-exports: the published declarations then name types only, never a schema value
// that the bundle does not export.
/** D10.1, D6.8: `getAgentDelegation`'s answer: the agent's own rules, the rules in force, and what they start from. */
export type DelegationInForceView = InForceView;
/** Delegation rules: every field optional. */
export type DelegationRules = Rules;
