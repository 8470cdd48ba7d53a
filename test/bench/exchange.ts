import { loadConfig, type ExchangeConfig } from '@aex/platform';
import { createTestBus, createTestDatabase, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startStack, type Stack } from '@aex/stack';

/** Rate limits out of reach: the buckets are still taken on every request but never refuse one. */
const UNLIMITED = '100000000';

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
 */
export async function withBenchExchange<T>(body: (ex: BenchExchange) => Promise<T>): Promise<T> {
  const db = await createTestDatabase();
  const { bus, dispose } = await createTestBus('jetstream');
  const config = loadConfig({}, {
    PAYMENTS_PROVIDER: 'sandbox', BUS_NAMESPACE: bus.namespace, LOG_LEVEL: 'silent',
    RATE_LIMIT_READ_PER_MIN: UNLIMITED, RATE_LIMIT_WRITE_PER_MIN: UNLIMITED, RATE_LIMIT_DISCOVERY_PER_MIN: UNLIMITED, RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP: UNLIMITED,
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
