/**
 * `pnpm bench:discovery` : discovery quality on three labelled sets — the tuning set the scorer's
 * weights were chosen on, a held-out set they never were, and a frozen set written before any
 * tuning and never edited — each against a
 * keyword-only baseline measured in the same run, then discover and list latency through the
 * gateway with 10,000 services. Everything is real: Postgres, NATS JetStream, every service, HTTP.
 * Each set gets an exchange of its own, so neither catalog affects the other's ranking.
 *
 *   pnpm bench:discovery                 quality + speed
 *   pnpm bench:discovery --quality       quality only
 *   pnpm bench:discovery --misses        also list the needs whose first match is wrong
 *   pnpm bench:discovery --services 2000 speed with another catalog size
 *   pnpm bench:discovery --large 0       without growing the catalog to 100,000 services after
 *   pnpm bench:discovery --speed         speed only
 *   pnpm bench:discovery --json out.json figures also written as JSON (what `pnpm bench` tabulates)
 */
import pg from 'pg';
import { ExchangeClient, unwrap } from '@agent-exchange/client';
import type { CreateServiceBody, DiscoverBody, ListServicesQuery } from '@aex/contracts';
import type { ExchangeConfig } from '@aex/platform';
import type { Stack } from '@aex/stack';
import { withBenchExchange } from '../exchange.js';
import { row, writeReport, type Row } from '../report.js';
import { EVAL_NO_RIGHT_SERVICE, EVAL_QUERIES, type EvalQuery } from './eval-queries.js';
import { EVAL_SERVICES, type EvalService } from './eval-services.js';
import { HELDOUT_QUERIES } from './heldout-queries.js';
import { HELDOUT_SERVICES } from './heldout-services.js';
import { measureLearning } from './learning.bench.js';
import { FROZEN_NO_RIGHT_SERVICE, FROZEN_QUERIES } from './frozen-queries.js';
import { FROZEN_SERVICES } from './frozen-services.js';
import { degraded, printWeakAnswers, saysWeak, weakAnswers, type WeakAnswerFigures } from './weak-answers.js';

const args = process.argv.slice(2);
/** What `pnpm bench` tabulates (`--json out.json`). */
const reportRows: Row[] = [];
const qualityOnly = args.includes('--quality');
const serviceCount = Number(args[args.indexOf('--services') + 1] ?? 10_000) || 10_000;
/** The catalog grown to this size (copies written straight to its tables) and measured again; 0 skips it. */
const largeCount = args.includes('--large') ? Number(args[args.indexOf('--large') + 1]) : 100_000;
/** Targets on the held-out set; the tuning set must not drop below its figures before it. */
const TARGETS = { recallAt1: 0.75, recallAt3: 0.9, p95Ms: 50 };
/** P95 at the large size. */
const LARGE_P95_MS = 100;
const TUNING_BEFORE = { recallAt1: 0.77, recallAt3: 0.91 };

interface LabelledSet {
  name: string;
  services: EvalService[];
  queries: EvalQuery[];
  /** Needs no service of the set answers (D22.4: each should be answered with a warning). */
  unanswerable: EvalQuery[];
}
const SETS: LabelledSet[] = [
  { name: 'tuning set (the weights were chosen on it)', services: EVAL_SERVICES, queries: EVAL_QUERIES, unanswerable: EVAL_NO_RIGHT_SERVICE },
  { name: 'held-out set (never used to choose anything)', services: HELDOUT_SERVICES, queries: HELDOUT_QUERIES, unanswerable: [] },
  { name: 'frozen set (written before tuning, never edited)', services: FROZEN_SERVICES, queries: FROZEN_QUERIES, unanswerable: FROZEN_NO_RIGHT_SERVICE },
];


/** An exchange of its own (database, NATS namespace, every service, the gateway) for one part of the bench. */
interface Exchange {
  stack: Stack;
  config: ExchangeConfig;
  anon: ExchangeClient;
  sql: pg.Client;
}

