/**
 * `pnpm bench:discovery-learning`: what discovery learns from purchases (D22.2), measured on a split
 * written before any measurement (`learning-history.ts`, `learning-future.ts`). The held-out catalog
 * is registered through the gateway of a bench exchange; the history is bought through it — each
 * need discovered by a buyer of its own account, the right service bought with the answer's queryId,
 * delivered and verified with a quality score — and the future needs (other words for the same
 * needs) are then ranked with learning off and on, on the same exchange. Before the history is
 * bought is measured too: purchases also move the providers' trust, which learning off isolates.
 * The held-out set's own needs for services nobody bought are a control: learning must not hurt them.
 *
 * Learning's weights were chosen after the split was written, looking only at its *tuning part* —
 * the first future need of each service and every other control need; the rest (two future needs of
 * each service, the other control needs) is the *held-out part*, reported apart: what to expect.
 *
 *   pnpm bench:discovery-learning            the figures
 *   pnpm bench:discovery-learning --misses   also the future needs whose first match is wrong, with learning on
 *   pnpm bench:discovery-learning --json f   figures also written as JSON (what `pnpm bench` tabulates)
 */
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ExchangeClient, unwrap } from '@agent-exchange/client';
import { withBenchExchange, type BenchExchange } from '../exchange.js';
import { row, writeReport, type Row } from '../report.js';
import { HELDOUT_QUERIES } from './heldout-queries.js';
import { HELDOUT_SERVICES } from './heldout-services.js';
import { degraded } from './weak-answers.js';
import { LEARNING_FUTURE } from './learning-future.js';
import { LEARNING_HISTORY } from './learning-history.js';
import { discoverAndBuy, registerSellers, signingAgent, type Seller } from './learning-purchases.js';

export interface Ranking {
  recallAt1: number;
  recallAt3: number;
  ndcg10: number;
}

interface Measured {
  needs: number;
  before: Ranking;
  off: Ranking;
  on: Ranking;
}

export interface LearningFigures {
  purchases: number;
  buyers: number;
  /** The held-out part of the split (never looked at to choose a weight), then the tuning part. */
  future: Measured;
  control: Measured;
  tuning: { future: Measured; control: Measured };
  /** Figures of `pnpm bench`'s table. */
  rows: Row[];
}

/** Distinct buyer accounts the history is spread over; each need of a service is bought by another one. */
const BUYERS = 6;

interface Labelled {
  need: string;
  relevant: string[];
  related?: string[];
  /** In the tuning part of the split (weights were chosen looking at it), or the held-out part. */
  tuning: boolean;
}

