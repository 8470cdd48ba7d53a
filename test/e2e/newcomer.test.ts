import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@aex/platform';
import { startTestExchange, type TestExchange } from './harness.js';
import { bash, jsonBlock, shellBlocks } from './walkthrough-kit.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { unwrap } from '@agent-exchange/client';
import { signingMember } from './harness.js';

// A newcomer's path, run as written: the README's two walkthroughs of a first purchase (curl and
// openssl in bash; the client packed with pnpm, installed with npm outside the repository, and the
// example agents run against the exchange), and the signing recipe of docs/signing.md. The only
// thing given to them is where the exchange listens (EX) and, for the client, a home directory of
// their own (HOME), as a new user's machine would have.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

let ex: TestExchange;
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};

beforeAll(async () => {
  // As `pnpm start` runs it: webhooks may go to 127.0.0.1, payments are the sandbox.
  ex = await startTestExchange({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
});
afterAll(async () => {
  await ex.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("the README's first purchase with curl and openssl", () => {
  it('settles the purchase, shows both ledgers and receives every webhook verified', async () => {
    // The walkthrough runs from the repository's root (here a view of it with its examples) and moves
    // to a scratch directory first: it leaves nothing where it started. docs/walkthrough.md goes on in
    // the same shell.
    const cwd = tempDir('aex-curl-');
    symlinkSync(join(repoRoot, 'examples'), join(cwd, 'examples'));
    const script = `${shellBlocks('README.md', 'walkthrough:curl')}\n${shellBlocks('docs/walkthrough.md', 'walkthrough:curl-more')}`;
    const out = await bash(script, { cwd, env: { EX: ex.url, HOOKS_PORT: String(await freePort()) }, timeoutMs: 90_000 });
    expect(readdirSync(cwd)).toEqual(['examples']);
    expect(out).toContain('{"funded":true,"newBalanceCents":5000}');
    expect(out).toMatch(/\{"serviceName":"Word counter","priceCents":250,"compatibilityScore":[0-9.]+\}/);
    expect(out).toContain('{"status":"funds_held","agreedPriceCents":250,"platformFeeCents":13}');
    expect(out).toContain('{"status":"delivered","output":{"words":4}}');
    expect(out).toMatch(/\{"status":"settled","settledAt":"[^"]+"\}/);
    for (const entry of [
      '{"txType":"fund","amountCents":5000,"balanceAfterCents":5000}',
      '{"txType":"fund_hold","amountCents":-250,"balanceAfterCents":5000}',
      '{"txType":"fund_release","amountCents":250,"balanceAfterCents":5000}',
      '{"txType":"settlement_out","amountCents":-250,"balanceAfterCents":4750}',
      '{"txType":"settlement_in","amountCents":250,"balanceAfterCents":250}',
      '{"txType":"platform_fee","amountCents":-13,"balanceAfterCents":237}',
    ]) expect(out).toContain(entry);
    for (const status of ['initiated', 'funds_held', 'delivered', 'settled']) expect(out).toMatch(new RegExp(`verified transaction\\.${status} [0-9a-f-]{36} ${status}`));
    // docs/walkthrough.md: the receipt, a metered purchase, a session of three calls.
    expect(out).toMatch(/\{"status":"settled","priceCents":250,"platformFeeCents":13,"inputDigest":"sha-256=:[A-Za-z0-9+/]+=:"\}/);
    expect(out).toMatch(/\{"kid":"[\w-]+","kty":"OKP","crv":"Ed25519"\}/);
    expect(out).toContain('{"status":"delivered","units":3,"agreedPriceCents":60}');
    expect(out).toContain('{"status":"settled","units":3,"agreedPriceCents":60}');
    expect(out).toMatch(/\[(\{"txType":"(fund_hold|fund_release|settlement_out|fund_return)","amountCents":-?\d+\},?){4}\]/);
    expect(out.match(/\{"status":"settled","agreedPriceCents":250\}/g)).toHaveLength(3);
    expect(out).toContain('{"status":"open","budgetCents":1000,"spentCents":750,"remainingCents":250,"calls":3}');
    expect(out).toContain('{"status":"closed","spentCents":750,"returnedCents":250}');
    expect(out).not.toContain('refused');
    expect(out).not.toContain('"errors":[');
  }, 120_000);
});

describe('the signing recipe of docs/signing.md', () => {
  it('registers a key made by openssl and signs a request the exchange verifies', async () => {
    const owner = await ex.signUp();
    const cwd = tempDir('aex-sign-');
    const out = await bash(shellBlocks('docs/signing.md', 'signing-recipe'), { cwd, env: { EX: ex.url, API_KEY: owner.apiKey, AGENT_ID: owner.agentId }, timeoutMs: 30_000 });
    expect(out.trim().split('\n')).toEqual(['null', '"signs its requests"']);
  });

  it('is the same signed() as the README walkthrough uses', () => {
    const fn = (s: string) => s.slice(s.indexOf('signed() {'), s.indexOf('\n}\n', s.indexOf('signed() {')) + 2);
    expect(fn(shellBlocks('README.md', 'walkthrough:curl'))).toBe(fn(shellBlocks('docs/signing.md', 'signing-recipe')));
  });
});

describe("the README's first purchase with the client, installed from its packed tarball", () => {
  it('packs the client, installs it with npm outside the workspace, and the example agents settle a purchase', async () => {
    const home = tempDir('aex-home-');
    const env = {
      EX: ex.url,
      HOME: home,
      // The user's npm cache, so the client's dependencies come from it rather than the registry each run.
      npm_config_cache: process.env.npm_config_cache ?? join(homedir(), '.npm'),
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      npm_config_update_notifier: 'false',
    };
    const out = await bash(shellBlocks('README.md', 'walkthrough:client'), { cwd: repoRoot, env, timeoutMs: 240_000 });
    expect(out).toMatch(/found Palindrome checker by palindrome-provider for 150 cents/);
    expect(out).toMatch(/bought [0-9a-f-]{36}: funds_held, 150 cents held/);
    expect(out).toContain('delivered: {"normalized":"amanaplanacanalpanama","palindrome":true}');
    expect(out).toContain('verified: settled');
    expect(out).toMatch(/settlement_out\s+-150 {2}balance 850/);
    expect(out).toMatch(/webhook transaction\.funds_held [0-9a-f-]{36}/);
    expect(out).toMatch(/delivered [0-9a-f-]{36}: .* → delivered/);

    // What was installed is the built package alone: JavaScript, declarations, README; no workspace link.
    const installed = join(home, 'my-agents', 'node_modules', '@agent-exchange', 'client');
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { exports: unknown; dependencies: Record<string, string> };
    expect(manifest.exports).toEqual({ '.': { types: './dist/index.d.ts', default: './dist/index.js' } });
    expect(Object.values(manifest.dependencies).some((v) => v.startsWith('workspace:'))).toBe(false);
    expect(readFileSync(join(installed, 'README.md'), 'utf8')).toContain('registerSigningKey');

    // Its types serve a TypeScript agent under `strict`, outside the workspace.
    const project = join(home, 'my-agents');
    writeFileSync(join(project, 'agent.ts'), [
      "import { ExchangeClient, ExchangeError, generateSigningKey, type Outcome } from '@agent-exchange/client';",
      "const client = new ExchangeClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'ae_live_x', signingSecretKey: generateSigningKey().secretKey });",
      "const outcome: Outcome<{ status: string }> = await client.getTransaction('t');",
      'const status: string = outcome.ok ? outcome.data.status : outcome.error.code;',
      'export const checked: [string, typeof ExchangeError] = [status, ExchangeError];',
      // D23.5: a delivery is the API's body; the output alone does not compile; a contract written `as const` types a service.
      "await client.deliver('t', { output: { words: 4 }, usage: { units: 1 } }, { idempotencyKey: 'deliver-t' });",
      '// @ts-expect-error the output goes inside { output }',
      "await client.deliver('t', { words: 4 });",
      "const counter = client.service('s', { inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, outputSchema: { type: 'object', properties: { words: { type: 'integer' } }, required: ['words'] } } as const);",
      "const bought = await counter.buy({ text: 'four words right here' });",
      'export const words: number | undefined = bought.ok ? bought.data.output?.words : undefined;',
      '// @ts-expect-error words is a number',
      "await counter.deliver('t', { output: { words: 'four' } });",
      '',
    ].join('\n'));
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2023', 'DOM'], types: [] }, files: ['agent.ts'] }));
    await run(process.execPath, [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: project });
  }, 300_000);
});

describe("the README's MCP client configuration and spending rules", () => {
  it('installs the tools as written, sets the rules as written (the first kept), and an MCP client configured from it buys and settles within the budget', async () => {
    const home = tempDir('aex-llm-');
    const env = { EX: ex.url, HOME: home, npm_config_cache: process.env.npm_config_cache ?? join(homedir(), '.npm'), npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false' };
    // The tools as installed, then the README's spending rules with them in the same shell (D23.3).
    const out = await bash(`${shellBlocks('README.md', 'walkthrough:agent-tools')}\n${shellBlocks('README.md', 'walkthrough:rules')}`, { cwd: repoRoot, env, timeoutMs: 240_000 });
    expect(out).toMatch(/Funded: the balance is now \$50\.00/);
    expect(out).toMatch(/requireHumanApprovalAboveCents\s+2000 \(kept\)/);
    expect(out).toMatch(/maxDailySpendCents\s+10000 \(new\)/);
    expect(out).toContain('No purchases await approval.');

    const seller = await signingMember(ex.anon, 'word-seller');
    const service = unwrap(await seller.client.createService({
      name: 'Word counter', description: 'Counts the words in a text.', version: '1.0.0', category: 'text',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      outputSchema: { type: 'object', properties: { words: { type: 'integer' } }, required: ['words'] },
      pricing: { model: 'fixed', basePriceCents: 250 }, sla: { maxLatencyMs: 60_000, timeoutMs: 120_000 },
    }));

    // The configuration exactly as the README gives it, with the reader's home directory.
    const config = (jsonBlock('README.md', 'walkthrough:agent-tools') as { mcpServers: Record<string, { command: string; args: string[] }> }).mcpServers['agent-exchange']!;
    const client = new Client({ name: 'readme-agent', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: config.command.replace('/home/you', home), args: config.args, env: { PATH: process.env.PATH ?? '', HOME: home }, stderr: 'pipe' }));
    try {
      const call = async (name: string, args: Record<string, unknown>) => {
        const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
        expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
        return r.structuredContent as Record<string, unknown>;
      };
      const found = await call('search_services', { need: 'count the words in my text' });
      expect((found.matches as unknown as Array<{ serviceId: string }>).map((m) => m.serviceId)).toContain(service.id);
      const bought = (await call('buy_service', { serviceId: service.id, input: { text: 'four words right here' } })).transaction as unknown as { id: string; status: string };
      expect(bought.status).toBe('funds_held');
      unwrap(await seller.client.deliver(bought.id, { output: { words: 4 } }));
      expect(await call('wait_for_delivery', { transactionId: bought.id })).toMatchObject({ delivered: true });
      expect(await call('accept_delivery', { transactionId: bought.id, qualityScore: 90 })).toMatchObject({ transaction: { status: 'settled' } });
      expect(await call('get_balance', {})).toMatchObject({ wallet: { balanceCents: 4750 }, budget: { budgetCents: 2000, spentCents: 250, maxPerCallCents: 500 } });
    } finally {
      await client.close();
    }
  }, 300_000);
});