async function withExchange(run: (ex: Exchange) => Promise<void>): Promise<void> {
  await withBenchExchange(async ({ stack, config, db, url }) => {
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    try {
      await run({ stack, config, anon: new ExchangeClient({ baseUrl: url }), sql });
    } finally {
      await sql.end();
    }
  });
}

const results: { set: LabelledSet; exchange: Ranking; baseline: Ranking; weak: WeakAnswerFigures }[] = [];
for (const set of args.includes('--speed') ? [] : SETS) {
  await withExchange(async (ex) => {
    const ids = await registerCatalog(ex, set.services);
    results.push(await quality(ex, set, ids));
  });
}
if (results.length > 0) summary();
// D22.2: learning from purchases, on an exchange of its own (learning.bench.ts).
if (!args.includes('--speed')) reportRows.push(...(await measureLearning({ misses: args.includes('--misses') })).rows);
if (!qualityOnly) {
  await withExchange(async (ex) => {
    await registerCatalog(ex, EVAL_SERVICES);
    await speed(ex);
  });
}
writeReport(args.includes('--json') ? args[args.indexOf('--json') + 1] : undefined, 'discovery', reportRows, { services: serviceCount, quality: results.map((r) => ({ set: r.set.name, exchange: r.exchange, baseline: r.baseline, weakAnswers: r.weak })) });

// ---------------------------------------------------------------------------------------------

async function provider(ex: Exchange, i: number): Promise<ExchangeClient> {
  const account = unwrap(await ex.anon.createAccount({ accountType: 'organization', email: `bench-${i}-${Date.now()}@example.com`, displayName: `Provider ${i}`, agent: { name: `provider-${i}` } }));
  return ex.anon.as({ apiKey: account.apiKey });
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

/** Registers a labelled catalog through the gateway; discovery reads its writes, so no waiting follows. */
async function registerCatalog(ex: Exchange, services: EvalService[]): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  const perProvider = ex.config.MAX_SERVICES_PER_AGENT;
  const providers = await Promise.all(Array.from({ length: Math.ceil(services.length / perProvider) + 3 }, (_, i) => provider(ex, i)));
  if (new Set(services.map((s) => s.key)).size !== services.length) throw new Error('two services with the same key');
  // Eight at a time, as agents would: each registration embeds its text in the encoder's one worker.
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < services.length; i = next++) {
      const s = services[i]!;
      ids.set(s.key, unwrap(await providers[i % providers.length]!.createService(contract(s))).id);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return ids;
}

// --- quality ---------------------------------------------------------------------------------

interface Ranking {
  recallAt1: number;
  recallAt3: number;
  ndcg10: number;
}

