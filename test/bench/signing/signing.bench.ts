/**
 * `pnpm bench:signing`: what signing a purchase with RFC 9421 (D20: `Signature-Input`, `Signature`,
 * `Content-Digest`) costs next to the X-AE-Signature headers (D3), measured in the same run on the
 * same exchange: creates of a purchase by 16 callers, each round signed one way then the other
 * (rounds alternate, so a slower minute of the machine weighs on both). Each created purchase is
 * cancelled at once, so the wallets end as they began.
 *
 * Figures: creates per second, and the CPU of this process per create — the exchange runs in it,
 * and so do the signers (the client's work is counted too). Target: an RFC 9421-signed create costs
 * within 10 % of an X-AE-signed one.
 *
 *   pnpm bench:signing                  4 rounds of 400 creates each way
 *   pnpm bench:signing --count 200      a quicker look
 *   pnpm bench:signing --json out.json  figures also written as JSON (what `pnpm bench` tabulates)
 */
import { randomUUID } from 'node:crypto';
import { ExchangeClient, generateSigningKey, unwrap } from '@agent-exchange/client';
import { keepAliveFetch } from '../http-fetch.js';
import { withBenchExchange } from '../exchange.js';
import { row, writeReport } from '../report.js';

const args = process.argv.slice(2);
const arg = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const COUNT = Number(arg('--count') ?? 400) || 400;
const ROUNDS = 4;
const CONCURRENCY = 16;
const TARGET = 1.1;
const INPUT = { payload: 'hello world' };
type Scheme = 'x-ae' | 'rfc9421';

async function pool(n: number, workers: number, run: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: workers }, async () => {
    while (next < n) await run(next++);
  }));
}

await withBenchExchange(async ({ url }) => {
  const fetch = keepAliveFetch();
  const anon = new ExchangeClient({ baseUrl: url, fetch });
  const agent = async (i: number, funds: number) => {
    const owner = unwrap(await anon.createAccount({ accountType: 'organization', email: `bench-${i}-${randomUUID()}@example.com`, displayName: `Bench ${i}`, agent: { name: 'owner' } }));
    const keys = generateSigningKey();
    const made = unwrap(await anon.as({ apiKey: owner.apiKey }).createAgent({ name: `agent-${i}`, agentType: 'persistent', signingKeyPublic: keys.publicKey }));
    const as = (scheme: Scheme) => anon.as({ apiKey: made.apiKey, signingSecretKey: keys.secretKey, signatureScheme: scheme, agentId: made.id });
    const client = as('x-ae');
    if (funds > 0) unwrap(await client.fund(made.id, funds));
    return { id: made.id, client, by: { 'x-ae': client, rfc9421: as('rfc9421') } };
  };
  const provider = await agent(0, 0);
  const serviceId = unwrap(await provider.client.createService({
    name: `Digest ${randomUUID().slice(0, 6)}`, description: 'Computes the SHA-256 digest of a text payload.', version: '1.0.0', category: 'crypto',
    inputSchema: { type: 'object', required: ['payload'], properties: { payload: { type: 'string' } } },
    outputSchema: { type: 'object', required: ['digest'], properties: { digest: { type: 'string' } } },
    pricing: { model: 'fixed', basePriceCents: 100 }, sla: { maxLatencyMs: 60_000, timeoutMs: 600_000 },
  })).id;
  const consumers = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => agent(100 + i, 10_000)));

  const create = (scheme: Scheme) => async (i: number) => {
    const c = consumers[i % CONCURRENCY]!;
    const t = unwrap(await c.by[scheme].createTransaction({ serviceId, input: INPUT }));
    if (t.status !== 'funds_held') throw new Error(`created as ${t.status}`);
    unwrap(await c.client.cancel(t.id));
  };
  const totals = { 'x-ae': { seconds: 0, cpuUs: 0, n: 0 }, rfc9421: { seconds: 0, cpuUs: 0, n: 0 } };
  const round = async (scheme: Scheme) => {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await pool(COUNT, CONCURRENCY, create(scheme));
    const cpu = process.cpuUsage(cpu0);
    const t = totals[scheme];
    t.seconds += (performance.now() - t0) / 1000;
    t.cpuUs += cpu.user + cpu.system;
    t.n += COUNT;
  };
  for (const scheme of ['x-ae', 'rfc9421'] as const) await pool(64, CONCURRENCY, create(scheme)); // warm-up: caches, JIT, key ids
  console.log(`\n${ROUNDS} rounds of ${COUNT} creates (each cancelled) each way, ${CONCURRENCY} callers`);
  for (let r = 0; r < ROUNDS; r++) {
    await round(r % 2 === 0 ? 'x-ae' : 'rfc9421');
    await round(r % 2 === 0 ? 'rfc9421' : 'x-ae');
  }
  const figures = (s: Scheme) => ({ perSecond: totals[s].n / totals[s].seconds, cpuMsPerCreate: totals[s].cpuUs / 1000 / totals[s].n });
  const xae = figures('x-ae');
  const std = figures('rfc9421');
  for (const [name, f] of [['X-AE-Signature', xae], ['RFC 9421', std]] as const) {
    console.log(`  ${name.padEnd(16)} ${f.perSecond.toFixed(1)} creates/s   CPU ${f.cpuMsPerCreate.toFixed(2)} ms each (create + cancel)`);
  }
  const ratio = std.cpuMsPerCreate / xae.cpuMsPerCreate;
  console.log(`  RFC 9421 ÷ X-AE CPU per create: ${ratio.toFixed(3)} (target ≤ ${TARGET})`);
  writeReport(arg('--json'), 'signing', [
    row({ case: 'RFC 9421-signed create + cancel, CPU each', value: std.cpuMsPerCreate, unit: 'ms', baseline: xae.cpuMsPerCreate, baselineName: 'X-AE-signed', lowerIsBetter: true, target: `ratio ≤ ${TARGET}`, met: ratio <= TARGET }),
    row({ case: 'RFC 9421-signed creates + cancels', value: std.perSecond, unit: '/s', baseline: xae.perSecond, baselineName: 'X-AE-signed', target: '—', met: null }),
  ], { count: COUNT, rounds: ROUNDS, concurrency: CONCURRENCY, xae, rfc9421: std });
});
