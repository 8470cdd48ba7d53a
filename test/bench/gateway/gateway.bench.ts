/**
 * `pnpm bench:gateway`: the gateway's hot path and the money path, each next to a baseline
 * measured in the same run on the same machine.
 *
 * - **Authenticated read**: `GET /v1/agents/{id}` with an API key (key cache, token bucket, identity),
 *   10 connections, against a bare fastify route answering the same body.
 * - **Funding**: `POST /v1/wallets/{id}/fund` (sandbox) on one wallet and spread over 64, 16
 *   connections, against the same writes issued directly with node-postgres (lock the wallet,
 *   insert the ledger entry, move the balance, record the funding session and its outbox event).
 *
 *   pnpm bench:gateway                     10 s per case
 *   pnpm bench:gateway --duration 20
 *   pnpm bench:gateway --json out.json     figures also written as JSON
 *   pnpm bench:gateway --cpu-prof x.cpuprofile   CPU profiles of this process over the measured read
 *                                          (x.cpuprofile) and over its baseline (x.bare.cpuprofile)
 *   pnpm bench:gateway --one-server        this machine's one NATS server instead of a three-node cluster
 *
 * The exchange runs in this process (every service, real Postgres, and by default a three-node NATS
 * JetStream cluster keeping three replicas of every stream and KV bucket — the token buckets
 * included — as the Helm chart deploys it); the load comes from autocannon in a child process, so its
 * CPU is not taken from the measured event loop.
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import autocannon, { type Options, type Result } from 'autocannon';
import Fastify from 'fastify';
import pg from 'pg';
import { ExchangeClient, unwrap } from '@agent-exchange/client';
import { startCpuProfile } from '../cpu-profile.js';
import { withBenchExchange } from '../exchange.js';
import { row, table, writeReport } from '../report.js';

const args = process.argv.slice(2);
const arg = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const DURATION = Number(arg('--duration') ?? 10) || 10;
const CPU_PROF = arg('--cpu-prof');
const CLUSTER = !args.includes('--one-server');
const TARGETS = { readRatio: 0.6, readP99Ms: 10, fundingPerSecond: 1000 };
const FUND_BODY = JSON.stringify({ amountCents: 500 }); // the smallest funding (D13.4)

/** What one load run measured. */
interface Figures { perSecond: number; p50: number; p99: number; errors: number; non2xx: number }

if (args[0] === '--load') {
  // The child: run autocannon with the options given, report the figures, exit.
  const r: Result = await autocannon(JSON.parse(args[1]!) as Options);
  const figures: Figures = { perSecond: (r['2xx']) / r.duration, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx };
  process.send!(figures, undefined, {}, () => process.exit(0));
} else {
  await main();
}

/**
 * `load`, with the CPU this process spent meanwhile per request answered: on a shared machine the
 * rate moves with the other processes' load, the CPU one request costs much less.
 */
async function measured(opts: Options): Promise<Figures & { cpuUsPerRequest: number }> {
  const before = process.cpuUsage();
  const figures = await load(opts);
  const used = process.cpuUsage(before);
  return { ...figures, cpuUsPerRequest: (used.user + used.system) / (figures.perSecond * DURATION) };
}

function load(opts: Options): Promise<Figures> {
  const child = fork(fileURLToPath(import.meta.url), ['--load', JSON.stringify(opts)], { execArgv: ['--import', 'tsx'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve(m as Figures));
    child.once('exit', (code) => reject(new Error(`the load process exited with ${code} before reporting`)));
  });
}

