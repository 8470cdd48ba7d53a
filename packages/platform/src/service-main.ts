import type { Bus } from './bus/types.js';
import { loadConfig, type ExchangeConfig } from './config.js';
import { connectServiceDb, type ServiceDbOptions } from './db/connect.js';
import { busCheck, serveHealth } from './health.js';
import { createLogger, type Logger } from './logger.js';
import { connectBus, required, runMain, stopOnSignals, type Component } from './runtime.js';

/**
 * The `main.ts` of a service run on its own (D16: configured by environment variables only):
 * DATABASE_URL and NATS_URL required, the service started, `/healthz` and `/readyz` served on
 * HEALTH_PORT when set (bus + the service's own checks), and a graceful stop on SIGINT/SIGTERM.
 */
export async function runService(name: string, start: (opts: { bus: Bus; databaseUrl: string; config: ExchangeConfig; logger: Logger }) => Promise<Component>): Promise<void> {
  await runMain(async () => {
    const config = loadConfig();
    const who = `the ${name} service`;
    const databaseUrl = required(config, 'DATABASE_URL', who);
    required(config, 'NATS_URL', who);
    const logger = createLogger(name, config.LOG_LEVEL, config.LOG_FORMAT);
    const bus = await connectBus(config, `aex-${name}`, { allowMemory: false, logger });
    const service = await start({ bus, databaseUrl, config, logger });
    const health = config.HEALTH_PORT === undefined ? null : await serveHealth({
      host: config.HOST,
      port: config.HEALTH_PORT,
      checks: async () => {
        const [busReady, own] = await Promise.all([busCheck(bus), service.checks?.() ?? []]);
        return [busReady, ...own];
      },
      logger,
      metricsToken: config.METRICS_TOKEN,
    });
    logger.info({ bus: bus.kind }, `${name} service started`);
    stopOnSignals(logger, async () => {
      health?.close();
      await service.stop();
      await bus.close();
    });
  });
}

/**
 * A service's `migrate.ts`, what the Helm chart's migrations Job runs before an install or upgrade:
 * its schema (and role, when the login may create one) brought to the latest migration, then exit 0.
 * A service also migrates at start, under the same lock, so a Job that did not run loses nothing.
 */
export async function runMigrations(database: Pick<ServiceDbOptions, 'schema' | 'migrations' | 'extensions'>): Promise<void> {
  const name = database.schema;
  await runMain(async () => {
    const config = loadConfig();
    const databaseUrl = required(config, 'DATABASE_URL', `the ${name} migrations`);
    const logger = createLogger(`${name}-migrations`, config.LOG_LEVEL, config.LOG_FORMAT);
    const serviceDb = await connectServiceDb({ url: databaseUrl, ...database, logger, poolSize: 1, preparedStatements: config.DATABASE_PREPARED_STATEMENTS === 'true' });
    await serviceDb.close();
    logger.info({ schema: database.schema }, `${name} migrations done`);
  });
}
