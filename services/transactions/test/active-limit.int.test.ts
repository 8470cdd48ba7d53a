import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TERMINAL_STATUSES } from '@aex/contracts';
import { connectServiceDb, inTransaction, loadConfig, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startTransactionService, type TransactionService } from '../src/index.js';
import { activeCounts, checkActiveLimit, checkCreationLimits, lockAgents } from '../src/purchases/limits.js';
import type { Database } from '../src/db/schema.js';
import { database as database_, migrations } from '../src/db/migrations/index.js';
import type { Kysely } from 'kysely';

const setStatusIn = (trx: Kysely<Database>, id: string, status: string) => sql`update transactions set status = ${status} where id = ${id}`.execute(trx);

// D9.6: the active-transactions limit is counted from each agent's running counts of
// the transactions it started taking part in and of those that ended (migration 0007, kept by
// triggers of the transactions table), however long the parties' history.

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

/** One transaction in progress (`funds_held`), as a creation writes it before its limits; its id. */
const seedOne = async (consumer: string, provider: string, db: Kysely<Database> = service.deps.db, id: string = randomUUID()) => {
  await sql`insert into transactions (id, consumer_agent_id, provider_agent_id, consumer_account_id, service_id, service_revision, service_version,
      category, pricing, sla, status, input, units, list_price_cents, hold, initiated_at, max_delivery_attempts, metadata, created_at, updated_at)
    values (${id}, ${consumer}, ${provider}, gen_random_uuid(), gen_random_uuid(), 1, '1.0.0', 'crypto', '{}', '{}', 'funds_held', '{}', 1, 100,
      'none', now(), 3, '{}', now(), now())`.execute(db);
  return id;
};

const counts = async (consumer: string, provider: string) => (await activeCounts(service.deps.db, { consumer, provider })).rows[0]!;

