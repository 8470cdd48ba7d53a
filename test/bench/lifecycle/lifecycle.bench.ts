/**
 * `pnpm bench:lifecycle`: settled lifecycles per second — create (signed) → deliver
 * (signed) → verify, through the gateway, 16 at a time — with p50/p99 of create, next to a ceiling
 * measured in the same run: the same database writes issued directly by one process with
 * node-postgres (same transactions, same row counts, no HTTP, no NATS, no validation). Everything on
 * the exchange side is real: Postgres, NATS JetStream, every service, HTTP.
 *
 *   pnpm bench:lifecycle                    1,500 lifecycles (400 gave figures dominated by the start:
 *                                           4 s of load, the first second's warm-up in it)
 *   pnpm bench:lifecycle --lifecycles 400   a quicker look
 *   pnpm bench:lifecycle --concurrency 1    one lifecycle at a time: latency without queueing
 *   pnpm bench:lifecycle --json out.json    figures also written as JSON (what `pnpm bench` tabulates)
 *   pnpm bench:lifecycle --cpu-prof x.cpuprofile   a CPU profile of the exchange over the saturated part
 *   pnpm bench:lifecycle --saturated-only   no paced part (10 lifecycles stand in for it): half the time,
 *                                           for comparing two versions back to back
 *
 * The load comes from outside: a child process of its own signs and sends the requests, so its CPU
 * (Ed25519 signing, the HTTP client) is not taken from the exchange's event loop. It still shares the
 * machine's two cores, so it sends over node:http with connections kept alive (`keepAliveFetch`)
 * rather than the global `fetch`, which cost it 4–5 ms of CPU per lifecycle against 1.7 ms.
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ExchangeClient, generateSigningKey, unwrap } from '@agent-exchange/client';
import { startCpuProfile } from '../cpu-profile.js';
import { keepAliveFetch } from '../http-fetch.js';
import { withBenchExchange, withBenchProcesses } from '../exchange.js';
import { row, writeReport } from '../report.js';

const args = process.argv.slice(2);
const LIFECYCLES = Number(args[args.indexOf('--lifecycles') + 1] ?? 1500) || 1500;
const CONCURRENCY = Number(args[args.indexOf('--concurrency') + 1] ?? 16) || 16;
/** `--processes`: every service in a process of its own (as deployed), not the whole exchange in this one. */
const PROCESSES = args.includes('--processes');
const SATURATED_ONLY = args.includes('--saturated-only');
/** `--cpu-prof <file>`: the exchange's CPU profile over the saturated part (in-process runs only). */
const CPU_PROF = args.includes('--cpu-prof') ? args[args.indexOf('--cpu-prof') + 1] : undefined;
/**
 * Three times the settled lifecycles the transactions issue first measured (24.1/s at a
 * ratio of 0.157 to this benchmark's ceiling), read as a ratio because the machine's speed moves;
 * the create p99 target at 16 callers (docs/performance.md explains why it cannot be met here).
 */
const TARGETS = { ratio: 3 * 0.157, createP99Ms: 100 };
const INPUT = { payload: 'hello world' };
const OUTPUT = { digest: 'b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9' };

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const fmt = (n: number) => n.toFixed(1);

async function pool<T>(items: T[], n: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await run(items[next++]!);
  }));
}

type LoadResult = {
  perSecond: number; seconds: number; create: number[]; deliver: number[]; verify: number[];
  /** CPU of the exchange's process per settled lifecycle while saturated, ms (in-process runs only). */
  cpuMsPerLifecycle?: number;
  /** Share of that time the exchange's event loop was busy (in-process runs only). */
  eventLoopUtilization?: number;
  /** CPU of the load process per lifecycle over the same part: taken from the same two cores. */
  loadCpuMsPerLifecycle: number;
  paced: { perSecond: number; count: number; create: number[] };
};

if (args[0] === '--load') {
  // The child: drive the exchange at the URL given, report the figures to the parent, exit.
  const result = await throughTheGateway(args[1]!);
  process.send!(result, undefined, {}, () => process.exit(0));
} else {
  await main();
}

