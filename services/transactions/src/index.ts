export { startTransactionService, type TransactionService } from './service.js';
export { listPrice, platformFee } from './domain/pricing.js';
export { database } from './db/migrations/index.js';