async function main(): Promise<void> {
  await withBenchExchange(async ({ url, db }) => {
    const anon = new ExchangeClient({ baseUrl: url });
    const member = async (i: number) => {
      const acc = unwrap(await anon.createAccount({ accountType: 'individual', email: `bench-${i}-${randomUUID()}@example.com`, displayName: `Bench ${i}`, agent: { name: 'owner' } }));
      return { id: acc.agent.id, apiKey: acc.apiKey };
    };
    const reader = await member(0);
    const auth = { authorization: `Bearer ${reader.apiKey}` };
    const body = await (await fetch(`${url}/v1/agents/${reader.id}`, { headers: auth })).text();

    // Authenticated read, and its baseline: bare fastify answering the same bytes.
    const bare = Fastify({ logger: false });
    bare.get('/v1/agents/:id', async (_req, reply) => reply.header('content-type', 'application/json; charset=utf-8').send(body));
    const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });
    const readOpts = (base: string): Options => ({ url: `${base}/v1/agents/${reader.id}`, connections: 10, duration: DURATION, headers: auth });
    const bareProfile = CPU_PROF ? await startCpuProfile() : undefined;
    const baseline = await measured(readOpts(bareUrl));
    await bareProfile?.stop(CPU_PROF!.replace(/(\.cpuprofile)?$/, '.bare.cpuprofile'));
    await bare.close();
    await load({ ...readOpts(url), duration: 2 }); // warm-up: caches, JIT
    const profile = CPU_PROF ? await startCpuProfile() : undefined;
    const read = await measured(readOpts(url));
    await profile?.stop(CPU_PROF!);

    // Funding: one wallet (every request on the same row) and 64 wallets.
    const wallets = await Promise.all(Array.from({ length: 64 }, (_, i) => member(i + 1)));
    const fundOpts = (targets: { id: string; apiKey: string }[]): Options => ({
      url, connections: 16, duration: DURATION,
      requests: targets.map((t) => ({ method: 'POST', path: `/v1/wallets/${t.id}/fund`, headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' }, body: FUND_BODY })),
    });
    // Each case is checked once by hand first: a benchmark of error answers measures nothing.
    const probe = await fetch(`${url}/v1/wallets/${wallets[0]!.id}/fund`, { method: 'POST', headers: { authorization: `Bearer ${wallets[0]!.apiKey}`, 'content-type': 'application/json' }, body: FUND_BODY });
    if (!probe.ok) throw new Error(`funding answered ${probe.status}: ${await probe.text()}`);
    const fundOne = await load(fundOpts([wallets[0]!]));
    const fundMany = await load(fundOpts(wallets));
    const direct = await directFunding(db.url, 16, DURATION);

    const readOk = read.perSecond / baseline.perSecond >= TARGETS.readRatio;
    const rows = [
      row({ case: 'authenticated GET /v1/agents/{id}, 10 connections', value: read.perSecond, unit: 'req/s', baseline: baseline.perSecond, baselineName: 'bare fastify', target: `ratio ≥ ${TARGETS.readRatio}`, met: readOk }),
      row({ case: 'authenticated GET p99', value: read.p99, unit: 'ms', baseline: baseline.p99, baselineName: 'bare fastify', lowerIsBetter: true, target: `≤ ${TARGETS.readP99Ms} ms`, met: read.p99 <= TARGETS.readP99Ms }),
      row({ case: 'funding, one wallet, 16 connections', value: fundOne.perSecond, unit: '/s', baseline: direct.perSecond, baselineName: 'node-postgres', target: `≥ ${TARGETS.fundingPerSecond} /s`, met: fundOne.perSecond >= TARGETS.fundingPerSecond }),
      row({ case: 'funding, 64 wallets, 16 connections', value: fundMany.perSecond, unit: '/s', baseline: direct.perSecond, baselineName: 'node-postgres', target: `≥ ${TARGETS.fundingPerSecond} /s`, met: fundMany.perSecond >= TARGETS.fundingPerSecond }),
    ];
    const nats = CLUSTER ? 'a three-node NATS cluster, three replicas' : 'one NATS server';
    console.log(`\nGateway and money path, ${DURATION} s per case (load from another process; ${nats})\n`);
    console.log(table(rows));
    console.log(`  CPU of this process per request: authenticated GET ${read.cpuUsPerRequest.toFixed(0)} µs, bare fastify ${baseline.cpuUsPerRequest.toFixed(0)} µs (ratio ${(baseline.cpuUsPerRequest / read.cpuUsPerRequest).toFixed(3)})`);
    console.log(`  funding p99: one wallet ${fundOne.p99} ms, 64 wallets ${fundMany.p99} ms`);
    const failures = [read, baseline, fundOne, fundMany].reduce((n, x) => n + x.errors + x.non2xx, 0);
    if (failures > 0) console.log(`\n  ${failures} requests failed or answered non-2xx: the figures count 2xx answers only`);
    writeReport(arg('--json'), 'gateway', rows, { durationSeconds: DURATION, cluster: CLUSTER, read, readBaseline: baseline, fundOne, fundMany, fundingBaseline: direct, failures });
  }, { cluster: CLUSTER });
}

/** The writes of one sandbox funding, issued directly by `concurrency` clients for `seconds`. */
async function directFunding(url: string, concurrency: number, seconds: number): Promise<{ perSecond: number }> {
  const sql = new pg.Pool({ connectionString: url, max: concurrency });
  await sql.query(`
    create schema baseline;
    create table baseline.wallets (id uuid primary key, balance_cents bigint not null, updated_at timestamptz not null);
    create table baseline.ledger (id bigserial primary key, wallet_id uuid not null, operation_id uuid not null, amount_cents bigint not null, balance_after bigint not null, description text not null, created_at timestamptz not null);
    create table baseline.sessions (id uuid primary key, wallet_id uuid not null, amount_cents bigint not null, status text not null, created_at timestamptz not null);
    create table baseline.outbox (id uuid primary key, payload jsonb not null, published_at timestamptz);`);
  const ids = Array.from({ length: 64 }, () => randomUUID());
  for (const id of ids) await sql.query('insert into baseline.wallets values ($1, 0, now())', [id]);
  const deadline = performance.now() + seconds * 1000;
  let done = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async (_, worker) => {
    const c = await sql.connect();
    try {
      for (let i = worker; performance.now() < deadline; i += concurrency) {
        const wallet = ids[i % ids.length]!;
        const session = randomUUID();
        await c.query('begin');
        const { rows } = await c.query<{ balance_cents: number }>('select balance_cents from baseline.wallets where id = $1 for update', [wallet]);
        await c.query('insert into baseline.ledger (wallet_id, operation_id, amount_cents, balance_after, description, created_at) values ($1, $2, 1, $3, $4, now())', [wallet, session, Number(rows[0]!.balance_cents) + 1, `Funded through sandbox session ${session}`]);
        await c.query('update baseline.wallets set balance_cents = balance_cents + 1, updated_at = now() where id = $1', [wallet]);
        await c.query('insert into baseline.sessions values ($1, $2, 1, $3, now())', [session, wallet, 'paid']);
        await c.query('insert into baseline.outbox (id, payload) values ($1, $2)', [randomUUID(), JSON.stringify({ type: 'wallet.funded', wallet, amountCents: 1 })]);
        await c.query('commit');
        done++;
      }
    } finally {
      c.release();
    }
  }));
  const perSecond = done / ((performance.now() - started) / 1000);
  await sql.query('drop schema baseline cascade');
  await sql.end();
  return { perSecond };
}
