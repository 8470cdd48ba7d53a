export { startTransactionService, type TransactionService } from './service.js';
export { listPrice, platformFee } from './domain/pricing.js';