async function main() {
  const exchangeRun = PROCESSES ? withBenchProcesses : withBenchExchange;
  await exchangeRun(async ({ url, db }) => {
    const exchange = await fromAnotherProcess(url);
    const ceiling = await directWrites(db.url);
    const ratio = exchange.perSecond / ceiling.perSecond;
    console.log(`\nSettled lifecycles (create → deliver → verify), concurrency ${CONCURRENCY}`);
    console.log(`  exchange (gateway, every service, JetStream):  ${fmt(exchange.perSecond)} /s   (${LIFECYCLES} in ${fmt(exchange.seconds)} s)`);
    console.log(`  ceiling (the same writes, node-postgres):      ${fmt(ceiling.perSecond)} /s   (${LIFECYCLES} in ${fmt(ceiling.seconds)} s)`);
    console.log(`  ratio:                                          ${ratio.toFixed(3)}   (target ≥ ${TARGETS.ratio.toFixed(2)}, 3 × the first 0.157)`);
    const p = (xs: number[]) => `${fmt(quantile(xs, 0.5))} / ${fmt(quantile(xs, 0.99))} ms`;
    console.log(`  create p50 / p99:  ${p(exchange.create)}   (target p99 ≤ ${TARGETS.createP99Ms} ms)`);
    console.log(`  deliver p50 / p99: ${p(exchange.deliver)}`);
    console.log(`  verify p50 / p99:  ${p(exchange.verify)}`);
    console.log(`  ceiling per lifecycle p50: ${fmt(quantile(ceiling.lifecycle, 0.5))} ms`);
    // The figure least moved by other load on the machine: what one lifecycle costs the exchange.
    if (exchange.cpuMsPerLifecycle !== undefined) console.log(`  exchange CPU per lifecycle (saturated): ${fmt(exchange.cpuMsPerLifecycle)} ms, event loop busy ${fmt(100 * exchange.eventLoopUtilization!)} %`);
    console.log(`  load process CPU per lifecycle: ${fmt(exchange.loadCpuMsPerLifecycle)} ms`);
    console.log(`\n  ${CONCURRENCY} callers that never pause keep the exchange saturated, so each waits ≈ ${CONCURRENCY} ÷ throughput per lifecycle.`);
    console.log(`  Create at half that rate (${exchange.paced.count} lifecycles started every ${fmt(1000 / exchange.paced.perSecond)} ms, ${fmt(exchange.paced.perSecond)} /s):`);
    console.log(`    p50 / p95 / p99:  ${fmt(quantile(exchange.paced.create, 0.5))} / ${fmt(quantile(exchange.paced.create, 0.95))} / ${fmt(quantile(exchange.paced.create, 0.99))} ms`);
    const ok = ratio >= TARGETS.ratio && quantile(exchange.create, 0.99) <= TARGETS.createP99Ms;
    console.log(`\n${ok ? 'targets met' : 'targets missed'}`);
    const createP99 = quantile(exchange.create, 0.99);
    const ceilingP50 = quantile(ceiling.lifecycle, 0.5);
    writeReport(args.includes('--json') ? args[args.indexOf('--json') + 1] : undefined, 'lifecycle', [
      row({ case: `settled lifecycles, ${CONCURRENCY} callers`, value: exchange.perSecond, unit: '/s', baseline: ceiling.perSecond, baselineName: 'node-postgres writes', target: `ratio ≥ ${TARGETS.ratio.toFixed(2)} (3 × first)`, met: ratio >= TARGETS.ratio }),
      row({ case: 'create p99 (saturated)', value: createP99, unit: 'ms', baseline: ceilingP50, baselineName: 'ceiling lifecycle p50', lowerIsBetter: true, target: `≤ ${TARGETS.createP99Ms} ms`, met: createP99 <= TARGETS.createP99Ms }),
      row({ case: 'create p99 at half rate', value: quantile(exchange.paced.create, 0.99), unit: 'ms', baseline: ceilingP50, baselineName: 'ceiling lifecycle p50', lowerIsBetter: true, target: '', met: null }),
    ], { lifecycles: LIFECYCLES, concurrency: CONCURRENCY, exchange: { perSecond: exchange.perSecond, seconds: exchange.seconds, paced: exchange.paced.perSecond, cpuMsPerLifecycle: exchange.cpuMsPerLifecycle, eventLoopUtilization: exchange.eventLoopUtilization, loadCpuMsPerLifecycle: exchange.loadCpuMsPerLifecycle }, ceiling: { perSecond: ceiling.perSecond } });
  });
}

