import { runService } from '@aex/platform';
import { startTransactionService } from './service.js';

// The transaction-and-negotiation service on its own (D16: configured by environment variables only).
await runService('transactions', startTransactionService);