/** Registers the held-out catalog, buys the history and measures the future and control needs before, with learning off and on. */
export async function measureLearning(opts: { misses?: boolean } = {}): Promise<LearningFigures> {
  return withBenchExchange(async (ex) => {
    const anon = new ExchangeClient({ baseUrl: ex.url });
    const catalog = await registerSellers(anon, ex.config, HELDOUT_SERVICES);
    const keyOf = new Map([...catalog].map(([key, c]) => [c.id, key]));
    const observer = await signingAgent(anon, 'observer');
    const future: Labelled[] = LEARNING_FUTURE.flatMap((c) => c.needs.map((need, i) => ({ need, relevant: [c.service], tuning: i === 0 })));
    const bought = new Set(LEARNING_HISTORY.map((c) => c.service));
    const control: Labelled[] = HELDOUT_QUERIES.filter((q) => !q.relevant.some((k) => bought.has(k))).map((q, i) => ({ ...q, tuning: i % 2 === 0 }));
    const rank = async () => ({ future: await ranked(observer, future, keyOf), control: await ranked(observer, control, keyOf) });

    const before = await rank();
    const purchases = await buyHistory(ex, anon, catalog);
    const learning = ex.stack.catalog.discovery.learning;
    learning.enabled = false;
    const off = await rank();
    learning.enabled = true;
    const on = await rank();

    const part = (set: 'future' | 'control', tuning: boolean): Measured => {
      const of = (runs: Awaited<ReturnType<typeof rank>>) => metrics(runs[set].filter((r) => r.query.tuning === tuning));
      return { needs: (set === 'future' ? future : control).filter((q) => q.tuning === tuning).length, before: of(before), off: of(off), on: of(on) };
    };
    const figures = { future: part('future', false), control: part('control', false), tuning: { future: part('future', true), control: part('control', true) } };
    print(purchases, figures);
    if (opts.misses) printMisses(on.future.filter((r) => !r.query.tuning));
    const { future: heldFuture, control: heldControl } = figures;
    return {
      purchases, buyers: BUYERS, ...figures,
      rows: [
        row({ case: 'learning: future needs recall@1 (held-out part)', value: heldFuture.on.recallAt1, unit: '', baseline: heldFuture.off.recallAt1, baselineName: 'learning off', target: 'above learning off', met: heldFuture.on.recallAt1 > heldFuture.off.recallAt1 }),
        row({ case: 'learning: future needs nDCG@10 (held-out part)', value: heldFuture.on.ndcg10, unit: '', baseline: heldFuture.off.ndcg10, baselineName: 'learning off', target: 'above learning off', met: heldFuture.on.ndcg10 > heldFuture.off.ndcg10 }),
        row({ case: 'learning: control needs recall@1 (held-out part)', value: heldControl.on.recallAt1, unit: '', baseline: heldControl.off.recallAt1, baselineName: 'learning off', target: 'not below learning off', met: heldControl.on.recallAt1 >= heldControl.off.recallAt1 }),
      ],
    };
  });
}

/**
 * The history bought through the gateway: each need by the next of BUYERS accounts (so a service's
 * needs come from distinct buyers), quality 80–100; then waits until the catalog has kept every
 * purchase as evidence and the learned ranking holds it. Returns how many purchases were made.
 */