function fromAnotherProcess(url: string): Promise<LoadResult> {
  const child = fork(fileURLToPath(import.meta.url), ['--load', url, '--lifecycles', String(LIFECYCLES), '--concurrency', String(CONCURRENCY), ...(SATURATED_ONLY ? ['--saturated-only'] : [])], {
    execArgv: ['--import', 'tsx'],
  });
  // The child marks its saturated part; in-process, this process's CPU and event loop over it are the exchange's.
  let cpu: NodeJS.CpuUsage | undefined;
  let loop: ReturnType<typeof performance.eventLoopUtilization> | undefined;
  let profile: Promise<Awaited<ReturnType<typeof startCpuProfile>>> | undefined;
  const measured: Pick<LoadResult, 'cpuMsPerLifecycle' | 'eventLoopUtilization'> = {};
  return new Promise((resolve, reject) => {
    child.on('message', (m: { mark?: 'start' | 'end' } | LoadResult) => {
      if ('mark' in m) {
        if (PROCESSES) return;
        if (m.mark === 'start') {
          cpu = process.cpuUsage();
          loop = performance.eventLoopUtilization();
          if (CPU_PROF) profile = startCpuProfile();
        } else if (cpu) {
          const { user, system } = process.cpuUsage(cpu);
          measured.cpuMsPerLifecycle = (user + system) / 1000 / LIFECYCLES;
          measured.eventLoopUtilization = performance.eventLoopUtilization(loop).utilization;
          if (profile) void profile.then((p) => p.stop(CPU_PROF!)).then(() => console.log(`CPU profile written to ${CPU_PROF}`));
        }
        return;
      }
      resolve({ ...(m as LoadResult), ...measured });
    });
    child.once('exit', (code) => reject(new Error(`the load process exited with ${code} before reporting`)));
  });
}

