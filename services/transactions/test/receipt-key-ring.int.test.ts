import { randomUUID } from 'node:crypto';
import { decodeProtectedHeader } from 'jose';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ReceiptClaims } from '@aex/contracts';
import { loadConfig, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, eventually, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startTransactionService, type TransactionService } from '../src/index.js';

// D18.4 across replicas: each signs with the key it knows and looks every few seconds for a newer
// one another replica made — beside the signing, never in its way. A receipt is signed inside its
// purchase's database transaction; a look that waited for a connection of the pool while every other
// connection waited for a lock that transaction holds (the calls of one busy session) never ended.

let database: TestDatabase;
let bus: Bus;
let dispose: () => Promise<void>;
const replicas: TransactionService[] = [];
const SEED = Buffer.alloc(32, 7).toString('base64');

beforeAll(async () => {
  database = await createTestDatabase();
  ({ bus, dispose } = await createTestBus('jetstream'));
  const config = loadConfig({}, { BUS_NAMESPACE: bus.namespace, RECEIPT_SIGNING_KEY: SEED });
  for (let i = 0; i < 2; i++) replicas.push(await startTransactionService({ bus, databaseUrl: database.url, config, logger: testLogger() }));
});
afterEach(() => vi.useRealTimers());
afterAll(async () => {
  for (const r of replicas) await r.stop();
  await dispose?.();
  await database?.drop();
});

const claims = (): ReceiptClaims => ({
  transactionId: randomUUID(), status: 'settled', outcome: null, serviceId: randomUUID(), serviceRevision: 1, serviceVersion: '1.0.0',
  consumer: 'did:web:example.com:agents:a', provider: 'did:web:example.com:agents:b', inputDigest: null, outputDigest: null, units: 1,
  priceCents: 100, platformFeeCents: 5, refundedCents: 0, currency: 'USD', sessionId: null, deliveredAt: null, settledAt: null, delivery: null,
});
const kidOf = async (r: TransactionService) => decodeProtectedHeader((await r.deps.keyRing.sign(claims(), new Date())).jws).kid;

describe('the receipt key ring of each replica (D18.4)', () => {
  it('signs without waiting for the database when its look for a newer key is due, and signs with another replica’s rotation once it has looked', async () => {
    const [a, b] = replicas as [TransactionService, TransactionService];
    const before = await kidOf(a);
    const rotated = await b.deps.tx.run((trx, work) => b.deps.keyRing.rotate(trx, work, new Date()));
    expect(rotated.current).not.toBe(before);

    // Every read of the keys blocked; the look is due (5 s on): the signature does not wait for it.
    let release!: () => void;
    const held = new Promise<void>((res) => (release = res));
    let blocking!: Promise<void>;
    await new Promise<void>((locked) => {
      blocking = b.deps.db.transaction().execute(async (trx) => {
        await sql`lock table transactions.receipt_keys in access exclusive mode`.execute(trx);
        locked();
        await held;
      });
    });
    try {
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + 6_000);
      const signed = await Promise.race([kidOf(a), new Promise<string>((res) => setTimeout(() => res('waited for the database'), 2_000))]);
      expect(signed).toBe(before);
    } finally {
      release();
      await blocking;
    }
    // Once its look is answered, the new key signs.
    await eventually(async () => ((await kidOf(a)) === rotated.current ? true : null), 10_000, 50);
  });
});
