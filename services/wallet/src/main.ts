import { connectBus, createLogger, loadConfig, required, runMain, stopOnSignals } from '@aex/platform';
import { startWalletService } from './service.js';

// Standalone wallet service: configured only by environment variables (D16).
await runMain(async () => {
  const config = loadConfig();
  const databaseUrl = required(config, 'DATABASE_URL', 'the wallet service');
  required(config, 'NATS_URL', 'the wallet service');
  const logger = createLogger('wallet', config.LOG_LEVEL);
  const bus = await connectBus(config, 'aex-wallet', { allowMemory: false, logger });
  const service = await startWalletService({ bus, databaseUrl, config, logger });
  logger.info({ bus: bus.kind }, 'wallet service started');
  stopOnSignals(logger, async () => {
    await service.stop();
    await bus.close();
  });
});