async function throughTheGateway(url: string): Promise<LoadResult> {
  const anon = new ExchangeClient({ baseUrl: url, fetch: keepAliveFetch() });
  const agent = async (i: number, funds: number) => {
    const owner = unwrap(await anon.createAccount({ accountType: 'organization', email: `bench-${i}-${randomUUID()}@example.com`, displayName: `Bench ${i}`, agent: { name: 'owner' } }));
    const keys = generateSigningKey();
    const made = unwrap(await anon.as({ apiKey: owner.apiKey }).createAgent({ name: `agent-${i}`, agentType: 'persistent', signingKeyPublic: keys.publicKey }));
    const client = anon.as({ apiKey: made.apiKey, signingSecretKey: keys.secretKey });
    for (let left = funds; left > 0; left -= 1_000_000) unwrap(await client.fund(made.id, Math.min(left, 1_000_000)));
    return { id: made.id, client };
  };
  const providers = await Promise.all(Array.from({ length: 4 }, (_, i) => agent(i, 0)));
  const services = await Promise.all(providers.map(async (p) => ({
    provider: p,
    id: unwrap(await p.client.createService({
      name: `Digest ${randomUUID().slice(0, 6)}`, description: 'Computes the SHA-256 digest of a text payload.', version: '1.0.0', category: 'crypto',
      inputSchema: { type: 'object', required: ['payload'], properties: { payload: { type: 'string' } } },
      outputSchema: { type: 'object', required: ['digest'], properties: { digest: { type: 'string', pattern: '^[0-9a-f]{64}$' } } },
      pricing: { model: 'fixed', basePriceCents: 100 }, sla: { maxLatencyMs: 60_000, timeoutMs: 600_000 },
    })).id,
  })));
  const consumers = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => agent(100 + i, 100 * (32 + LIFECYCLES + Math.max(100, LIFECYCLES)))));
  const create: number[] = [];
  const deliver: number[] = [];
  const verify: number[] = [];
  const timed = async <T>(into: number[] | undefined, call: () => Promise<T>) => {
    const t0 = performance.now();
    const out = await call();
    into?.push(performance.now() - t0);
    return out;
  };
  /** Lifecycle `i`: create → deliver → verify, each step's latency into its list when given one. */
  const lifecycle = async (i: number, into: { create?: number[]; deliver?: number[]; verify?: number[] } = {}) => {
    const s = services[i % services.length]!;
    const consumer = consumers[i % CONCURRENCY]!;
    const t = unwrap(await timed(into.create, () => consumer.client.createTransaction({ serviceId: s.id, input: INPUT })));
    if (t.status !== 'funds_held') throw new Error(`created as ${t.status}`);
    unwrap(await timed(into.deliver, () => s.provider.client.deliver(t.id, { output: OUTPUT })));
    const v = unwrap(await timed(into.verify, () => consumer.client.verify(t.id)));
    if (v.status !== 'settled') throw new Error(`verified as ${v.status}`);
  };
  // A short warm-up (compiled validators, connection pools, consumers), not counted.
  await pool(Array.from({ length: 32 }, (_, i) => i), CONCURRENCY, (i) => lifecycle(i));
  process.send!({ mark: 'start' });
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  await pool(Array.from({ length: LIFECYCLES }, (_, i) => i), CONCURRENCY, (i) => lifecycle(i, { create, deliver, verify }));
  const seconds = (performance.now() - started) / 1000;
  process.send!({ mark: 'end' });
  const used = process.cpuUsage(cpu0);
  const perSecond = LIFECYCLES / seconds;

  // The latency a caller sees when the exchange is busy but not saturated: lifecycles started at a
  // fixed pace, half the saturated rate just measured, whether or not earlier ones have finished.
  const pacedCreate: number[] = [];
  const count = SATURATED_ONLY ? 10 : Math.max(100, Math.round(LIFECYCLES / 2));
  const interval = 1000 / (perSecond / 2);
  const pacedStart = performance.now();
  await Promise.all(Array.from({ length: count }, async (_, i) => {
    await sleep(Math.max(0, pacedStart + i * interval - performance.now()));
    await lifecycle(i, { create: pacedCreate });
  }));
  const paced = { perSecond: count / ((performance.now() - pacedStart) / 1000), count, create: pacedCreate };
  return { perSecond, seconds, create, deliver, verify, paced, loadCpuMsPerLifecycle: (used.user + used.system) / 1000 / LIFECYCLES };
}

/**
 * The floor of what a lifecycle must write, without anything else: the same database transactions
 * the services commit (creation with its event and hold command, the hold, funds_held, delivery,
 * verification, settlement, settled), with their rows, in a schema of its own on the same server.
 */
