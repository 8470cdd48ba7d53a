import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TERMINAL_STATUSES } from '@aex/contracts';
import { loadConfig, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startTransactionService, type TransactionService } from '../src/index.js';
import { activeCounts, checkActiveLimit } from '../src/transactions/rules.js';

// D9.6 (issue 14): the active-transactions limit is counted from the transactions in progress
// alone, by the partial indexes of migration 0005, however long the parties' history.

let database: TestDatabase;
let bus: Bus;
let dispose: () => Promise<void>;
let service: TransactionService;

beforeAll(async () => {
  database = await createTestDatabase();
  ({ bus, dispose } = await createTestBus('jetstream'));
  service = await startTransactionService({ bus, databaseUrl: database.url, config: loadConfig({}, { BUS_NAMESPACE: bus.namespace }), logger: testLogger() });
});
afterAll(async () => {
  await service?.stop();
  await dispose?.();
  await database?.drop();
});

/** `n` transactions of `consumer` from `provider` in `status`, written straight into the table. */
const seed = (consumer: string, provider: string, status: string, n: number) => sql`
  insert into transactions (id, consumer_agent_id, provider_agent_id, consumer_account_id, service_id, service_revision, service_version,
    category, pricing, sla, status, input, units, list_price_cents, hold, initiated_at, max_delivery_attempts, metadata, created_at, updated_at)
  select gen_random_uuid(), ${consumer}, ${provider}, gen_random_uuid(), gen_random_uuid(), 1, '1.0.0', 'crypto', '{}', '{}', ${status}, '{}', 1, 100,
    'none', now(), 3, '{}', now(), now()
  from generate_series(1, ${n})`.execute(service.deps.db);

describe('the active-transactions limit (D9.6, issue 14)', () => {
  it('counts only the transactions in progress, through the indexes of those alone', async () => {
    const [consumer, provider, other] = [randomUUID(), randomUUID(), randomUUID()];
    // A long history: thousands of ended transactions of the provider, a few in progress.
    for (const status of TERMINAL_STATUSES) await seed(other, provider, status, 1_000);
    await seed(consumer, provider, 'funds_held', 3);
    await seed(other, provider, 'delivered', 2);
    await seed(consumer, other, 'negotiating', 1);
    await sql`analyze transactions`.execute(service.deps.db);

    const excluding = randomUUID();
    const counted = (await activeCounts(service.deps.db, { consumer, provider, excluding })).rows[0]!;
    expect(counted).toEqual({ c: 4, p: 5 });
    const query = activeCounts.bind(service.deps.db, { consumer, provider, excluding });
    const plan = JSON.stringify((await sql.raw(`explain (format json) ${query.sql}`).execute(service.deps.db).catch(async () => {
      // `explain` takes no parameters: the values written in, as the plan of a prepared statement would see them.
      const text = query.parameters.reduce<string>((t, v, i) => t.replaceAll(`$${i + 1}`, `'${String(v)}'`), query.sql);
      return sql.raw(`explain (format json) ${text.replace(/\$(\d+)/g, '$$$1')}`).execute(service.deps.db);
    })).rows);
    // Only the indexes of the transactions in progress: neither the table nor the parties' whole history.
    const indexes = [...plan.matchAll(/"Index Name":"([^"]+)"/g)].map((m) => m[1]);
    expect(indexes.length).toBeGreaterThan(0);
    expect(indexes.every((name) => name === 'transactions_active_consumer' || name === 'transactions_active_provider')).toBe(true);
    expect(plan).not.toContain('Seq Scan');
  });

  it('still refuses the hundred-and-first transaction in progress', async () => {
    const [consumer, provider] = [randomUUID(), randomUUID()];
    await seed(consumer, provider, 'settled', 150);
    await seed(consumer, provider, 'funds_held', 99);
    await service.deps.db.transaction().execute((trx) => checkActiveLimit(trx, { consumer, provider }, randomUUID()));
    await seed(randomUUID(), provider, 'delivered', 1);
    await expect(service.deps.db.transaction().execute((trx) => checkActiveLimit(trx, { consumer, provider }, randomUUID())))
      .rejects.toMatchObject({ entries: [{ code: 'LIMIT_REACHED', details: { limit: 100, party: 'provider' } }] });
  });
});
