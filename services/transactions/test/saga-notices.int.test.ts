import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, testLogger, type TestDatabase } from '@aex/platform/testing';
import type { TransactionRow } from '../src/db/schema.js';
import { startTransactionService, type TransactionService } from '../src/index.js';

// A request waiting on the saga learns of a step another replica's consumer made from
// that replica's notice, at once, not from its own reading every second.

let database: TestDatabase;
let bus: Bus;
let dispose: () => Promise<void>;
const replicas: TransactionService[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  ({ bus, dispose } = await createTestBus('jetstream'));
  const config = loadConfig({}, { BUS_NAMESPACE: bus.namespace });
  for (let i = 0; i < 2; i++) replicas.push(await startTransactionService({ bus, databaseUrl: database.url, config, logger: testLogger() }));
});
afterAll(async () => {
  for (const r of replicas) await r.stop();
  await dispose?.();
  await database?.drop();
});

describe('saga notices between replicas', () => {
  it('wakes a waiter of another replica, well before its own next reading', async () => {
    const [a, b] = replicas as [TransactionService, TransactionService];
    const watch = a.deps.signals.watch('4d1c0f2e-6a53-4b1e-9a0c-2f3b4c5d6e7f');
    try {
      const started = Date.now();
      const woken = watch.next(a.deps.signals.fallbackMs);
      b.deps.signals.committed({ id: '4d1c0f2e-6a53-4b1e-9a0c-2f3b4c5d6e7f', hold: 'held' } as TransactionRow);
      // A bare signal: the row is read where the request waits.
      expect(await woken).toEqual({ row: undefined });
      expect(Date.now() - started).toBeLessThan(a.deps.signals.fallbackMs / 2);
    } finally {
      watch.close();
    }
  });
});
