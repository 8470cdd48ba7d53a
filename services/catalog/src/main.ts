import { runService } from '@aex/platform';
import { startCatalogService } from './service.js';

// The catalog service on its own (D16: configured by environment variables only).
await runService('catalog', startCatalogService);
