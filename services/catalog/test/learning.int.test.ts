import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subjects, transactionOutcome, type MessageData } from '@aex/contracts';
import { loadConfig, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, eventually, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startCatalogService, type CatalogService } from '../src/index.js';
import { keepMostRecent, LEARNING_WEIGHTS } from '../src/domain/learned-lift.js';

// D22.2 on real Postgres and JetStream: the catalog's consumer of purchase outcomes keeps evidence
// once per purchase (its latest outcome), bounded per service by the same rule as the memory of
// every replica (`keepMostRecent`, here against its SQL), inert when worthless, and waits for agents
// it does not know yet. Agents and discover queries are written as the replica and discover write them.

let database: TestDatabase;
let bus: Bus;
let dispose: () => Promise<void>;
let catalog: CatalogService;
let sql: pg.Client;

beforeAll(async () => {
  database = await createTestDatabase();
  ({ bus, dispose } = await createTestBus('jetstream'));
  const config = loadConfig({}, { BUS_NAMESPACE: bus.namespace, DISCOVERY_MEANING: 'false' });
  catalog = await startCatalogService({ bus, databaseUrl: database.url, config, logger: testLogger() });
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
});
afterAll(async () => {
  await sql?.end();
  await catalog?.stop();
  await dispose?.();
  await database?.drop();
});

const NOW = Date.now();

async function agent(accountId: string = randomUUID()): Promise<{ agentId: string; accountId: string }> {
  const agentId = randomUUID();
  await sql.query(`insert into catalog.providers (agent_id, account_id, name, status, trust_score, source_at, trust_at) values ($1, $2, 'agent', 'active', 50, now(), now())`, [agentId, accountId]);
  return { agentId, accountId };
}

async function query(agentId: string, need: string): Promise<string> {
  const id = randomUUID();
  await sql.query(`insert into catalog.discovery_queries (id, agent_id, request, total_matches, results, scorer, created_at) values ($1, $2, $3, 0, '[]', 'test', $4)`, [id, agentId, JSON.stringify({ need }), new Date(NOW - 60_000)]);
  return id;
}

type Outcome = MessageData<typeof transactionOutcome>;

async function publish(data: Outcome): Promise<string> {
  const id = randomUUID();
  await bus.publish(subjects.event(bus.namespace, transactionOutcome.type), { id, type: transactionOutcome.type, occurredAt: data.at, data }, { msgId: id });
  return id;
}

const outcome = (over: Partial<Outcome> & Pick<Outcome, 'consumerAgentId' | 'providerAgentId' | 'serviceId' | 'queryId'>): Outcome => ({
  transactionId: randomUUID(), outcome: 'settled', qualityScore: 90, late: false, purchasedAt: new Date(NOW).toISOString(), at: new Date(NOW).toISOString(), ...over,
});

/** Waits until the learning consumer has applied every one of these messages. */
const applied = (ids: string[]) => eventually(async () => {
  const { rows } = await sql.query<{ n: number }>(`select count(*)::int as n from catalog.processed_messages where consumer = 'catalog-learning-outcomes' and message_id = any($1)`, [ids]);
  return rows[0]!.n === ids.length ? true : null;
}, 30_000, 50);

const evidenceOf = async (serviceId: string) => (await sql.query<{ transaction_id: string; outcome: string; ignored_reason: string | null }>(
  'select transaction_id, outcome, ignored_reason from catalog.learning_evidence where service_id = $1', [serviceId])).rows;

describe('the evidence kept (D22.2)', () => {
  it('keeps a service\'s newest pieces up to the bound, as keepMostRecent does, whatever order purchases end in', async () => {
    const seller = await agent();
    const serviceId = randomUUID();
    const n = LEARNING_WEIGHTS.maxPerService + 40;
    const buyers = await Promise.all(Array.from({ length: 8 }, () => agent()));
    const queries = await Promise.all(buyers.map((b) => query(b.agentId, 'when is high tide at Brest tomorrow')));
    // Two purchases ending at each moment (ties broken by id), published shuffled.
    const all = Array.from({ length: n }, (_, i) => outcome({
      consumerAgentId: buyers[i % 8]!.agentId, providerAgentId: seller.agentId, serviceId, queryId: queries[i % 8]!, at: new Date(NOW - Math.floor(i / 2) * 1000).toISOString(),
    }));
    const shuffled = all.map((o, i) => ({ o, k: (i * 7919) % n })).sort((a, b) => a.k - b.k).map((x) => x.o);
    await applied(await Promise.all(shuffled.map(publish)));

    const kept = await evidenceOf(serviceId);
    const expected = keepMostRecent(all.map((o) => ({ id: o.transactionId, endedAtMs: Date.parse(o.at) })));
    expect(kept.map((r) => r.transaction_id).sort()).toEqual(expected.map((e) => e.id).sort());
    await catalog.discovery.learning.catchUp();
    expect(catalog.discovery.learning.size).toBeGreaterThanOrEqual(LEARNING_WEIGHTS.maxPerService);
  });

  it('replaces a purchase\'s outcome with a later one, never with an earlier one', async () => {
    const [seller, b] = [await agent(), await agent()];
    const base = outcome({ consumerAgentId: b.agentId, providerAgentId: seller.agentId, serviceId: randomUUID(), queryId: await query(b.agentId, 'tide times at a harbour') });
    await applied([await publish(base)]);
    await applied([await publish({ ...base, outcome: 'dispute_lost', qualityScore: null, at: new Date(NOW + 60_000).toISOString() })]);
    await applied([await publish({ ...base, outcome: 'settled', at: new Date(NOW + 30_000).toISOString() })]);
    expect(await evidenceOf(base.serviceId!)).toEqual([{ transaction_id: base.transactionId, outcome: 'dispute_lost', ignored_reason: null }]);
  });

  it('keeps a worthless purchase inert, with why, out of every replica\'s ranking', async () => {
    const seller = await agent();
    const sibling = await agent(seller.accountId);
    const serviceId = randomUUID();
    const o = outcome({ consumerAgentId: sibling.agentId, providerAgentId: seller.agentId, serviceId, queryId: await query(sibling.agentId, 'tide times at a harbour') });
    await catalog.discovery.learning.catchUp();
    const before = catalog.discovery.learning.size;
    await applied([await publish(o)]);
    expect(await evidenceOf(serviceId)).toEqual([{ transaction_id: o.transactionId, outcome: 'settled', ignored_reason: 'own_account' }]);
    await catalog.discovery.learning.catchUp();
    expect(catalog.discovery.learning.size).toBe(before);
  });

  it('waits for a buyer the replica does not know yet, then judges its purchase', async () => {
    const seller = await agent();
    const late = { agentId: randomUUID(), accountId: randomUUID() };
    const o = outcome({ consumerAgentId: late.agentId, providerAgentId: seller.agentId, serviceId: randomUUID(), queryId: await query(late.agentId, 'tide times at a harbour') });
    const id = await publish(o);
    // Nothing is kept while the buyer's account is unknown: whose account bought decides whether it counts.
    await new Promise((r) => setTimeout(r, 300)); // a delivery or two of the message, which nothing else marks
    expect(await evidenceOf(o.serviceId!)).toEqual([]);
    await sql.query(`insert into catalog.providers (agent_id, account_id, name, status, trust_score, source_at, trust_at) values ($1, $2, 'late', 'active', 50, now(), now())`, [late.agentId, late.accountId]);
    await applied([id]);
    expect(await evidenceOf(o.serviceId!)).toEqual([{ transaction_id: o.transactionId, outcome: 'settled', ignored_reason: null }]);
  });
});
