import { resolve } from 'node:path';
import { listen } from '@aex/gateway';
import { connectBus, createLogger, loadConfig, runMain, stopOnSignals } from '@aex/platform';
import { startEmbeddedPostgres, startLocalNats, type Started } from './infra/local-infra.js';
import { startStack } from './service.js';
import { lockDataDir } from './infra/data-dir-lock.js';
import { localOperatorToken, localReceiptKey } from './infra/operator-token.js';
import { stopStack } from './infra/shutdown.js';
import { noWatchdog, startWatchdog } from './infra/watchdog.js';

// `pnpm start`: the whole exchange in one process (README "Run it, test it"). Local defaults: the
// sandbox payment processor, private webhook targets allowed (D16), an operator token and a receipt
// key of the data directory's; everything else as configured.
await runMain(async () => {
  const dataDir = resolve(process.env.AEX_DATA_DIR ?? '.data');
  const operator = process.env.ADMIN_TOKEN ? null : localOperatorToken(dataDir);
  const config = loadConfig(process.env, localDefaults(dataDir, operator));
  const logger = createLogger('stack', config.LOG_LEVEL, config.LOG_FORMAT);
  const owned: Started[] = [];
  let url: string | null = null;
  // Before anything in the data directory is touched: a live exchange there keeps it (and its servers).
  const usesDataDir = !config.DATABASE_URL || !config.NATS_URL;
  const lock = usesDataDir ? await lockDataDir(dataDir, () => ({ pid: process.pid, url })) : null;
  // Postgres and nats-server stop with the stack, even when it is killed outright.
  const watchdog = usesDataDir ? startWatchdog(logger) : noWatchdog;
  const release = async () => {
    watchdog.close();
    await lock?.release();
  };

  // A start that fails (a refused configuration, a port taken) leaves nothing running: the servers
  // it started are in process groups of their own and would outlive it.
  const started = await startUp().catch(async (err: unknown) => {
    await stopStack(logger, { services: async () => undefined, servers: owned, release });
    throw err;
  });
  const { bus, stack } = started;
  url = started.url;

  async function startUp() {
    let databaseUrl = config.DATABASE_URL;
    if (!databaseUrl) {
      const pg = await startEmbeddedPostgres(dataDir, logger, watchdog);
      owned.push(pg);
      databaseUrl = pg.url;
      logger.info({ dir: `${dataDir}/postgres` }, 'embedded Postgres started');
    }

    // NATS_URL, else a nats-server from PATH, else the in-process bus.
    const nats = config.NATS_URL ? null : await startLocalNats(dataDir, logger, watchdog);
    if (nats) {
      owned.push(nats);
      logger.info({ dir: `${dataDir}/nats` }, 'nats-server with JetStream started');
    } else if (!config.NATS_URL) {
      logger.warn('nats-server not found on PATH: using the in-process bus');
    }
    const bus = await connectBus({ ...config, NATS_URL: config.NATS_URL ?? nats?.url }, 'aex-stack', { allowMemory: true, logger });

    const stack = await startStack({ bus, databaseUrl, config, logger }).catch(async (err: unknown) => {
      await bus.close();
      throw err;
    });
    const listening = await listen(stack.gateway, config.HOST, config.PORT).catch(async (err: unknown) => {
      await stack.stop();
      await bus.close();
      throw err;
    });
    return { bus, stack, url: listening };
  }

  console.log(banner(url, bus.kind, operator));

  stopOnSignals(logger, () => stopStack(logger, {
    services: async () => {
      await stack.stop();
      await bus.close();
    },
    servers: owned,
    release,
  }));
});

/** What `pnpm start` sets unless the environment does: the local stack's defaults and its data directory's secrets. */
function localDefaults(dataDir: string, operator: { token: string } | null): Record<string, string> {
  return {
    PAYMENTS_PROVIDER: process.env.PAYMENTS_PROVIDER ?? 'sandbox',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: process.env.WEBHOOK_ALLOW_PRIVATE_NETWORKS ?? 'true',
    ...(operator ? { ADMIN_TOKEN: operator.token } : {}),
    RECEIPT_SIGNING_KEY: process.env.RECEIPT_SIGNING_KEY ?? localReceiptKey(dataDir),
  };
}

/** What the terminal shows once the exchange listens: where to go next. */
function banner(url: string, busKind: string, operator: { file: string } | null): string {
  return [
    '',
    `Agent exchange listening on ${url} (bus: ${busKind})`,
    'Try:',
    `  curl -s ${url}/v1/protocol`,
    `  curl -s -X POST ${url}/v1/accounts -H 'content-type: application/json' \\`,
    `    -d '{"accountType":"individual","email":"you@example.com","displayName":"You","agent":{"name":"my-agent"}}'`,
    'A first purchase, step by step: README.md, "Your first purchase".',
    `API reference: ${url}/docs/api.md · OpenAPI: ${url}/v1/openapi.json`,
    `For LLM agents and terminals (MCP server, aex CLI): README.md, "What you can do with it" · agent card: ${url}/.well-known/agent-card.json`,
    `Console for people: ${url}/console/ (owners: 'aex console', or the owner agent's API key; operators: ${operator ? `the token in ${operator.file}` : 'ADMIN_TOKEN'}) · Prometheus metrics: ${url}/metrics`,
    '',
  ].join('\n');
}
