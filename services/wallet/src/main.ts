import { connectBus, createLogger, loadConfig, stopOnSignals } from '@aex/platform';
import { startWalletService } from './service.js';

// Standalone wallet service: configured only by environment variables (D16).
const config = loadConfig();
const logger = createLogger('wallet', config.LOG_LEVEL);
if (!config.DATABASE_URL) throw new Error('DATABASE_URL is required to run the wallet service on its own.');
const bus = await connectBus(config, 'aex-wallet', { allowMemory: false });
const service = await startWalletService({ bus, databaseUrl: config.DATABASE_URL, config, logger });
logger.info({ bus: bus.kind }, 'wallet service started');
stopOnSignals(logger, async () => {
  await service.stop();
  await bus.close();
});