async function buyHistory(ex: BenchExchange, anon: ExchangeClient, catalog: Awaited<ReturnType<typeof registerSellers>>): Promise<number> {
  const buyers: Seller[] = [];
  for (let i = 0; i < BUYERS; i++) {
    const b = await signingAgent(anon, `buyer-${i}`);
    unwrap(await b.client.fund(b.agentId, 500_000));
    buyers.push(b);
  }
  const orders = LEARNING_HISTORY.flatMap((c, i) => c.needs.map((need, j) => ({ need, key: c.service, buyer: buyers[(i + j) % BUYERS]!, quality: 80 + ((i * 7 + j * 3) % 21) })));
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < orders.length; i = next++) {
      const o = orders[i]!;
      await discoverAndBuy(o.buyer, o.need, catalog.get(o.key)!, o.quality);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  await evidenceKept(ex, orders.length);
  await ex.stack.catalog.discovery.learning.catchUp();
  console.log(`bought the history: ${orders.length} purchases by ${BUYERS} buyers, settled and learned in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return orders.length;
}

/** Waits until the catalog has judged `n` purchases; every one of them must count. */
async function evidenceKept(ex: BenchExchange, n: number): Promise<void> {
  const sql = new pg.Client({ connectionString: ex.db.url });
  await sql.connect();
  try {
    for (const deadline = Date.now() + 120_000; ;) {
      const { rows: [r] } = await sql.query<{ counted: number; ignored: number }>(
        'select count(*) filter (where ignored_reason is null)::int as counted, count(*) filter (where ignored_reason is not null)::int as ignored from catalog.learning_evidence');
      if (r!.ignored > 0) throw new Error(`${r!.ignored} purchases of the history were judged worthless`);
      if (r!.counted === n) return;
      if (Date.now() > deadline) throw new Error(`the catalog kept ${r!.counted} of ${n} purchases`);
      await new Promise((res) => setTimeout(res, 200));
    }
  } finally {
    await sql.end();
  }
}

type RankedRow = { query: Labelled; ranked: string[] };

async function ranked(observer: Seller, needs: Labelled[], keyOf: Map<string, string>): Promise<RankedRow[]> {
  const out: RankedRow[] = [];
  for (const query of needs) {
    const found = unwrap(await observer.client.discover({ need: query.need, limit: 10 }));
    // An answer may say its matches are weak (that is discovery working); only a degraded ranking stops the run.
    if (degraded(found).length) throw new Error(`discovery is degraded: ${degraded(found).map((w) => w.message).join('; ')}`);
    out.push({ query, ranked: found.matches.map((m) => keyOf.get(m.serviceId)!) });
  }
  return out;
}

/** recall@1, recall@3 and nDCG@10 (grade 2 for a right service, 1 for a related one), as `discovery.bench.ts` computes them. */
export function metrics(rows: RankedRow[]): Ranking {
  let r1 = 0;
  let r3 = 0;
  let ndcg = 0;
  for (const { query: q, ranked: keys } of rows) {
    if (q.relevant.includes(keys[0] ?? '')) r1 += 1;
    if (keys.slice(0, 3).some((k) => q.relevant.includes(k))) r3 += 1;
    const gain = (k: string) => (q.relevant.includes(k) ? 2 : q.related?.includes(k) ? 1 : 0);
    const dcg = keys.slice(0, 10).reduce((s, k, i) => s + (2 ** gain(k) - 1) / Math.log2(i + 2), 0);
    const ideal = [...q.relevant.map(() => 2), ...(q.related ?? []).map(() => 1)].slice(0, 10).reduce((s, g, i) => s + (2 ** g - 1) / Math.log2(i + 2), 0);
    ndcg += ideal ? dcg / ideal : 0;
  }
  const n = Math.max(1, rows.length);
  return { recallAt1: r1 / n, recallAt3: r3 / n, ndcg10: ndcg / n };
}

const f = (x: number) => x.toFixed(2);

function print(purchases: number, figures: Pick<LearningFigures, 'future' | 'control' | 'tuning'>): void {
  console.log(`\nDiscovery that learns from purchases (D22.2) — held-out catalog (${HELDOUT_SERVICES.length} services), ${purchases} purchases of ${LEARNING_HISTORY.length} services by ${BUYERS} buyers`);
  console.log('needs                                                   n    recall@1  recall@3  nDCG@10');
  const line = (name: string, n: number, r: Ranking) => console.log(`${name.padEnd(55)} ${String(n).padStart(3)}    ${f(r.recallAt1)}      ${f(r.recallAt3)}      ${f(r.ndcg10)}`);
  const block = (name: string, m: Measured) => {
    line(`${name}, before the history`, m.needs, m.before);
    line('  after it, learning off', m.needs, m.off);
    line('  after it, learning on', m.needs, m.on);
  };
  console.log('held-out part (no weight was chosen looking at it):');
  block('future (other words for bought needs)', figures.future);
  block('control (needs of services not bought)', figures.control);
  console.log('tuning part (the weights were chosen on it):');
  block('future', figures.tuning.future);
  block('control', figures.tuning.control);
}

function printMisses(rows: RankedRow[]): void {
  const misses = rows.filter((r) => !r.query.relevant.includes(r.ranked[0] ?? ''));
  if (misses.length === 0) return;
  console.log('\nfuture needs whose first match is not the bought service (learning on):');
  for (const m of misses) {
    const at = m.ranked.findIndex((k) => m.query.relevant.includes(k)) + 1;
    console.log(`  "${m.query.need}" → ${m.ranked.slice(0, 3).join(', ') || '(nothing)'}  (want ${m.query.relevant.join(', ')}, at ${at || '>10'})`);
  }
}

// Run alone (`pnpm bench:discovery-learning`), not when `discovery.bench.ts` imports it.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const figures = await measureLearning({ misses: args.includes('--misses') });
  writeReport(args.includes('--json') ? args[args.indexOf('--json') + 1] : undefined, 'discovery-learning', figures.rows, figures);
}
