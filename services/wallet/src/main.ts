import { runService } from '@aex/platform';
import { startWalletService } from './service.js';

// The wallet service on its own (D16: configured by environment variables only).
await runService('wallet', startWalletService);
