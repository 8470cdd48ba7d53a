export { startWebhookService, type WebhookService } from './service.js';
export { sign, signatureHeader } from './domain/signing.js';
export { database } from './db/migrations/index.js';
