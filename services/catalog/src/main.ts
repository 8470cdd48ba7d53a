import { connectBus, createLogger, loadConfig, required, runMain, stopOnSignals } from '@aex/platform';
import { startCatalogService } from './service.js';

// Standalone catalog service: configured only by environment variables (D16).
await runMain(async () => {
  const config = loadConfig();
  const databaseUrl = required(config, 'DATABASE_URL', 'the catalog service');
  required(config, 'NATS_URL', 'the catalog service');
  const logger = createLogger('catalog', config.LOG_LEVEL);
  const bus = await connectBus(config, 'aex-catalog', { allowMemory: false, logger });
  const service = await startCatalogService({ bus, databaseUrl, config, logger });
  logger.info({ bus: bus.kind }, 'catalog service started');
  stopOnSignals(logger, async () => {
    await service.stop();
    await bus.close();
  });
});
