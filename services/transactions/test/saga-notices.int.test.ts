import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, testLogger, type TestDatabase } from '@aex/platform/testing';
import type { VersionedRow } from '../src/purchases/repository.js';
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
    const id = '4d1c0f2e-6a53-4b1e-9a0c-2f3b4c5d6e7f';
    const [signalsA, signalsB] = [a.deps.purchases.signals!, b.deps.purchases.signals!];
    const watch = signalsA.watch(id);
    try {
      const started = Date.now();
      const woken = watch.next(signalsA.fallbackMs);
      signalsB.committed(id, { id, hold: 'held' } as VersionedRow);
      // A bare signal: the row is read where the request waits.
      expect(await woken).toEqual({ state: undefined });
      expect(Date.now() - started).toBeLessThan(signalsA.fallbackMs / 2);
    } finally {
      watch.close();
    }
  });
});
