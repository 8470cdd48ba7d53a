export { startTransactionService, type TransactionService } from './service.js';
export { listPrice, platformFee, MAX_TRANSACTION_CENTS } from './domain/pricing.js';
