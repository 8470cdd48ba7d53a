/**
 * `pnpm bench:discovery` (issue #3): discovery quality on the labelled evaluation set against a
 * keyword-only baseline measured in the same run, then discover and list latency through the
 * gateway with 10,000 services. Everything is real: Postgres, NATS JetStream, every service, HTTP.
 *
 *   pnpm bench:discovery                 quality + speed
 *   pnpm bench:discovery --quality       quality only
 *   pnpm bench:discovery --services 2000 speed with another catalog size
 */
import pg from 'pg';
import { ExchangeClient, unwrap } from '@aex/client';
import type { CreateServiceBody, DiscoverBody, ListServicesQuery } from '@aex/contracts';
import { loadConfig } from '@aex/platform';
import { createTestBus, createTestDatabase, testLogger } from '@aex/platform/testing';
import { startStack } from '@aex/stack';
import { EVAL_QUERIES, type EvalQuery } from './eval-queries.js';
import { EVAL_SERVICES, type EvalService } from './eval-services.js';

const args = process.argv.slice(2);
const qualityOnly = args.includes('--quality');
const serviceCount = Number(args[args.indexOf('--services') + 1] ?? 10_000) || 10_000;
const TARGETS = { recallAt1: 0.75, recallAt3: 0.9, p95Ms: 50 };

const db = await createTestDatabase();
const { bus, dispose } = await createTestBus('jetstream');
const unlimited = '1000000';
const config = loadConfig({}, {
  PAYMENTS_PROVIDER: 'sandbox', BUS_NAMESPACE: bus.namespace, LOG_LEVEL: 'silent',
  RATE_LIMIT_READ_PER_MIN: unlimited, RATE_LIMIT_WRITE_PER_MIN: unlimited, RATE_LIMIT_DISCOVERY_PER_MIN: unlimited, RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP: unlimited,
});
const stack = await startStack({ bus, databaseUrl: db.url, config, logger: testLogger() });
const url = await stack.gateway.listen({ host: '127.0.0.1', port: 0 });
const anon = new ExchangeClient({ baseUrl: url });
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();

try {
  const ids = await registerEvalCatalog();
  await quality(ids);
  if (!qualityOnly) await speed();
} finally {
  await sql.end();
  await stack.stop();
  await dispose();
  if (args.includes('--keep')) console.log(`kept database ${db.url}`);
  else await db.drop();
}

// ---------------------------------------------------------------------------------------------

async function provider(i: number): Promise<ExchangeClient> {
  const account = unwrap(await anon.createAccount({ accountType: 'organization', email: `bench-${i}-${Date.now()}@example.com`, displayName: `Provider ${i}`, agent: { name: `provider-${i}` } }));
  return anon.as({ apiKey: account.apiKey });
}

function contract(s: EvalService, suffix = ''): CreateServiceBody {
  const props = (fields: Record<string, string>) => {
    const properties: Record<string, unknown> = {};
    const required: string[] = [];
    for (const [rawName, spec] of Object.entries(fields)) {
      const name = rawName.replace(/^\?/, '');
      const [type, ...desc] = spec.split(':');
      properties[name] = { type: type!.trim(), ...(desc.length ? { description: desc.join(':').trim() } : {}) };
      if (!rawName.startsWith('?')) required.push(name);
    }
    return { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties, required };
  };
  return {
    name: s.name + suffix,
    description: s.description,
    version: '1.0.0',
    category: s.category,
    tags: s.tags,
    inputSchema: props(s.input),
    outputSchema: props(s.output),
    pricing: { model: 'fixed', basePriceCents: s.priceCents },
    sla: { maxLatencyMs: s.latencyMs, timeoutMs: s.latencyMs * 4 },
  };
}

async function registerEvalCatalog(): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  const providers = await Promise.all([0, 1, 2, 3].map(provider));
  await Promise.all(EVAL_SERVICES.map(async (s, i) => {
    const created = unwrap(await providers[i % providers.length]!.createService(contract(s)));
    ids.set(s.key, created.id);
  }));
  await waitForIndex(EVAL_SERVICES.length);
  return ids;
}

