import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogOps, events, identityOps, subjects, type MessageDef, type Principal, type Static } from '@aex/contracts';
import { callOrThrow, loadConfig, metrics, type Bus, type ExchangeConfig } from '@aex/platform';
import { createTestBus, createTestDatabase, eventually, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startIdentityService, type IdentityService } from '@aex/identity';
import { startWalletService, type WalletService } from '@aex/wallet';
import { startCatalogService, type CatalogService } from '../src/index.js';
import { compositeRank, compositeRankSql } from '../src/domain/rank.js';
import { PostgresLexicon } from '../src/discovery/lexicon.js';
import { pruneDiscoveryQueries, QUERY_RETENTION_MS } from '../src/discovery/retention.js';

// The catalog on real Postgres and JetStream: its provider replica fed by identity's events, the
// discovery index's change feed under interleaved transactions, and the SQL side of its formulas.

let database: TestDatabase;
let bus: Bus;
let dispose: () => Promise<void>;
let config: ExchangeConfig;
let identity: IdentityService;
let wallet: WalletService;
let catalog: CatalogService;
let sql: pg.Client;

beforeAll(async () => {
  database = await createTestDatabase();
  ({ bus, dispose } = await createTestBus('jetstream'));
  config = loadConfig({}, { BUS_NAMESPACE: bus.namespace });
  const deps = { bus, databaseUrl: database.url, config, logger: testLogger() };
  identity = await startIdentityService(deps);
  wallet = await startWalletService(deps);
  catalog = await startCatalogService(deps);
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
});
afterAll(async () => {
  await sql?.end();
  await catalog?.stop();
  await wallet?.stop();
  await identity?.stop();
  await dispose?.();
  await database?.drop();
});

const ctx = (principal: Principal | null) => ({ requestId: randomUUID(), principal });

async function publish<M extends MessageDef>(def: M, data: Static<M['data']>, occurredAt: Date, id = randomUUID()): Promise<string> {
  await bus.publish(subjects.event(bus.namespace, def.type), { id, type: def.type, occurredAt: occurredAt.toISOString(), data }, { msgId: id });
  return id;
}

/** Messages the consumer `durable` of this process found applied already (its `repeat` count, docs/metrics.md). */
async function repeatsOf(durable: string): Promise<number> {
  const line = (await metrics.render()).split('\n').find((l) => l.startsWith(`aex_messages_processed_total{consumer="${durable}",outcome="repeat"} `));
  return Number(line?.split(' ')[1] ?? 0);
}

const provider = async (agentId: string) => (await sql.query('select name, status, trust_score from catalog.providers where agent_id = $1', [agentId])).rows[0] as { name: string; status: string; trust_score: number } | undefined;

function contract(name: string) {
  return {
    name, description: `${name} does useful work for agents.`, version: '1.0.0', category: 'tests',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, outputSchema: { type: 'object' },
    pricing: { model: 'fixed' as const, basePriceCents: 10 }, sla: { maxLatencyMs: 100, timeoutMs: 1000 },
  };
}

async function signUp(): Promise<Principal> {
  const account = await callOrThrow(bus, identityOps.createAccount, {
    ctx: ctx(null),
    input: { path: {}, query: {}, body: { accountType: 'individual', email: `${randomUUID()}@example.com`, displayName: 'P', agent: { name: 'maker' } } },
  }, 10_000);
  return { agentId: account.agent.id, accountId: account.id, isOwner: true, status: 'active', parentAgentId: null, signingKeyPublic: null };
}