async function quality(ex: Exchange, set: LabelledSet, ids: Map<string, string>): Promise<(typeof results)[number]> {
  const keyOf = new Map([...ids].map(([k, id]) => [id, k]));
  const client = await provider(ex, 999);
  const overlap = await sharedWords(ex, set);
  const rows: { query: EvalQuery; exchange: string[]; baseline: string[]; shares: boolean; weak: boolean }[] = [];
  for (const query of set.queries) {
    const found = unwrap(await client.discover({ need: query.need, limit: 10 }));
    if (degraded(found).length) throw new Error(`discovery is degraded: ${degraded(found).map((w) => w.message).join('; ')}`);
    rows.push({
      query,
      exchange: found.matches.map((m) => keyOf.get(m.serviceId)!),
      baseline: await keywordBaseline(ex, query.need, keyOf),
      shares: overlap.get(query.need)!,
      weak: saysWeak(found),
    });
  }
  const subsets: [string, typeof rows][] = [
    ['all needs', rows],
    ['sharing no word with the right service', rows.filter((r) => !r.shares)],
    ['with typos', rows.filter((r) => r.query.typo)],
  ];
  console.log(`\nDiscovery quality, ${set.name} — ${set.services.length} services in ${new Set(set.services.map((s) => s.category)).size} categories, ${set.queries.length} needs`);
  console.log('subset                                   n    recall@1        recall@3        nDCG@10');
  console.log('                                              exch.  kw      exch.  kw       exch.  kw');
  for (const [name, subset] of subsets) {
    const e = metrics(subset.map((r) => [r.query, r.exchange]));
    const kw = metrics(subset.map((r) => [r.query, r.baseline]));
    console.log(`${name.padEnd(40)} ${String(subset.length).padStart(3)}   ${f(e.recallAt1)}  ${f(kw.recallAt1)}    ${f(e.recallAt3)}  ${f(kw.recallAt3)}     ${f(e.ndcg10)}  ${f(kw.ndcg10)}`);
  }
  const misses = rows.filter((r) => !r.query.relevant.includes(r.exchange[0] ?? ''));
  if (misses.length && args.includes('--misses')) {
    console.log('\nneeds whose first match is not a right service:');
    for (const m of misses) {
      const rank = m.exchange.findIndex((k) => m.query.relevant.includes(k)) + 1;
      console.log(`  "${m.query.need}" → ${m.exchange.slice(0, 3).join(', ') || '(nothing)'}  (want ${m.query.relevant.join(', ')}, at ${rank || '>10'})`);
    }
  }
  const weak = await weakAnswers(client, set.unanswerable, rows.map((r) => ({ query: r.query, first: r.exchange[0], weak: r.weak })));
  printWeakAnswers(weak);
  return { set, exchange: metrics(rows.map((r) => [r.query, r.exchange])), baseline: metrics(rows.map((r) => [r.query, r.baseline])), weak };
}