async function waitForIndex(n: number): Promise<void> {
  const started = Date.now();
  while (stack.catalog.discovery.index.services.size < n) {
    if (Date.now() - started > 60_000) throw new Error(`discovery index holds ${stack.catalog.discovery.index.services.size} of ${n} services`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// --- quality ---------------------------------------------------------------------------------

interface Ranking {
  recallAt1: number;
  recallAt3: number;
  ndcg10: number;
}

async function quality(ids: Map<string, string>): Promise<void> {
  const keyOf = new Map([...ids].map(([k, id]) => [id, k]));
  const client = await provider(999);
  const overlap = await sharedWords();
  const rows: { query: EvalQuery; exchange: string[]; baseline: string[]; shares: boolean }[] = [];
  for (const query of EVAL_QUERIES) {
    const found = unwrap(await client.discover({ need: query.need, limit: 10 }));
    rows.push({
      query,
      exchange: found.matches.map((m) => keyOf.get(m.serviceId)!),
      baseline: await keywordBaseline(query.need, keyOf),
      shares: overlap.get(query.need)!,
    });
  }
  const subsets: [string, typeof rows][] = [
    ['all queries', rows],
    ['sharing no word with the right service', rows.filter((r) => !r.shares)],
    ['with typos', rows.filter((r) => r.query.typo)],
  ];
  console.log(`\nDiscovery quality — ${EVAL_SERVICES.length} services in ${new Set(EVAL_SERVICES.map((s) => s.category)).size} categories, ${EVAL_QUERIES.length} queries`);
  console.log('subset                                   n    recall@1        recall@3        nDCG@10');
  console.log('                                              exch.  kw      exch.  kw       exch.  kw');
  for (const [name, subset] of subsets) {
    const ex = metrics(subset.map((r) => [r.query, r.exchange]));
    const kw = metrics(subset.map((r) => [r.query, r.baseline]));
    console.log(`${name.padEnd(40)} ${String(subset.length).padStart(3)}   ${f(ex.recallAt1)}  ${f(kw.recallAt1)}    ${f(ex.recallAt3)}  ${f(kw.recallAt3)}     ${f(ex.ndcg10)}  ${f(kw.ndcg10)}`);
  }
  const all = metrics(rows.map((r) => [r.query, r.exchange]));
  const base = metrics(rows.map((r) => [r.query, r.baseline]));
  console.log(`ratio exchange / keyword baseline: recall@1 ×${ratio(all.recallAt1, base.recallAt1)}, recall@3 ×${ratio(all.recallAt3, base.recallAt3)}, nDCG@10 ×${ratio(all.ndcg10, base.ndcg10)}`);
  console.log(`targets: recall@3 ≥ ${TARGETS.recallAt3} ${all.recallAt3 >= TARGETS.recallAt3 ? 'met' : 'MISSED'}; recall@1 ≥ ${TARGETS.recallAt1} ${all.recallAt1 >= TARGETS.recallAt1 ? 'met' : 'MISSED'}`);
  const misses = rows.filter((r) => !r.query.relevant.includes(r.exchange[0] ?? ''));
  if (misses.length && args.includes('--misses')) {
    console.log('\nqueries whose first match is not a right service:');
    for (const m of misses) {
      const rank = m.exchange.findIndex((k) => m.query.relevant.includes(k)) + 1;
      console.log(`  "${m.query.need}" → ${m.exchange.slice(0, 3).join(', ') || '(nothing)'}  (want ${m.query.relevant.join(', ')}, at ${rank || '>10'})`);
    }
  }
}

function metrics(results: [EvalQuery, string[]][]): Ranking {
  let r1 = 0;
  let r3 = 0;
  let ndcg = 0;
  for (const [q, ranked] of results) {
    if (q.relevant.includes(ranked[0] ?? '')) r1 += 1;
    if (ranked.slice(0, 3).some((k) => q.relevant.includes(k))) r3 += 1;
    const gain = (k: string) => (q.relevant.includes(k) ? 2 : q.related?.includes(k) ? 1 : 0);
    const dcg = ranked.slice(0, 10).reduce((s, k, i) => s + (2 ** gain(k) - 1) / Math.log2(i + 2), 0);
    const ideal = [...q.relevant.map(() => 2), ...(q.related ?? []).map(() => 1)].slice(0, 10).reduce((s, g, i) => s + (2 ** g - 1) / Math.log2(i + 2), 0);
    ndcg += ideal ? dcg / ideal : 0;
  }
  const n = Math.max(1, results.length);
  return { recallAt1: r1 / n, recallAt3: r3 / n, ndcg10: ndcg / n };
}

/**
 * The keyword-only baseline: what plain Postgres full-text search gives on the same documents —
 * the need's words (stemmed, any of them) ranked by `ts_rank_cd` over the same weighted `tsvector`.
 */
async function keywordBaseline(need: string, keyOf: Map<string, string>): Promise<string[]> {
  const { rows } = await sql.query<{ id: string }>(
    `with q as (select replace(plainto_tsquery('english', $1)::text, '&', '|')::tsquery as q)
     select s.id from catalog.services s, q where s.status = 'active' and s.search_doc @@ q.q
     order by ts_rank_cd(s.search_doc, q.q) desc, s.id limit 10`,
    [need],
  );
  return rows.map((r) => keyOf.get(r.id)).filter((k): k is string => k !== undefined);
}

/** Whether each query shares a stemmed word with any of its right services (the same stemming as the index). */
async function sharedWords(): Promise<Map<string, boolean>> {
  const out = new Map<string, boolean>();
  for (const q of EVAL_QUERIES) {
    const { rows } = await sql.query<{ shares: boolean }>(
      `select exists (
         select 1 from catalog.services s
         where s.name = any($2::text[]) and s.search_doc @@ replace(plainto_tsquery('english', $1)::text, '&', '|')::tsquery
       ) as shares`,
      [q.need, q.relevant.map((k) => EVAL_SERVICES.find((s) => s.key === k)!.name)],
    );
    out.set(q.need, rows[0]!.shares);
  }
  return out;
}

// --- speed -----------------------------------------------------------------------------------

async function speed(): Promise<void> {
  const extra = serviceCount - EVAL_SERVICES.length;
  const perProvider = config.MAX_SERVICES_PER_AGENT;
  console.log(`\nSeeding ${serviceCount} services (${Math.ceil(extra / perProvider)} more providers) through the gateway…`);
  const started = Date.now();
  const providers: ExchangeClient[] = [];
  for (let i = 0; i < Math.ceil(extra / perProvider); i++) providers.push(await provider(1000 + i));
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < extra; i = next++) {
      const s = EVAL_SERVICES[i % EVAL_SERVICES.length]!;
      unwrap(await providers[Math.floor(i / perProvider)]!.createService({ ...contract(s, ` #${i}`), pricing: { model: 'fixed', basePriceCents: 1 + ((i * 37) % 5000) } }));
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  await waitForIndex(serviceCount);
  console.log(`seeded in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const client = providers[0]!;
  const anyId = unwrap(await client.listServices({ limit: 1 }))[0]!.id;
  const discoverBodies: DiscoverBody[] = EVAL_QUERIES.map((q, i) => ({
    need: q.need,
    ...(i % 4 === 1 ? { maxBudgetCents: 2000 } : {}),
    ...(i % 4 === 2 ? { urgency: 'high' as const, minTrustScore: 10 } : {}),
    ...(i % 4 === 3 ? { inputAvailable: { text: 'hello', imageUrl: 'https://example.com/a.png' } } : {}),
  }));
  const listQueries: ListServicesQuery[] = [
    {}, { sortBy: 'price_asc' }, { sortBy: 'trust_score', limit: 50 }, { category: 'images' }, { tags: 'translation' },
    { maxPriceCents: 500, sortBy: 'price_desc' }, { maxLatencyMs: 1000, minTrustScore: 40 }, { offset: 5000, limit: 100 }, { sortBy: 'created_at' },
  ];
  const rounds = 3;
  const baseline = await timeIt(EVAL_QUERIES.length * rounds, async () => void unwrap(await client.getService(anyId)));
  const discover = await timeIt(EVAL_QUERIES.length * rounds, async (i) => void unwrap(await client.discover(discoverBodies[i % discoverBodies.length]!)));
  const list = await timeIt(EVAL_QUERIES.length * rounds, async (i) => void unwrap(await client.listServices(listQueries[i % listQueries.length]!)));
  const mem = process.memoryUsage();
  console.log(`\nLatency through the gateway, ${serviceCount} services, sequential requests (ms)`);
  console.log('operation                               n      p50     p95     p99');
  for (const [name, t] of [['GET /v1/services/{id} (baseline)', baseline], ['POST /v1/services/discover', discover], ['GET /v1/services (filters, sorts)', list]] as const) {
    console.log(`${name.padEnd(38)} ${String(t.n).padStart(4)}  ${t.p50.toFixed(1).padStart(6)}  ${t.p95.toFixed(1).padStart(6)}  ${t.p99.toFixed(1).padStart(6)}`);
  }
  console.log(`ratio to baseline p95: discover ×${ratio(discover.p95, baseline.p95)}, list ×${ratio(list.p95, baseline.p95)}`);
  console.log(`target p95 ≤ ${TARGETS.p95Ms} ms: discover ${discover.p95 <= TARGETS.p95Ms ? 'met' : 'MISSED'}, list ${list.p95 <= TARGETS.p95Ms ? 'met' : 'MISSED'}`);
  console.log(`process memory (whole exchange in one process): rss ${(mem.rss / 2 ** 20).toFixed(0)} MiB, heap used ${(mem.heapUsed / 2 ** 20).toFixed(0)} MiB`);
}

async function timeIt(n: number, fn: (i: number) => Promise<void>): Promise<{ n: number; p50: number; p95: number; p99: number }> {
  for (let i = 0; i < 10; i++) await fn(i); // warm-up
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(i);
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const at = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!;
  return { n, p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}

function f(x: number): string {
  return x.toFixed(2);
}

function ratio(a: number, b: number): string {
  return b === 0 ? '∞' : (a / b).toFixed(2);
}