describe('provider replica from identity events (outbox → JetStream → idempotent consumer)', () => {
  it('follows identity: a new agent appears with its name and starting trust, a deactivation is seen', async () => {
    const p = await signUp();
    await eventually(async () => (await provider(p.agentId))?.trust_score === 50);
    expect(await provider(p.agentId)).toEqual({ name: 'maker', status: 'active', trust_score: 50 });
    await callOrThrow(bus, identityOps.suspendAgent, { ctx: { ...ctx(null), admin: true }, input: { path: { agentId: p.agentId }, query: {}, body: {} } }, 5000);
    await expect.poll(async () => (await provider(p.agentId))?.status, { timeout: 5000 }).toBe('deactivated');
  });

  it('applies facts in the order they were true, whatever order they arrive in; leaving active is final', async () => {
    const agentId = randomUUID();
    const accountId = randomUUID();
    const facts = { agentId, accountId, parentAgentId: null };
    const t0 = new Date(Date.now() - 10_000);
    const at = (s: number) => new Date(t0.getTime() + s * 1000);
    await publish(events.agentUpdated, { ...facts, name: 'second', status: 'active' }, at(2));
    await publish(events.agentCreated, { ...facts, name: 'first', status: 'active', trustScore: 50 }, at(0));
    await eventually(async () => (await provider(agentId))?.name === 'second');
    await publish(events.agentStatusChanged, { ...facts, name: 'second', status: 'deactivated', previousStatus: 'active' }, at(3));
    await eventually(async () => (await provider(agentId))?.status === 'deactivated');
    await publish(events.agentUpdated, { ...facts, name: 'third', status: 'active' }, at(4));
    await eventually(async () => (await provider(agentId))?.name === 'third');
    expect((await provider(agentId))!.status).toBe('deactivated');
  });

  it('keeps the newest trust score (D15.2) and applies a redelivered event once', async () => {
    const p = await signUp();
    await eventually(async () => (await provider(p.agentId)) !== undefined);
    const now = Date.now();
    const id = await publish(events.trustScoreChanged, { agentId: p.agentId, trustScore: 80, previousTrustScore: 50 }, new Date(now + 2000));
    await publish(events.trustScoreChanged, { agentId: p.agentId, trustScore: 60, previousTrustScore: 50 }, new Date(now + 1000));
    await eventually(async () => (await provider(p.agentId))?.trust_score === 80);
    const repeatsBefore = await repeatsOf('catalog-agent-trust');
    // The same message again (a redelivery past the dedupe window) changes nothing.
    await bus.publish(subjects.event(bus.namespace, events.trustScoreChanged.type), { id, type: events.trustScoreChanged.type, occurredAt: new Date(now + 3000).toISOString(), data: { agentId: p.agentId, trustScore: 10, previousTrustScore: 80 } }, { msgId: randomUUID() });
    // Handled as a repeat (the consumer counts it so), it changed nothing.
    await expect.poll(() => repeatsOf('catalog-agent-trust'), { timeout: 5000 }).toBeGreaterThan(repeatsBefore);
    expect((await provider(p.agentId))!.trust_score).toBe(80);
    // Listing and discovery use it.
    const s = await callOrThrow(bus, catalogOps.createService, { ctx: ctx(p), input: { path: {}, query: {}, body: contract('Trusted thing') } }, 5000);
    const list = await callOrThrow(bus, catalogOps.listServices, { ctx: ctx(p), input: { path: {}, query: { minTrustScore: 80 }, body: {} } }, 5000);
    expect(list.map((x) => [x.id, x.trustScore])).toEqual([[s.id, 80]]);
  });

  it('asks identity about a provider whose agent.created event has not arrived yet', async () => {
    const p = await signUp();
    await eventually(async () => (await provider(p.agentId)) !== undefined);
    await sql.query('delete from catalog.providers where agent_id = $1', [p.agentId]);
    const s = await callOrThrow(bus, catalogOps.createService, { ctx: ctx(p), input: { path: {}, query: {}, body: contract('Early bird') } }, 5000);
    expect(s.agentId).toBe(p.agentId);
    expect(await provider(p.agentId)).toEqual({ name: 'maker', status: 'active', trust_score: 50 });
  });
});