/** Both sets side by side, each with its ratio to the keyword baseline, and the targets. */
function summary(): void {
  console.log('\nSummary (all needs)                                  recall@1  recall@3  nDCG@10   ratio to keyword baseline (r@1, r@3, nDCG)');
  for (const r of results) {
    console.log(`${r.set.name.padEnd(52)} ${f(r.exchange.recallAt1).padStart(8)}  ${f(r.exchange.recallAt3).padStart(8)}  ${f(r.exchange.ndcg10).padStart(7)}   ×${ratio(r.exchange.recallAt1, r.baseline.recallAt1)}, ×${ratio(r.exchange.recallAt3, r.baseline.recallAt3)}, ×${ratio(r.exchange.ndcg10, r.baseline.ndcg10)}`);
    console.log(`${'  keyword baseline'.padEnd(52)} ${f(r.baseline.recallAt1).padStart(8)}  ${f(r.baseline.recallAt3).padStart(8)}  ${f(r.baseline.ndcg10).padStart(7)}`);
  }
  const [tuning, heldOut, frozen] = results;
  if (frozen) {
    reportRows.push(
      row({ case: 'frozen recall@3', value: frozen.exchange.recallAt3, unit: '', baseline: frozen.baseline.recallAt3, baselineName: 'keyword baseline', target: 'stated', met: null }),
      row({ case: 'frozen recall@1', value: frozen.exchange.recallAt1, unit: '', baseline: frozen.baseline.recallAt1, baselineName: 'keyword baseline', target: 'stated', met: null }),
      row({ case: 'frozen needs with no right service warned', value: frozen.weak.warned / Math.max(1, frozen.weak.unanswerable), unit: '', baseline: Number.NaN, baselineName: 'none', target: 'all', met: frozen.weak.warned === frozen.weak.unanswerable }),
    );
  }
  if (heldOut) {
    reportRows.push(
      row({ case: 'held-out recall@3', value: heldOut.exchange.recallAt3, unit: '', baseline: heldOut.baseline.recallAt3, baselineName: 'keyword baseline', target: `≥ ${TARGETS.recallAt3}`, met: heldOut.exchange.recallAt3 >= TARGETS.recallAt3 }),
      row({ case: 'held-out recall@1', value: heldOut.exchange.recallAt1, unit: '', baseline: heldOut.baseline.recallAt1, baselineName: 'keyword baseline', target: `≥ ${TARGETS.recallAt1}`, met: heldOut.exchange.recallAt1 >= TARGETS.recallAt1 }),
    );
    const met = (v: number, t: number) => (v >= t ? 'met' : 'MISSED');
    console.log(`targets on the held-out set: recall@3 ≥ ${TARGETS.recallAt3} ${met(heldOut.exchange.recallAt3, TARGETS.recallAt3)}; recall@1 ≥ ${TARGETS.recallAt1} ${met(heldOut.exchange.recallAt1, TARGETS.recallAt1)}`);
  }
  if (tuning) {
    const kept = tuning.exchange.recallAt3 >= TUNING_BEFORE.recallAt3 - 0.02 && tuning.exchange.recallAt1 >= TUNING_BEFORE.recallAt1 - 0.02;
    console.log(`tuning set against its figures before ${TUNING_BEFORE.recallAt1} / ${TUNING_BEFORE.recallAt3}, ±0.02 between runs: ${kept ? 'no drop' : 'DROPPED'}`);
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
async function keywordBaseline(ex: Exchange, need: string, keyOf: Map<string, string>): Promise<string[]> {
  const { rows } = await ex.sql.query<{ id: string }>(
    `with q as (select replace(plainto_tsquery('english', $1)::text, '&', '|')::tsquery as q)
     select s.id from catalog.services s, q where s.status = 'active' and s.search_doc @@ q.q
     order by ts_rank_cd(s.search_doc, q.q) desc, s.id limit 10`,
    [need],
  );
  return rows.map((r) => keyOf.get(r.id)).filter((k): k is string => k !== undefined);
}

/** Whether each query shares a stemmed word with any of its right services (the same stemming as the index). */
async function sharedWords(ex: Exchange, set: LabelledSet): Promise<Map<string, boolean>> {
  const out = new Map<string, boolean>();
  for (const q of set.queries) {
    const { rows } = await ex.sql.query<{ shares: boolean }>(
      `select exists (
         select 1 from catalog.services s
         where s.name = any($2::text[]) and s.search_doc @@ replace(plainto_tsquery('english', $1)::text, '&', '|')::tsquery
       ) as shares`,
      [q.need, q.relevant.map((k) => set.services.find((s) => s.key === k)!.name)],
    );
    out.set(q.need, rows[0]!.shares);
  }
  return out;
}

// --- speed -----------------------------------------------------------------------------------

async function speed(ex: Exchange): Promise<void> {
  const extra = serviceCount - EVAL_SERVICES.length;
  const perProvider = ex.config.MAX_SERVICES_PER_AGENT;
  console.log(`\nSeeding ${serviceCount} services (${Math.ceil(extra / perProvider)} more providers) through the gateway…`);
  const started = Date.now();
  const providers: ExchangeClient[] = [];
  for (let i = 0; i < Math.ceil(extra / perProvider); i++) providers.push(await provider(ex, 1000 + i));
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < extra; i = next++) {
      const s = EVAL_SERVICES[i % EVAL_SERVICES.length]!;
      unwrap(await providers[Math.floor(i / perProvider)]!.createService({ ...contract(s, ` #${i}`), pricing: { model: 'fixed', basePriceCents: 1 + ((i * 37) % 5000) } }));
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  console.log(`seeded in ${((Date.now() - started) / 1000).toFixed(1)} s (${ex.stack.catalog.discovery.index.services.size} services in the index)`);
  const rssAtSize = await measure(ex, providers[0]!, serviceCount, TARGETS.p95Ms);
  if (largeCount > serviceCount) {
    await grow(ex, largeCount);
    const rssLarge = await measure(ex, providers[0]!, largeCount, LARGE_P95_MS);
    const perService = (rssLarge - rssAtSize) / (largeCount - serviceCount);
    console.log(`memory per service (rss growth from ${serviceCount} to ${largeCount} ÷ services added): ${(perService / 1024).toFixed(1)} KiB`);
    reportRows.push(row({ case: 'memory per indexed service', value: perService / 1024, unit: 'KiB', baseline: Number.NaN, baselineName: 'none', lowerIsBetter: true, target: 'stated', met: null }));
  }
}

/**
 * Grows the catalog to `size` services by copying those already there straight in the tables
 * (their embeddings too, so the encoder need not run 90,000 times), then waits until the index holds them.
 */
async function grow(ex: Exchange, size: number): Promise<void> {
  const started = Date.now();
  const { rows } = await ex.sql.query<{ column_name: string }>(
    `select column_name from information_schema.columns where table_schema = 'catalog' and table_name = 'services' and is_generated = 'NEVER' and column_default is null and column_name not in ('id', 'name')`,
  );
  const cols = rows.map((r) => r.column_name).join(', ');
  const have = ex.stack.catalog.discovery.index.services.size;
  const copies = Math.ceil((size - have) / have);
  for (let g = 1; g <= copies; g++) {
    const room = size - ex.stack.catalog.discovery.index.services.size;
    // The copies take their originals' embeddings too (every model's: one statement, so the index reads them with the rows).
    await ex.sql.query(`with src as (select gen_random_uuid() as copy_id, * from catalog.services where name not like '% copy %' limit ${Math.min(room, have)}),
      copies as (insert into catalog.services (id, name, ${cols}) select copy_id, name || ' copy ${g}', ${cols} from src)
      insert into catalog.service_embeddings (service_id, model, embedding) select src.copy_id, e.model, e.embedding from src join catalog.service_embeddings e on e.service_id = src.id`);
    await waitFor(() => ex.stack.catalog.discovery.index.services.size >= Math.min(size, have * (g + 1)));
  }
  // What autovacuum would do soon after such a bulk write: fresh statistics for the planner.
  await ex.sql.query('analyze catalog.services');
  console.log(`\ngrew the catalog to ${ex.stack.catalog.discovery.index.services.size} services in ${((Date.now() - started) / 1000).toFixed(1)} s (copies written to the tables, indexed by the catalog's poll)`);
}

async function waitFor(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 200));
}

