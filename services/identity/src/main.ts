import { runService } from '@aex/platform';
import { startIdentityService } from './service.js';

// The identity service on its own (D16: configured by environment variables only).
await runService('identity', startIdentityService);
