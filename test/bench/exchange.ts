import { randomBytes } from 'node:crypto';
import { NatsBus, loadConfig, type Bus, type ExchangeConfig } from '@aex/platform';
import { NatsCluster, createTestBus, createTestDatabase, testLogger, testNamespace, type TestDatabase } from '@aex/platform/testing';
import { startStack, type Stack } from '@aex/stack';
import { spawnMain, stopProcess, type SpawnedProcess } from '../e2e/harness.js';

/** Rate limits out of reach: the buckets are still taken on every request but never refuse one. */
const UNLIMITED = '100000000';

const LIMITS_OUT_OF_REACH = {
  RATE_LIMIT_READ_PER_MIN: UNLIMITED, RATE_LIMIT_WRITE_PER_MIN: UNLIMITED, RATE_LIMIT_DISCOVERY_PER_MIN: UNLIMITED, RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP: UNLIMITED,
};

export interface BenchExchange {
  stack: Stack;
  config: ExchangeConfig;
  db: TestDatabase;
  /** The gateway's URL. */
  url: string;
}

/**
 * Runs `body` against a whole exchange in this process (every service, this machine's Postgres and
 * NATS JetStream, a database and namespace of its own, sandbox payments, limits out of reach), then
 * stops it and removes its data: what every benchmark measures the exchange on.
 *
 * `cluster`: the exchange's bus is a three-node JetStream cluster started for the run, every stream
 * and KV bucket kept on all three (`NATS_REPLICAS=3`), as the Helm chart deploys it; otherwise this
 * machine's one NATS server.
 */
export async function withBenchExchange<T>(body: (ex: BenchExchange) => Promise<T>, opts: { cluster?: boolean } = {}): Promise<T> {
  const db = await createTestDatabase();
  const { bus, dispose } = opts.cluster ? await clusterBus() : await createTestBus('jetstream');
  const config = loadConfig({}, {
    PAYMENTS_PROVIDER: 'sandbox', BUS_NAMESPACE: bus.namespace, LOG_LEVEL: 'silent', RECEIPT_SIGNING_KEY: randomBytes(32).toString('base64'),
    NATS_REPLICAS: opts.cluster ? '3' : '1', ...LIMITS_OUT_OF_REACH,
  });
  const stack = await startStack({ bus, databaseUrl: db.url, config, logger: testLogger() });
  try {
    const url = await stack.gateway.listen({ host: '127.0.0.1', port: 0 });
    return await body({ stack, config, db, url });
  } finally {
    await stack.stop();
    await dispose();
    await db.drop();
  }
}

/** A bus on a three-node cluster of its own, with three replicas of everything; disposing stops the cluster. */
async function clusterBus(): Promise<{ bus: Bus; dispose(): Promise<void> }> {
  const cluster = await NatsCluster.start(3);
  const bus = await NatsBus.connect(cluster.url, testNamespace(), 'aex-bench', undefined, { replicas: 3 });
  return {
    bus,
    async dispose() {
      await bus.close();
      await cluster.stop();
    },
  };
}

/**
 * `withBenchExchange` with every service in a process of its own, started from its `main.ts` with
 * the flags `pnpm start` uses, as the Helm chart deploys them (one Deployment per service): the
 * services can then use both cores of the machine, next to Postgres and NATS.
 */
export async function withBenchProcesses<T>(body: (ex: Omit<BenchExchange, 'stack'>) => Promise<T>): Promise<T> {
  const db = await createTestDatabase();
  const { bus, dispose } = await createTestBus('jetstream');
  const env = {
    DATABASE_URL: db.url, NATS_URL: process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222', BUS_NAMESPACE: bus.namespace, PORT: '0',
    PAYMENTS_PROVIDER: 'sandbox', LOG_LEVEL: 'info', ...LIMITS_OUT_OF_REACH,
  };
  const running: SpawnedProcess[] = [];
  try {
    for (const name of ['identity', 'wallet', 'catalog', 'transactions', 'webhooks']) {
      running.push(await spawnMain(`services/${name}/src/main.ts`, env, new RegExp(`${name} service started`)));
    }
    const gateway = await spawnMain('services/gateway/src/main.ts', env, /"url":"(http:\/\/[^"]+)"[^\n]*gateway listening/);
    running.push(gateway);
    const config = loadConfig({}, { ...env, LOG_LEVEL: 'silent' });
    return await body({ config, db, url: gateway.match[1]! });
  } finally {
    for (const r of running.reverse()) await stopProcess(r.child);
    await dispose();
    await db.drop();
  }
}
