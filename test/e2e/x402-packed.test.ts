import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { startTestExchange, type TestExchange } from './harness.js';
import { installPacked } from './packed-kit.js';
import { funded, ledgerOf, party, serviceBody, waitForStatus, type Party } from './transaction-kit.js';

// D19.3: @agent-exchange/x402 as people get it — packed with pnpm (which builds it), installed with
// npm into a project outside the workspace next to the stock @x402/express and @x402/fetch — sells
// and buys a resource against a running exchange, in a plain Node script of that project.

const run = promisify(execFile);
let ex: TestExchange;
let dir: string;
let project: string;
let provider: Party;
let buyer: Party;
let serviceId: string;

const SCRIPT = `
import http from 'node:http';
import express from 'express';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from '@x402/fetch';
import { AexEscrowClient, AexEscrowServer, aexEscrowOption, aexNetwork, exchangeFacilitator } from '@agent-exchange/x402';

const e = process.env;
const server = new x402ResourceServer(exchangeFacilitator({ baseUrl: e.EXCHANGE_URL, apiKey: e.PROVIDER_KEY }))
  .register(aexNetwork(e.PUBLIC_BASE_URL), new AexEscrowServer());
const app = express();
app.use(paymentMiddleware({
  'GET /weather': { accepts: aexEscrowOption({ baseUrl: e.PUBLIC_BASE_URL, payTo: e.PROVIDER_ID, serviceId: e.SERVICE_ID, priceCents: 80 }), description: 'Weather' },
}, server));
app.get('/weather', (_req, res) => res.json({ city: 'Lyon', celsius: 21 }));
const listening = http.createServer(app).listen(0, '127.0.0.1');
await new Promise((r) => listening.once('listening', r));
const url = 'http://127.0.0.1:' + listening.address().port + '/weather';

// 80 cents: under x402's default spend cap of $1 a payment, which the scheme's USD (2 decimals) lets it read.
const unpaid = await fetch(url);
const client = new x402Client().register('aex:*', new AexEscrowClient({ agentId: e.BUYER_ID, signingKey: e.BUYER_SECRET }));
const paid = await wrapFetchWithPayment(fetch, client)(url);
console.log(JSON.stringify({ unpaid: unpaid.status, status: paid.status, body: await paid.json(), settlement: decodePaymentResponseHeader(paid.headers.get('payment-response')) }));
listening.close();
`;

beforeAll(async () => {
  ex = await startTestExchange({ SAGA_WAIT_MS: '5000' });
  dir = mkdtempSync(join(tmpdir(), 'aex-x402-'));
  project = await installPacked(['@agent-exchange/x402'], dir);
  // The stock x402 packages a provider and a buyer install next to ours (as the README says).
  await run('npm', ['install', '--no-fund', '--no-audit', '--no-update-notifier', '@x402/express@2.27.0', '@x402/fetch@2.27.0', 'express@5.3.0'], {
    cwd: project, env: { ...process.env, npm_config_cache: process.env.npm_config_cache ?? join(homedir(), '.npm') }, maxBuffer: 16 * 1024 * 1024,
  });
  provider = await party(ex);
  buyer = await funded(ex, 1_000);
  serviceId = unwrap(await provider.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: 80 } }))).id;
}, 300_000);

afterAll(async () => {
  await ex?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the packed @agent-exchange/x402 (D19.3)', () => {
  it('installs as built JavaScript with its types, depending on the official x402 packages rather than copying them', () => {
    const pkgDir = join(project, 'node_modules', '@agent-exchange', 'x402');
    const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { exports: Record<string, { types: string; default: string }>; dependencies: Record<string, string> };
    expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
    expect(existsSync(join(pkgDir, 'dist', 'index.js')) && existsSync(join(pkgDir, 'dist', 'index.d.ts'))).toBe(true);
    expect(Object.keys(pkg.dependencies)).toContain('@x402/core');
    expect(Object.keys(pkg.dependencies).some((d) => d.startsWith('@aex/'))).toBe(false);
    const code = readFileSync(join(pkgDir, 'dist', 'index.js'), 'utf8');
    expect(code).toMatch(/from "@x402\/core\/server"/);
    expect(code).not.toMatch(/class HTTPFacilitatorClient|class x402Client/);
  });

  it('a provider\'s express server and a buyer\'s fetch, in a project of their own, pay through the running exchange', async () => {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', SCRIPT], {
      cwd: project,
      env: {
        ...process.env, EXCHANGE_URL: ex.url, PUBLIC_BASE_URL: ex.config.PUBLIC_BASE_URL, PROVIDER_KEY: provider.apiKey, PROVIDER_ID: provider.agentId,
        SERVICE_ID: serviceId, BUYER_ID: buyer.agentId, BUYER_SECRET: buyer.keys!.secretKey,
      },
      timeout: 60_000,
    });
    const out = JSON.parse(stdout.trim().split('\n').pop()!) as { unpaid: number; status: number; body: unknown; settlement: { success: boolean; transaction: string } };
    expect(out).toMatchObject({ unpaid: 402, status: 200, body: { city: 'Lyon', celsius: 21 }, settlement: { success: true } });
    const t = await waitForStatus(buyer, out.settlement.transaction, 'settled');
    expect(t).toMatchObject({ x402: true, agreedPriceCents: 80, platformFeeCents: 4 });
    expect(await ledgerOf(provider, t.id)).toEqual([['platform_fee', -4], ['settlement_in', 80]]);
  });
});
