import { connectBus, createLogger, loadConfig, required, runMain, stopOnSignals } from '@aex/platform';
import { buildGateway } from './service.js';
import { listen } from './http/server.js';

// Standalone gateway: configured only by environment variables (D16).
await runMain(async () => {
  const config = loadConfig();
  required(config, 'NATS_URL', 'the gateway');
  const logger = createLogger('gateway', config.LOG_LEVEL, config.LOG_FORMAT);
  const bus = await connectBus(config, 'aex-gateway', { allowMemory: false, logger });
  const app = await buildGateway({ bus, config, logger });
  const url = await listen(app, config.HOST, config.PORT);
  logger.info({ url, bus: bus.kind }, 'gateway listening');
  stopOnSignals(logger, async () => {
    await app.close();
    await bus.close();
  });
});