/** Discover and list latency through the gateway at the catalog's current size; returns the process's rss. */
async function measure(ex: Exchange, client: ExchangeClient, size: number, targetMs: number): Promise<number> {
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
  // With --expose-gc (as pnpm runs it), garbage is collected first so rss is what stays.
  (globalThis as { gc?: () => void }).gc?.();
  const mem = process.memoryUsage();
  console.log(`\nLatency through the gateway, ${size} services, sequential requests (ms)`);
  console.log('operation                               n      p50     p95     p99');
  for (const [name, t] of [['GET /v1/services/{id} (baseline)', baseline], ['POST /v1/services/discover', discover], ['GET /v1/services (filters, sorts)', list]] as const) {
    console.log(`${name.padEnd(38)} ${String(t.n).padStart(4)}  ${t.p50.toFixed(1).padStart(6)}  ${t.p95.toFixed(1).padStart(6)}  ${t.p99.toFixed(1).padStart(6)}`);
  }
  console.log(`ratio to baseline p95: discover ×${ratio(discover.p95, baseline.p95)}, list ×${ratio(list.p95, baseline.p95)}`);
  console.log(`target p95 ≤ ${targetMs} ms: discover ${discover.p95 <= targetMs ? 'met' : 'MISSED'}, list ${list.p95 <= targetMs ? 'met' : 'MISSED'}`);
  console.log(`process memory (whole exchange in one process): rss ${(mem.rss / 2 ** 20).toFixed(0)} MiB, heap used ${(mem.heapUsed / 2 ** 20).toFixed(0)} MiB`);
  reportRows.push(
    row({ case: `discover p95, ${size} services`, value: discover.p95, unit: 'ms', baseline: baseline.p95, baselineName: 'GET /v1/services/{id}', lowerIsBetter: true, target: `≤ ${targetMs} ms`, met: discover.p95 <= targetMs }),
    row({ case: `list p95, ${size} services`, value: list.p95, unit: 'ms', baseline: baseline.p95, baselineName: 'GET /v1/services/{id}', lowerIsBetter: true, target: `≤ ${targetMs} ms`, met: list.p95 <= targetMs }),
  );
  return mem.rss;
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
