import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TERMINAL_STATUSES } from '@aex/contracts';
import { connectServiceDb, loadConfig, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startTransactionService, type TransactionService } from '../src/index.js';
import { partyTotals } from '../src/purchases/repository.js';
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

/** Both parties' transactions in progress, as a creation reads them under their locks (`party_totals`). */
const countsIn = async (db: Kysely<Database>, consumer: string, provider: string) => {
  const t = await db.transaction().execute((trx) => partyTotals(trx, [consumer, provider], consumer, provider, null, null));
  return { c: t.consumerActive, p: t.providerActive };
};
const counts = (consumer: string, provider: string) => countsIn(service.deps.db, consumer, provider);

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
    // Counted from the running counts only: the transactions table is read for the spending alone.
    const { rows } = await sql<{ def: string }>`select pg_get_functiondef('party_totals'::regproc) as def`.execute(service.deps.db);
    const counting = rows[0]!.def.split('case when spent_since')[0]!;
    expect(counting).toContain('agent_activity');
    expect(counting).not.toContain('from transactions');
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
      // Each end holds its row locks a moment before committing, so that the forty overlap: a
      // deadlock needs two of them holding locks at once, which nothing can be awaited to arrange.
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
        const both = () => countsIn(migrated.db, consumer, provider);
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

  it('reads each party\'s count after its lock: of many creations at once only those under the limit commit (D9.6)', async () => {
    const [consumer, provider] = [randomUUID(), randomUUID()];
    await seed(consumer, provider, 'funds_held', 98);
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => service.deps.db.transaction().execute(async (trx) => {
      // As a creation does: the totals under the parties' locks, decided on, then its own row.
      const totals = await partyTotals(trx, [consumer, provider], consumer, provider, null, null);
      if (totals.consumerActive >= 100 || totals.providerActive >= 100) return 'limit reached';
      await seedOne(consumer, provider, trx);
      return 'created';
    })));
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(2);
    expect(outcomes.filter((o) => o === 'limit reached')).toHaveLength(6);
    expect(await counts(consumer, provider)).toEqual({ c: 100, p: 100 });
  });

  it('sums the consumer\'s spending of the last day: prices held, settling or settled since, and holds on their way, one transaction left out (D10.2)', async () => {
    const [consumer, provider] = [randomUUID(), randomUUID()];
    const at = (id: string, hold: string, price: number, heldAt: Date | null, pending = false) =>
      sql`update transactions set hold = ${hold}, ${sql.ref(pending ? 'pending_accept_price_cents' : 'agreed_price_cents')} = ${price}, funds_held_at = ${heldAt} where id = ${id}`.execute(service.deps.db);
    const now = new Date();
    const hourAgo = new Date(now.getTime() - 3_600_000);
    const [held, settling, settled, old, returned, requested, left] = await Promise.all(Array.from({ length: 7 }, () => seedOne(consumer, provider)));
    await at(held!, 'held', 100, hourAgo);
    await at(settling!, 'settling', 200, hourAgo);
    await at(settled!, 'settled', 400, hourAgo);
    await at(old!, 'settled', 800, new Date(now.getTime() - 2 * 86_400_000));
    await at(returned!, 'returned', 1600, hourAgo);
    await at(requested!, 'requested', 3200, null, true);
    await at(left!, 'held', 6400, hourAgo);
    const since = new Date(now.getTime() - 86_400_000);
    const totals = await service.deps.db.transaction().execute((trx) => partyTotals(trx, [consumer], consumer, null, since, left!));
    expect(totals.spentLast24hCents).toBe(100 + 200 + 400 + 3200);
    // Without a rule to check, nothing is summed.
    expect((await service.deps.db.transaction().execute((trx) => partyTotals(trx, [consumer], consumer, null, null, null))).spentLast24hCents).toBe(0);
  });
});