async function directWrites(databaseUrl: string) {
  const sql = new pg.Pool({ connectionString: databaseUrl, max: CONCURRENCY });
  await sql.query(`create schema ceiling;
    create table ceiling.tx (id uuid primary key, status text not null, body jsonb not null, updated_at timestamptz not null);
    create table ceiling.outbox (id uuid primary key, payload jsonb not null, published_at timestamptz);
    create table ceiling.wallets (id uuid primary key, balance bigint not null, held bigint not null);
    create table ceiling.ledger (seq bigserial primary key, id uuid not null, wallet_id uuid not null, operation_id text not null, amount bigint not null);
    create table ceiling.holds (transaction_id uuid primary key, status text not null);
    create table ceiling.processed (consumer text, message_id uuid, primary key (consumer, message_id));`);
  const wallets = Array.from({ length: CONCURRENCY + 5 }, () => randomUUID());
  for (const w of wallets) await sql.query('insert into ceiling.wallets values ($1, 1000000000, 0)', [w]);
  const inTx = async (fn: (c: pg.PoolClient) => Promise<void>) => {
    const c = await sql.connect();
    try {
      await c.query('begin');
      await fn(c);
      await c.query('commit');
    } finally {
      c.release();
    }
  };
  const event = (c: pg.PoolClient, payload: object) => c.query('insert into ceiling.outbox values ($1, $2, null)', [randomUUID(), JSON.stringify(payload)]);
  const consumed = (c: pg.PoolClient) => c.query('insert into ceiling.processed values ($1, $2)', ['bench', randomUUID()]);
  const move = async (c: pg.PoolClient, wallet: string, op: string, amount: number, held = 0) => {
    await c.query('update ceiling.wallets set balance = balance + $2, held = held + $3 where id = $1', [wallet, amount, held]);
    await c.query('insert into ceiling.ledger (id, wallet_id, operation_id, amount) values ($1, $2, $3, $4)', [randomUUID(), wallet, op, amount]);
  };
  const lifecycle: number[] = [];
  const started = performance.now();
  await pool(Array.from({ length: LIFECYCLES }, (_, i) => i), CONCURRENCY, async (i) => {
    const t0 = performance.now();
    const id = randomUUID();
    const consumer = wallets[i % CONCURRENCY]!;
    const provider = wallets[CONCURRENCY + (i % 4)]!;
    const platform = wallets[CONCURRENCY + 4]!;
    const body = { input: INPUT, price: 100 };
    await inTx(async (c) => {
      await c.query('insert into ceiling.tx values ($1, $2, $3, now())', [id, 'initiated', JSON.stringify(body)]);
      await event(c, { type: 'initiated', id });
      await event(c, { type: 'holdFunds', id });
    });
    await inTx(async (c) => {
      await consumed(c);
      await c.query('select * from ceiling.wallets where id = $1 for update', [consumer]);
      await move(c, consumer, `hold:${id}`, -100, 100);
      await c.query('insert into ceiling.holds values ($1, $2)', [id, 'held']);
      await event(c, { type: 'placed', id });
    });
    await inTx(async (c) => {
      await consumed(c);
      await c.query('update ceiling.tx set status = $2, updated_at = now() where id = $1', [id, 'funds_held']);
      await event(c, { type: 'funds_held', id });
    });
    await inTx(async (c) => {
      await c.query('select * from ceiling.tx where id = $1 for update', [id]);
      await c.query('update ceiling.tx set status = $2, body = body || $3, updated_at = now() where id = $1', [id, 'delivered', JSON.stringify({ output: OUTPUT })]);
      await event(c, { type: 'delivered', id });
    });
    await inTx(async (c) => {
      await c.query('select * from ceiling.tx where id = $1 for update', [id]);
      await c.query('update ceiling.tx set body = body || $2, updated_at = now() where id = $1', [id, '{"settling":true}']);
      await event(c, { type: 'settle', id });
    });
    await inTx(async (c) => {
      await consumed(c);
      await c.query('select * from ceiling.wallets where id = any($1) order by id for update', [[consumer, provider, platform]]);
      await move(c, consumer, `settle:${id}`, 100, -100);
      await move(c, consumer, `settle:${id}`, -100);
      await move(c, provider, `settle:${id}`, 100);
      await move(c, provider, `settle:${id}`, -5);
      await move(c, platform, `settle:${id}`, 5);
      await c.query('update ceiling.holds set status = $2 where transaction_id = $1', [id, 'settled']);
      await event(c, { type: 'settled', id });
    });
    await inTx(async (c) => {
      await consumed(c);
      await c.query('update ceiling.tx set status = $2, updated_at = now() where id = $1', [id, 'settled']);
      await event(c, { type: 'settled', id });
    });
    lifecycle.push(performance.now() - t0);
  });
  const seconds = (performance.now() - started) / 1000;
  await sql.query('drop schema ceiling cascade');
  await sql.end();
  return { perSecond: LIFECYCLES / seconds, seconds, lifecycle };
}