describe('discovery index change feed', () => {
  it('never skips a commit: a transaction that commits after a later one is still picked up', async () => {
    const p = await signUp();
    const other = await signUp();
    await eventually(async () => (await provider(p.agentId)) !== undefined && (await provider(other.agentId)) !== undefined);
    const index = catalog.discovery.index;
    // T1 writes a service (of another provider: a registration locks its provider row) and stays open…
    const slow = new pg.Client({ connectionString: database.url });
    await slow.connect();
    const slowId = randomUUID();
    try {
      await slow.query('begin');
      await slow.query(
        `insert into catalog.services (id, agent_id, name, description, version, category, tags, input_schema, output_schema, pricing, sla, capabilities, examples, metadata, status, revision, price_cents, budget_floor_cents, max_latency_ms, text_a, text_b, text_c, text_d, text_e, created_at, updated_at)
         values ($1, $2, 'Slow writer', 'written in a long transaction', '1.0.0', 'tests', '{}', '{}', '{}', '{"model":"fixed","basePriceCents":1}', '{"maxLatencyMs":1,"timeoutMs":1}', '[]', '[]', '{}', 'active', 1, 1, 1, 1, 'Slow writer', '', '', '', '', now(), now())`,
        [slowId, other.agentId],
      );
      // …while T2 commits through the catalog and the index catches up with it.
      const fast = await callOrThrow(bus, catalogOps.createService, { ctx: ctx(p), input: { path: {}, query: {}, body: contract('Fast writer') } }, 5000);
      await index.refresh();
      await eventually(async () => index.services.has(fast.id));
      expect(index.services.has(slowId)).toBe(false);
      await slow.query('commit');
    } finally {
      await slow.end();
    }
    await expect.poll(() => index.services.has(slowId), { timeout: 5000 }).toBe(true);
  });

  it('drops paused and deleted services and keeps provider status and trust current', async () => {
    const p = await signUp();
    await eventually(async () => (await provider(p.agentId)) !== undefined);
    const s = await callOrThrow(bus, catalogOps.createService, { ctx: ctx(p), input: { path: {}, query: {}, body: contract('Short lived') } }, 5000);
    const index = catalog.discovery.index;
    const indexed = () => expect.poll(() => index.services.has(s.id), { timeout: 5000 });
    await indexed().toBe(true);
    await callOrThrow(bus, catalogOps.updateService, { ctx: ctx(p), input: { path: { serviceId: s.id }, query: {}, body: { status: 'paused' } } }, 5000);
    await indexed().toBe(false);
    await callOrThrow(bus, catalogOps.updateService, { ctx: ctx(p), input: { path: { serviceId: s.id }, query: {}, body: { status: 'active' } } }, 5000);
    await indexed().toBe(true);
    await callOrThrow(bus, catalogOps.deleteService, { ctx: ctx(p), input: { path: { serviceId: s.id }, query: {}, body: {} } }, 5000);
    await indexed().toBe(false);
    await publish(events.trustScoreChanged, { agentId: p.agentId, trustScore: 91, previousTrustScore: 50 }, new Date());
    await expect.poll(() => index.providers.get(p.agentId)?.trustScore, { timeout: 5000 }).toBe(91);
  });
});

describe('formulas in SQL match their TypeScript', () => {
  it('composite_rank (D7.5), scaled by the provider\'s liveness (D22.3)', async () => {
    const cases = [[50, 1, 1, 1], [0, 1_000_000, 86_400_000, 1], [100, 250, 1500, 0.6364], [73, 99_999, 42, 0], [88, 150, 2000, 0.5]];
    for (const [trust, price, latency, liveness] of cases) {
      const { rows } = await sql.query(`select ${compositeRankSql().compile(catalog.deps.db).sql} as r from (select $1::int as trust_score, $4::float8 as liveness) p, (select $2::int as price_cents, $3::int as max_latency_ms) s`, [trust, price, latency, liveness]);
      expect(Number(rows[0].r)).toBeCloseTo(compositeRank({ trustScore: trust!, priceCents: price!, maxLatencyMs: latency!, liveness: liveness! }), 9);
    }
  });
});

describe('PostgresLexicon', () => {
  const lexicon = () => new PostgresLexicon(catalog.deps.db);
  it('stems like the documents are indexed; stop words have no stem', async () => {
    const stems = await lexicon().stems(['translations', 'translating', 'the', 'state-of-the-art']);
    expect(stems.get('translations')).toBe('translat');
    expect(stems.get('translating')).toBe('translat');
    expect(stems.get('the')).toBeNull();
    expect(stems.get('state-of-the-art')).toBeNull();
  });
  it('corrects by trigram neighbourhood and edit distance against the vocabulary', async () => {
    await sql.query("insert into catalog.vocabulary (word) values ('translates'), ('transcribes'), ('weather') on conflict do nothing");
    expect((await lexicon().corrections('tranlsates', 2))[0]).toEqual({ word: 'translates', edits: 1 });
    expect((await lexicon().corrections('wether', 1))[0]).toEqual({ word: 'weather', edits: 1 });
    expect(await lexicon().corrections('zzzzzz', 1)).toEqual([]);
  });
});

describe('stored discovery queries (D8.5)', () => {
  it('are kept for the retention period, then pruned', async () => {
    const p = await signUp();
    const fresh = await callOrThrow(bus, catalogOps.discover, { ctx: ctx(p), input: { path: {}, query: {}, body: { need: 'anything' } } }, 5000);
    const oldId = randomUUID();
    await sql.query(`insert into catalog.discovery_queries (id, agent_id, request, total_matches, results, scorer, created_at)
      values ($1, $2, '{}', 0, '[]', 'x', now() - interval '31 days')`, [oldId, p.agentId]);
    expect(await pruneDiscoveryQueries(catalog.deps.db, new Date(Date.now() - QUERY_RETENTION_MS))).toBe(1);
    const { rows } = await sql.query('select id from catalog.discovery_queries where id = any($1::uuid[])', [[fresh.queryId, oldId]]);
    expect(rows.map((r) => r.id)).toEqual([fresh.queryId]);
  });
});
