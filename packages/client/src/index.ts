export { ExchangeClient, ExchangeError, unwrap, type ClientOptions, type Outcome, type RequestOptions, type Success, type Failure } from './client.js';
export { generateSigningKey, publicKeyOf, signHttpMessage, signRequest, signingKeyProof, signingString, verifySignature, type SigningKeyPair } from './signing.js';
export { signWebhook, verifyWebhook, WebhookVerificationError, type VerifyOptions } from './webhooks.js';
export { verifyReceipt, ReceiptVerificationError } from './receipts.js';
export { deliveryDeadlineMs, waitForDelivery, type DeliveryWait, type WaitForDeliveryOptions } from './delivery.js';
export type { FromSchema } from './schema-types.js';
export type { ServiceContract, ServiceHandle, TypedDeliverBody, TypedDeliveryWait, TypedTransaction } from './typed-service.js';
