import { connectBus, createLogger, loadConfig, required, runMain, stopOnSignals } from '@aex/platform';
import { startIdentityService } from './service.js';

// Standalone identity service: configured only by environment variables (D16).
await runMain(async () => {
  const config = loadConfig();
  const databaseUrl = required(config, 'DATABASE_URL', 'the identity service');
  required(config, 'NATS_URL', 'the identity service');
  const logger = createLogger('identity', config.LOG_LEVEL);
  const bus = await connectBus(config, 'aex-identity', { allowMemory: false, logger });
  const service = await startIdentityService({ bus, databaseUrl, config, logger });
  logger.info({ bus: bus.kind }, 'identity service started');
  stopOnSignals(logger, async () => {
    await service.stop();
    await bus.close();
  });
});
