export { startWalletService, type WalletService } from './service.js';
export { checkLedgerInvariants } from './wallets/check.js';
export { database } from './db/migrations/index.js';
