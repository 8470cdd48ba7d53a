import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TERMINAL_STATUSES } from '@aex/contracts';
import { inTransaction, loadConfig, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startTransactionService, type TransactionService } from '../src/index.js';
import { activeCounts, checkActiveLimit, checkCreationLimits, lockAgents } from '../src/transactions/rules.js';
import type { Database } from '../src/db/schema.js';
import type { Kysely } from 'kysely';

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
const seed = (consumer: string, provider: string, status: string, n: number, db: Kysely<Database> = service.deps.db) => sql`
  insert into transactions (id, consumer_agent_id, provider_agent_id, consumer_account_id, service_id, service_revision, service_version,
    category, pricing, sla, status, input, units, list_price_cents, hold, initiated_at, max_delivery_attempts, metadata, created_at, updated_at)
  select gen_random_uuid(), ${consumer}, ${provider}, gen_random_uuid(), gen_random_uuid(), 1, '1.0.0', 'crypto', '{}', '{}', ${status}, '{}', 1, 100,
    'none', now(), 3, '{}', now(), now()
  from generate_series(1, ${n})`.execute(db);

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

  describe('counted by the statement written before the commit when nothing is decided after it (issue 14)', () => {
    const attempt = (consumer: string, provider: string) => ({ consumerAgentId: consumer, providerAgentId: provider, category: 'crypto', priceCents: 100, now: new Date(), excluding: randomUUID() });

    /** Runs `checkCreationLimits` as a creation does (`inTransaction`), then `after`; how many times the step ran. */
    async function create(consumer: string, provider: string, rules: Parameters<typeof checkCreationLimits>[1], after?: (trx: Kysely<Database>) => Promise<void>) {
      let runs = 0;
      const marker = randomUUID();
      const outcome = await inTransaction(service.deps.db, async (trx) => {
        runs++;
        // What the creation writes before its limits: an ended transaction of an agent of its own.
        await seed(marker, randomUUID(), 'settled', 1, trx);
        await checkCreationLimits(trx, rules, attempt(consumer, provider));
        await after?.(trx);
      }).then(() => 'created', (err: unknown) => err);
      const written = await service.deps.db.selectFrom('transactions').select('id').where('consumerAgentId', '=', marker).execute();
      return { runs, outcome, written: written.length };
    }

    it('under the limit: one run, the count made with the commit', async () => {
      const [consumer, provider] = [randomUUID(), randomUUID()];
      await seed(consumer, provider, 'funds_held', 99);
      expect(await create(consumer, provider, {})).toEqual({ runs: 1, outcome: 'created', written: 1 });
    });

    it('counts what the transaction wrote after the check: the count is the statement before the commit', async () => {
      const [consumer, provider] = [randomUUID(), randomUUID()];
      await seed(consumer, provider, 'funds_held', 99);
      // The 100th written after the check returned: counted at the commit, so the step runs again,
      // counting at once this time (99, before its own write), and commits.
      const r = await create(consumer, provider, {}, (trx) => seed(randomUUID(), provider, 'delivered', 1, trx).then(() => undefined));
      expect(r).toEqual({ runs: 2, outcome: 'created', written: 1 });
    });

    it('at the limit: 409 LIMIT_REACHED with its details, nothing written', async () => {
      const [consumer, provider] = [randomUUID(), randomUUID()];
      await seed(consumer, provider, 'funds_held', 100);
      const r = await create(consumer, provider, {});
      expect(r.runs).toBe(2);
      expect(r.written).toBe(0);
      expect(r.outcome).toMatchObject({ entries: [{ code: 'LIMIT_REACHED', details: { limit: 100, party: 'consumer' } }] });
    });

    it('lets exactly one of many creations at once take the last place: the count is taken after the parties\' locks', async () => {
      const [consumer, provider] = [randomUUID(), randomUUID()];
      await seed(consumer, provider, 'funds_held', 99);
      const outcomes = await Promise.all(Array.from({ length: 8 }, () => inTransaction(service.deps.db, async (trx) => {
        // As a creation does: the parties' locks, its own row in progress, then the limits.
        await lockAgents(trx, [consumer, provider]);
        const id = randomUUID();
        await sql`insert into transactions (id, consumer_agent_id, provider_agent_id, consumer_account_id, service_id, service_revision, service_version,
            category, pricing, sla, status, input, units, list_price_cents, hold, initiated_at, max_delivery_attempts, metadata, created_at, updated_at)
          values (${id}, ${consumer}, ${provider}, gen_random_uuid(), gen_random_uuid(), 1, '1.0.0', 'crypto', '{}', '{}', 'funds_held', '{}', 1, 100,
            'none', now(), 3, '{}', now(), now())`.execute(trx);
        // The rest of a creation's work before its commit, so that the creations overlap.
        await new Promise((r) => setTimeout(r, 50));
        await checkCreationLimits(trx, {}, { ...attempt(consumer, provider), excluding: id });
      }).then(() => 'created', (err: { entries?: Array<{ code: string }> }) => err.entries?.[0]?.code ?? String(err))));
      expect(outcomes.filter((o) => o === 'created')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'LIMIT_REACHED')).toHaveLength(7);
      const { c } = (await activeCounts(service.deps.db, { consumer, provider, excluding: randomUUID() })).rows[0]!;
      expect(c).toBe(100);
    });

    it('with a spending rule to read, counted at once, before the rules are applied (the order of the errors kept)', async () => {
      const [consumer, provider] = [randomUUID(), randomUUID()];
      await seed(consumer, provider, 'funds_held', 100);
      // Both the limit and the daily spend are passed: the limit is the error, as before.
      const r = await create(consumer, provider, { maxDailySpendCents: 1 });
      expect(r).toMatchObject({ runs: 1, written: 0, outcome: { entries: [{ code: 'LIMIT_REACHED' }] } });
      // A per-transaction cap refusing the price: the limit is still decided first.
      const capped = await create(consumer, provider, { maxTransactionCents: 1 });
      expect(capped).toMatchObject({ runs: 1, written: 0, outcome: { entries: [{ code: 'LIMIT_REACHED' }] } });
      // Under the limit, the rule refuses.
      const [c2, p2] = [randomUUID(), randomUUID()];
      const refused = await create(c2, p2, { maxDailySpendCents: 1 });
      expect(refused).toMatchObject({ runs: 1, written: 0, outcome: { entries: [{ code: 'DELEGATION_EXCEEDED' }] } });
    });
  });
});