describe('the active-transactions limit (D9.6)', () => {
  it('counts only the transactions in progress, from two rows per agent, not from the table', async () => {
    const [consumer, provider, other] = [randomUUID(), randomUUID(), randomUUID()];
    // A long history: thousands of ended transactions of the provider, a few in progress.
    for (const status of TERMINAL_STATUSES) await seed(other, provider, status, 1_000);
    await seed(consumer, provider, 'funds_held', 3);
    await seed(other, provider, 'delivered', 2);
    await seed(consumer, other, 'negotiating', 1);
    expect(await counts(consumer, provider)).toEqual({ c: 4, p: 5 });
    expect(await counts(randomUUID(), randomUUID())).toEqual({ c: 0, p: 0 });

    const query = activeCounts.bind(service.deps.db, { consumer, provider });
    // `explain` takes no parameters: the values written in, as the plan of a prepared statement would see them.
    const text = query.parameters.reduce<string>((t, v, i) => t.replaceAll(`$${i + 1}`, `'${String(v)}'`), query.sql);
    const plan = JSON.stringify((await sql.raw(`explain (format json) ${text}`).execute(service.deps.db)).rows);
    expect(plan).toContain('agent_activity');
    expect(plan).not.toContain('"Relation Name":"transactions"');
  });

  it('follows every change of status: an end counts once, a move between statuses in progress not at all', async () => {
    const [consumer, provider] = [randomUUID(), randomUUID()];
    const ids = await Promise.all(Array.from({ length: 6 }, () => seedOne(consumer, provider)));
    expect(await counts(consumer, provider)).toEqual({ c: 6, p: 6 });
    const setStatus = (id: string, status: string) => sql`update transactions set status = ${status} where id = ${id}`.execute(service.deps.db);
    await setStatus(ids[0]!, 'delivered');
    await setStatus(ids[0]!, 'disputed');
    expect(await counts(consumer, provider)).toEqual({ c: 6, p: 6 });
    // Each terminal status ends one; a later change of an ended one changes nothing.
    for (const [i, status] of TERMINAL_STATUSES.entries()) await setStatus(ids[i]!, status);
    expect(await counts(consumer, provider)).toEqual({ c: 2, p: 2 });
    await setStatus(ids[0]!, 'failed');
    await sql`update transactions set notes = 'kept' where id = ${ids[1]!}`.execute(service.deps.db);
    expect(await counts(consumer, provider)).toEqual({ c: 2, p: 2 });
    // A write undone is not counted.
    await service.deps.db.transaction().execute(async (trx) => {
      await seedOne(consumer, provider, trx);
      await setStatusIn(trx, ids[4]!, 'cancelled');
      throw new Error('undone');
    }).catch(() => undefined);
    expect(await counts(consumer, provider)).toEqual({ c: 2, p: 2 });
  });

  it('ends what the triggers count exactly at the spec\'s terminal statuses', async () => {
    const { rows } = await sql<{ def: string }>`select pg_get_triggerdef(oid) as def from pg_trigger where tgname in ('transactions_started', 'transactions_ended')`.execute(service.deps.db);
    expect(rows).toHaveLength(2);
    for (const { def } of rows) for (const status of TERMINAL_STATUSES) expect(def).toContain(`'${status}'`);
  });

  it('two ends at once of transactions between the same agents in opposite roles do not deadlock', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const ab = await Promise.all(Array.from({ length: 20 }, () => seedOne(a, b)));
    const ba = await Promise.all(Array.from({ length: 20 }, () => seedOne(b, a)));
    await Promise.all(ab.flatMap((x, i) => [x, ba[i]!]).map((id) => service.deps.db.transaction().execute(async (trx) => {
      await setStatusIn(trx, id, 'settled');
      await new Promise((r) => setTimeout(r, 5));
    })));
    expect(await counts(a, b)).toEqual({ c: 0, p: 0 });
  });

  it('counts, on upgrade, the transactions a database already had in progress (migration 0007)', async () => {
    const earlier = await createTestDatabase();
    try {
      const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < '0007'));
      const old = await connectServiceDb<Database>({ url: earlier.url, schema: database_.schema, migrations: before });
      const [consumer, provider, other] = [randomUUID(), randomUUID(), randomUUID()];
      try {
        for (const status of TERMINAL_STATUSES) await seed(consumer, provider, status, 3, old.db);
        await seed(consumer, provider, 'funds_held', 4, old.db);
        await seed(other, provider, 'negotiating', 2, old.db);
        await seed(provider, other, 'delivered', 1, old.db);
      } finally {
        await old.close();
      }
      const migrated = await connectServiceDb<Database>({ url: earlier.url, schema: database_.schema, migrations });
      try {
        const both = async () => (await activeCounts(migrated.db, { consumer, provider })).rows[0]!;
        expect(await both()).toEqual({ c: 4, p: 7 });
        // And kept from then on: one of those in progress ends.
        await sql`update transactions set status = 'settled' where id = (select id from transactions where consumer_agent_id = ${consumer} and status = 'funds_held' limit 1)`.execute(migrated.db);
        expect(await both()).toEqual({ c: 3, p: 6 });
        // The partial indexes it replaces are gone: a change of status alone can be a heap-only update.
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_indexes where schemaname = ${database_.schema} and indexname like 'transactions_active_%'`.execute(migrated.db);
        expect(rows[0]!.n).toBe(0);
      } finally {
        await migrated.close();
      }
    } finally {
      await earlier.drop();
    }
  });

  it('still refuses the hundred-and-first transaction in progress (the one being created counted)', async () => {
    const [consumer, provider] = [randomUUID(), randomUUID()];
    await seed(consumer, provider, 'settled', 150);
    await seed(consumer, provider, 'funds_held', 100);
    await service.deps.db.transaction().execute((trx) => checkActiveLimit(trx, { consumer, provider }, 100));
    await seed(randomUUID(), provider, 'delivered', 1);
    await expect(service.deps.db.transaction().execute((trx) => checkActiveLimit(trx, { consumer, provider }, 100)))
      .rejects.toMatchObject({ entries: [{ code: 'LIMIT_REACHED', details: { limit: 100, party: 'provider' } }] });
  });

  describe('counted by the statement written before the commit when nothing is decided after it', () => {
    const attempt = (consumer: string, provider: string) => ({ consumerAgentId: consumer, providerAgentId: provider, category: 'crypto', priceCents: 100, now: new Date(), excluding: randomUUID(), activeLimit: 100 });

    /** Runs `checkCreationLimits` as a creation does (`inTransaction`), then `after`; how many times the step ran. */
    async function create(consumer: string, provider: string, rules: Parameters<typeof checkCreationLimits>[2], after?: (trx: Kysely<Database>) => Promise<void>) {
      let runs = 0;
      const own = randomUUID();
      const outcome = await inTransaction(service.deps.db, async (trx, work) => {
        runs++;
        // What the creation writes before its limits: its own transaction, in progress.
        await seedOne(consumer, provider, trx, own);
        await checkCreationLimits(trx, work, rules, { ...attempt(consumer, provider), excluding: own });
        await after?.(trx);
      }).then(() => 'created', (err: unknown) => err);
      const written = await service.deps.db.selectFrom('transactions').select('id').where('id', '=', own).execute();
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
      // The 101st written after the check returned: counted at the commit, so the step runs again,
      // counting at once this time (100 with its own, before the later write), and commits.
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
      const outcomes = await Promise.all(Array.from({ length: 8 }, () => inTransaction(service.deps.db, async (trx, work) => {
        // As a creation does: the parties' locks, its own row in progress, then the limits.
        await lockAgents(trx, [consumer, provider]);
        const id = await seedOne(consumer, provider, trx);
        // The rest of a creation's work before its commit, so that the creations overlap.
        await new Promise((r) => setTimeout(r, 50));
        await checkCreationLimits(trx, work, {}, { ...attempt(consumer, provider), excluding: id });
      }).then(() => 'created', (err: { entries?: Array<{ code: string }> }) => err.entries?.[0]?.code ?? String(err))));
      expect(outcomes.filter((o) => o === 'created')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'LIMIT_REACHED')).toHaveLength(7);
      expect((await counts(consumer, provider)).c).toBe(100);
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
