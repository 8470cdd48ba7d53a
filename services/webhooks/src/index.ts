export { startWebhookService, type WebhookService } from './service.js';
export { sign, signatureHeader } from './domain/signing.js';
