export { startWalletService, type WalletService } from './service.js';
export { checkLedgerInvariants } from './wallets/check.js';
export { database } from './db/migrations/index.js';
export type { PaymentProcessor } from './payments/processor.js';
export { StripeProcessor, type StripeOptions } from './payments/stripe.js';
