import { runService } from '@aex/platform';
import { startWebhookService } from './service.js';

// The webhook dispatcher on its own (D16: configured by environment variables only).
await runService('webhooks', startWebhookService);
