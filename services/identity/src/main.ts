import { connectBus, createLogger, loadConfig, stopOnSignals } from '@aex/platform';
import { startIdentityService } from './service.js';

// Standalone identity service: configured only by environment variables (D16).
const config = loadConfig();
const logger = createLogger('identity', config.LOG_LEVEL);
if (!config.DATABASE_URL) throw new Error('DATABASE_URL is required to run the identity service on its own.');
const bus = await connectBus(config, 'aex-identity', { allowMemory: false });
const service = await startIdentityService({ bus, databaseUrl: config.DATABASE_URL, config, logger });
logger.info({ bus: bus.kind }, 'identity service started');
stopOnSignals(logger, async () => {
  await service.stop();
  await bus.close();
});
