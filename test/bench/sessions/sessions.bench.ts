/**
 * `pnpm bench:sessions`: what prepaid sessions (D17.4–D17.7), metered purchases (D17.1–D17.3) and
 * receipts (D18) cost, each next to plain lifecycles measured in the same run on the same exchange:
 *
 * - plain lifecycles: create → deliver → verify, 16 callers (the baseline);
 * - metered lifecycles: the same with `maxUnits` and a delivery's `usage` (target: within noise);
 * - session calls: create in an open session → deliver, settled by the delivery, 16 callers, each on
 *   a session of its own (target: ≥ 3 × the lifecycles), and the p99 of a call's create at half the
 *   saturated rate (target ≤ 25 ms); a thousand calls by 16 callers on one session, closed exact;
 * - receipts: the CPU of signing one receipt (claims, JCS-free JSON, EdDSA) against the exchange's CPU
 *   per lifecycle measured above (target ≤ 10 %).
 *
 * Everything is real: Postgres, NATS JetStream, every service, HTTP. The load runs in this process
 * (node:http, connections kept alive), the same for every case, so the cases compare as they are.
 *
 *   pnpm bench:sessions                 600 of each
 *   pnpm bench:sessions --count 200     a quicker look
 *   pnpm bench:sessions --json out.json figures also written as JSON (what `pnpm bench` tabulates)
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ExchangeClient, generateSigningKey, unwrap } from '@agent-exchange/client';
import { platformFee } from '@aex/transactions';
import { keepAliveFetch } from '../http-fetch.js';
import { withBenchExchange } from '../exchange.js';
import { row, writeReport } from '../report.js';

const args = process.argv.slice(2);
const COUNT = Number(args[args.indexOf('--count') + 1] ?? 600) || 600;
const CONCURRENCY = 16;
const TARGETS = { sessionRatio: 3, createP99Ms: 25, meteredWithin: 0.15, receiptShare: 0.1 };
const INPUT = { payload: 'hello world' };
const OUTPUT = { digest: 'b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9' };

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const fmt = (n: number) => n.toFixed(1);

async function pool(n: number, workers: number, run: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: workers }, async () => {
    while (next < n) await run(next++);
  }));
}

await withBenchExchange(async ({ url, stack }) => {
  const anon = new ExchangeClient({ baseUrl: url, fetch: keepAliveFetch() });
  const agent = async (i: number, funds: number) => {
    const owner = unwrap(await anon.createAccount({ accountType: 'organization', email: `bench-${i}-${randomUUID()}@example.com`, displayName: `Bench ${i}`, agent: { name: 'owner' } }));
    const keys = generateSigningKey();
    const made = unwrap(await anon.as({ apiKey: owner.apiKey }).createAgent({ name: `agent-${i}`, agentType: 'persistent', signingKeyPublic: keys.publicKey }));
    const client = anon.as({ apiKey: made.apiKey, signingSecretKey: keys.secretKey });
    for (let left = funds; left > 0; left -= 1_000_000) unwrap(await client.fund(made.id, Math.min(left, 1_000_000)));
    return { id: made.id, client };
  };
  const provider = await agent(0, 0);
  const service = (pricing: object) => provider.client.createService({
    name: `Digest ${randomUUID().slice(0, 6)}`, description: 'Computes the SHA-256 digest of a text payload.', version: '1.0.0', category: 'crypto',
    inputSchema: { type: 'object', required: ['payload'], properties: { payload: { type: 'string' } } },
    outputSchema: { type: 'object', required: ['digest'], properties: { digest: { type: 'string', pattern: '^[0-9a-f]{64}$' } } },
    pricing: pricing as never, sla: { maxLatencyMs: 60_000, timeoutMs: 600_000 },
  });
  const fixedId = unwrap(await service({ model: 'fixed', basePriceCents: 100 })).id;
  const meteredId = unwrap(await service({ model: 'per_unit', basePriceCents: 10, unit: 'page' })).id;
  const consumers = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => agent(100 + i, 100 * 10 * COUNT)));

  /**
   * `n` of `op` by 16 callers: per second, and each op's create latency. With `paidOut`, the clock
   * stops only once it is true: the work an op leaves behind (a session call's capture into the
   * ledger) is counted in its time.
   */
  const measure = async (label: string, op: (i: number, create: number[]) => Promise<void>, paidOut?: () => Promise<boolean>) => {
    await pool(32, CONCURRENCY, (i) => op(i, [])); // warm-up, not counted
    if (paidOut) while (!(await paidOut())) await sleep(5);
    const create: number[] = [];
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await pool(COUNT, CONCURRENCY, (i) => op(i, create));
    if (paidOut) while (!(await paidOut())) await sleep(5);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const result = { perSecond: COUNT / seconds, create, cpuMsPerOp: (cpu.user + cpu.system) / 1000 / COUNT };
    console.log(`  ${label.padEnd(26)} ${fmt(result.perSecond)} /s   create p50 / p99 ${fmt(quantile(create, 0.5))} / ${fmt(quantile(create, 0.99))} ms   CPU ${fmt(result.cpuMsPerOp)} ms each`);
    return result;
  };
  const timedCreate = async <T>(create: number[], call: () => Promise<T>) => {
    const t = performance.now();
    const out = await call();
    create.push(performance.now() - t);
    return out;
  };
  const lifecycle = (metered: boolean) => async (i: number, create: number[]) => {
    const c = consumers[i % CONCURRENCY]!;
    const t = unwrap(await timedCreate(create, () => c.client.createTransaction(metered ? { serviceId: meteredId, input: INPUT, maxUnits: 10 } : { serviceId: fixedId, input: INPUT })));
    if (t.status !== 'funds_held') throw new Error(`created as ${t.status}`);
    unwrap(await provider.client.deliver(t.id, { output: OUTPUT, ...(metered && { usage: { units: 7 } }) }));
    if (unwrap(await c.client.verify(t.id)).status !== 'settled') throw new Error('not settled');
  };
  const sessions = await Promise.all(consumers.map(async (c) => unwrap(await c.client.openSession({ serviceId: fixedId, budgetCents: 100 * (2 * COUNT + 100), expiresInSeconds: 86_400 })).id));
  const sessionCall = async (i: number, create: number[]) => {
    const c = consumers[i % CONCURRENCY]!;
    const t = unwrap(await timedCreate(create, () => c.client.callInSession(sessions[i % CONCURRENCY]!, INPUT)));
    if (t.status !== 'funds_held') throw new Error(`call created as ${t.status}`);
    const d = unwrap(await provider.client.deliver(t.id, { output: OUTPUT }));
    if (d.status !== 'settled') throw new Error(`call delivered as ${d.status}`);
    paidCalls++;
  };
  let paidCalls = 0;

  console.log(`\n${COUNT} of each, ${CONCURRENCY} callers`);
  const plain = await measure('plain lifecycles', lifecycle(false));
  const metered = await measure('metered lifecycles', lifecycle(true));
  // D17.7: a call settles as it is delivered, its capture into the ledger following: the run ends when the provider has been paid for every call.
  const providerPaid = async () => unwrap(await provider.client.getWallet(provider.id)).balanceCents;
  const paidBefore = await providerPaid();
  const paidOut = async () => (await providerPaid()) - paidBefore >= paidCalls * (100 - platformFee(100));
  const calls = await measure('session calls', sessionCall, paidOut);

  // A thousand calls riding on one hold: all 16 callers in one session, each call taking its row lock
  // for a moment. Closed at the end: every cent of the budget spent, nothing left to return.
  const ONE = 1000;
  const one = unwrap(await consumers[0]!.client.openSession({ serviceId: fixedId, budgetCents: 100 * ONE, expiresInSeconds: 3600 })).id;
  const oneCall = async () => {
    const t = unwrap(await consumers[0]!.client.callInSession(one, INPUT));
    if (unwrap(await provider.client.deliver(t.id, { output: OUTPUT })).status !== 'settled') throw new Error('a call of the one session did not settle');
    paidCalls++;
  };
  const paidBeforeOne = await providerPaid();
  const callsBeforeOne = paidCalls;
  const t1 = performance.now();
  await pool(ONE, CONCURRENCY, oneCall);
  while ((await providerPaid()) - paidBeforeOne < (paidCalls - callsBeforeOne) * (100 - platformFee(100))) await sleep(5);
  const onePerSecond = ONE / ((performance.now() - t1) / 1000);
  unwrap(await consumers[0]!.client.closeSession(one));
  let closed = unwrap(await consumers[0]!.client.getSession(one));
  while (closed.status !== 'closed') closed = (await sleep(20), unwrap(await consumers[0]!.client.getSession(one)));
  if (closed.spentCents !== 100 * ONE || closed.returnedCents !== 0 || closed.calls !== ONE) throw new Error(`the one session does not add up: ${JSON.stringify(closed)}`);
  console.log(`  ${ONE} calls on one session        ${fmt(onePerSecond)} /s   (closed: ${closed.spentCents} spent, ${closed.returnedCents} returned)`);

  // A call's create when the exchange is busy but not saturated: calls started at half the rate just measured.
  const paced: number[] = [];
  const pacedCount = Math.max(100, Math.round(COUNT / 2));
  const interval = 1000 / (calls.perSecond / 2);
  const start = performance.now();
  await Promise.all(Array.from({ length: pacedCount }, async (_, i) => {
    await sleep(Math.max(0, start + i * interval - performance.now()));
    await sessionCall(i, paced);
  }));
  const pacedP99 = quantile(paced, 0.99);
  console.log(`  session call create at half rate (${fmt(calls.perSecond / 2)} /s): p50 / p99 ${fmt(quantile(paced, 0.5))} / ${fmt(pacedP99)} ms`);

  // The CPU of one receipt's signature, against the CPU the exchange spent per plain lifecycle.
  const ring = stack.transactions.deps.keyRing;
  const issuer = ring.issuer(url);
  const claims = { transactionId: randomUUID(), status: 'settled' as const, outcome: null, serviceId: fixedId, serviceRevision: 1, serviceVersion: '1.0.0', consumer: issuer.agentDid(randomUUID()), provider: issuer.agentDid(provider.id), inputDigest: null, outputDigest: null, units: 1, priceCents: 100, platformFeeCents: 5, refundedCents: 0, currency: 'USD' as const, sessionId: null, deliveredAt: new Date().toISOString(), settledAt: new Date().toISOString(), delivery: null };
  for (let i = 0; i < 200; i++) await issuer.sign(claims, new Date());
  const cpu0 = process.cpuUsage();
  const signs = 2000;
  for (let i = 0; i < signs; i++) await issuer.sign(claims, new Date());
  const used = process.cpuUsage(cpu0);
  const receiptMs = (used.user + used.system) / 1000 / signs;
  const receiptShare = receiptMs / plain.cpuMsPerOp;
  console.log(`  receipt signature: ${(receiptMs * 1000).toFixed(0)} µs of CPU, ${(100 * receiptShare).toFixed(1)} % of a lifecycle's ${fmt(plain.cpuMsPerOp)} ms (load included)`);

  const sessionRatio = calls.perSecond / plain.perSecond;
  const meteredRatio = metered.perSecond / plain.perSecond;
  console.log(`\n  session calls ÷ lifecycles: ${sessionRatio.toFixed(2)} (target ≥ ${TARGETS.sessionRatio})   metered ÷ plain: ${meteredRatio.toFixed(2)} (within ${100 * TARGETS.meteredWithin} %)`);
  writeReport(args.includes('--json') ? args[args.indexOf('--json') + 1] : undefined, 'sessions', [
    row({ case: `session calls, ${CONCURRENCY} callers`, value: calls.perSecond, unit: '/s', baseline: plain.perSecond, baselineName: 'plain lifecycles', target: `ratio ≥ ${TARGETS.sessionRatio}`, met: sessionRatio >= TARGETS.sessionRatio }),
    row({ case: 'session call create p99 at half rate', value: pacedP99, unit: 'ms', baseline: quantile(plain.create, 0.5), baselineName: 'lifecycle create p50', lowerIsBetter: true, target: `≤ ${TARGETS.createP99Ms} ms`, met: pacedP99 <= TARGETS.createP99Ms }),
    row({ case: `${ONE} calls on one session, ${CONCURRENCY} callers`, value: onePerSecond, unit: '/s', baseline: calls.perSecond, baselineName: 'session calls, a session each', target: 'stated', met: null }),
    row({ case: `metered lifecycles, ${CONCURRENCY} callers`, value: metered.perSecond, unit: '/s', baseline: plain.perSecond, baselineName: 'plain lifecycles', target: `within ${100 * TARGETS.meteredWithin} %`, met: meteredRatio >= 1 - TARGETS.meteredWithin }),
    row({ case: 'receipt signature CPU', value: receiptMs, unit: 'ms', baseline: plain.cpuMsPerOp, baselineName: 'CPU per lifecycle', lowerIsBetter: true, target: `≤ ${100 * TARGETS.receiptShare} %`, met: receiptShare <= TARGETS.receiptShare }),
  ], { count: COUNT, concurrency: CONCURRENCY, plain: plain.perSecond, metered: metered.perSecond, sessionCalls: calls.perSecond, oneSession: onePerSecond, pacedP99, receiptMs });
});
