import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@aex/platform';
import { ExchangeClient, unwrap } from '@agent-exchange/client';
import { signingMember, uniqueEmail } from './harness.js';
import { bash, shellBlocks } from './walkthrough-kit.js';

// Exactly what a newcomer runs — the README's `pnpm start`, from the repository root, with
// no configuration — at a terminal (a pseudo-terminal made by `script`), stopped with Ctrl-C typed
// into it. Whatever the other tests do with their own wiring, this one fails when the shipped
// command starts degraded, warns, or ends badly.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
// Variables that would make `pnpm start` use something else than its own local servers.
const FOREIGN = ['DATABASE_URL', 'NATS_URL', 'PORT', 'LOG_FORMAT', 'LOG_LEVEL', 'DISCOVERY_MEANING', 'BUS_NAMESPACE'];

let dataDir: string;
let child: ChildProcessWithoutNullStreams;
let output = '';
let url: string;
const exited = () => new Promise<number | null>((resolve) => {
  if (child.exitCode !== null) return resolve(child.exitCode);
  child.once('exit', (code) => resolve(code));
});

/** The terminal's text without colours and carriage returns. */
const screen = () => output.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '').replace(/\r/g, '');
/** Log lines of a level above info (pino-pretty's labels), and anything that looks like a stack trace. */
const troubles = () => screen().split('\n').filter((l) => /^\[[\d:.]+\] (WARN|ERROR|FATAL)\b|^\s+at |ELIFECYCLE|ERR_|Unknown file extension/.test(l));

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'aex-shipped-'));
  // Postgres runs as its own user when the tests run as root: it must reach its data directory.
  chmodSync(dataDir, 0o755);
  const env: Record<string, string | undefined> = { ...process.env, AEX_DATA_DIR: dataDir, PORT: '0' };
  for (const name of FOREIGN) if (name !== 'PORT') delete env[name];
  // -e: the command's exit code; -f: output as it comes; the typescript file is not wanted.
  // `script -c` runs the command under `$SHELL -c`. At a real terminal the person's shell puts pnpm in
  // a foreground job of its own and is not signalled by Ctrl-C; `exec` gives the same here whatever
  // $SHELL is (dash, unlike bash, would stay between and die of the SIGINT itself, with 130).
  child = spawn('script', ['-qfec', 'exec pnpm start', '/dev/null'], { cwd: repoRoot, env, stdio: 'pipe' });
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`pnpm start did not listen within 90 s:\n${screen()}`)), 90_000);
    const look = () => {
      const m = /Agent exchange listening on (http:\/\/\S+)/.exec(screen());
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout.on('data', look);
    child.once('exit', (code) => reject(new Error(`pnpm start exited with ${code}:\n${screen()}`)));
  });
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGKILL');
    await exited();
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

// One product's life, from `pnpm start` to Ctrl-C: each test before the last uses it on its own, and
// the last one ends it, so the order stays as written.
describe('the README run command, as a newcomer meets it', { shuffle: false }, () => {
  it('starts ready, with discovery by meaning and not a single warning', async () => {
    const ready = await fetch(`${url}/readyz`);
    const body = (await ready.json()) as { data: { checks: { name: string; ok: boolean }[] } };
    expect(ready.status).toBe(200);
    expect(body.data.checks).toContainEqual({ name: 'catalog.discovery-meaning', ok: true });
    expect(troubles()).toEqual([]);
    // Readable lines for a person at a terminal, not JSON.
    expect(screen()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: embedded Postgres started/m);
    expect(screen()).not.toMatch(/^\{"level"/m);
    // Where a newcomer goes next.
    expect(screen()).toContain('A first purchase, step by step: README.md');
    expect((await fetch(`${url}/docs/api.md`)).status).toBe(200);
    expect(screen()).toContain('For LLM agents and terminals (MCP server, aex CLI)');
    expect((await fetch(`${url}/.well-known/agent-card.json`)).status).toBe(200);
  });

  it('points people at the console and the metrics, with an operator token of the data directory\'s own', async () => {
    const file = join(dataDir, 'admin-token');
    expect(screen()).toContain(`Console for people: ${url}/console/ (owners: 'aex console', or the owner agent's API key; operators: the token in ${file})`);
    expect(screen()).toContain(`Prometheus metrics: ${url}/metrics`);
    // Kept for its owner only, never printed.
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const token = readFileSync(file, 'utf8').trim();
    expect(screen()).not.toContain(token);
    const signIn = await fetch(`${url}/console/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ operatorToken: token }) });
    expect([signIn.status, signIn.headers.get('set-cookie')]).toEqual([201, expect.stringMatching(/^aex_console=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict$/)]);
    expect((await fetch(`${url}/console/`)).status).toBe(200);
    const metrics = await fetch(`${url}/metrics`);
    expect([metrics.status, (await metrics.text()).includes('# TYPE aex_http_requests_total counter')]).toEqual([200, true]);
  });

  it('signs up, registers a service and discovers it by meaning alone', async () => {
    const anon = new ExchangeClient({ baseUrl: url });
    const account = unwrap(await anon.createAccount({ accountType: 'individual', email: uniqueEmail(), displayName: 'Newcomer', agent: { name: 'first-agent' } }));
    const agent = anon.as({ apiKey: account.apiKey });
    const created = unwrap(await agent.createService({
      name: 'Currency Converter',
      description: 'Converts amounts between currencies at current exchange rates.',
      version: '1.0.0',
      category: 'finance',
      inputSchema: { type: 'object', properties: { amount: { type: 'number' }, from: { type: 'string' }, to: { type: 'string' } } },
      outputSchema: { type: 'object', properties: { converted: { type: 'number' } } },
      pricing: { model: 'fixed', basePriceCents: 5 },
      sla: { maxLatencyMs: 500, timeoutMs: 2000 },
    }));
    // Not one word in common with the service: only the sentence encoder connects them.
    const found = unwrap(await agent.discover({ need: 'how many yen is 250 euros' }));
    expect(found.warnings).toEqual([]);
    expect(found.matches[0]?.serviceId).toBe(created.id);
  });

  it('buys a service: price held, output delivered, verified and settled minus the fee', async () => {
    const anon = new ExchangeClient({ baseUrl: url });
    const [provider, consumer] = [await signingMember(anon, 'seller'), await signingMember(anon, 'buyer')];
    unwrap(await consumer.client.fund(consumer.id, 1000));
    const service = unwrap(await provider.client.createService({
      name: 'Word Counter', description: 'Counts the words of a text.', version: '1.0.0', category: 'text',
      inputSchema: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
      outputSchema: { type: 'object', required: ['words'], properties: { words: { type: 'integer' } } },
      pricing: { model: 'fixed', basePriceCents: 200 }, sla: { maxLatencyMs: 1000, timeoutMs: 60_000 },
    }));
    const created = await consumer.client.createTransaction({ serviceId: service.id, input: { text: 'one two three' } });
    expect([created.status, unwrap(created).status]).toEqual([201, 'funds_held']);
    const id = unwrap(created).id;
    expect(unwrap(await provider.client.deliver(id, { output: { words: 3 } })).status).toBe('delivered');
    expect(unwrap(await consumer.client.verify(id, { qualityScore: 100 })).status).toBe('settled');
    expect(unwrap(await consumer.client.getWallet(consumer.id))).toMatchObject({ balanceCents: 800, heldCents: 0 });
    expect(unwrap(await provider.client.getWallet(provider.id)).balanceCents).toBe(190);
    expect(troubles()).toEqual([]);
  });

  it("takes the README's first purchase with curl and openssl, as written, to its settlement and webhooks", async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'aex-shipped-walk-'));
    try {
      symlinkSync(join(repoRoot, 'examples'), join(cwd, 'examples'));
      const out = await bash(shellBlocks('README.md', 'walkthrough:curl'), { cwd, env: { EX: url, HOOKS_PORT: String(await freePort()) }, timeoutMs: 90_000 });
      expect(out).toMatch(/\{"status":"settled","settledAt":"[^"]+"\}/);
      expect(out).toContain('{"txType":"platform_fee","amountCents":-13,"balanceAfterCents":237}');
      expect(out).toMatch(/verified transaction\.settled [0-9a-f-]{36} settled/);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
    expect(troubles()).toEqual([]);
  }, 120_000);

  it('ends on Ctrl-C with exit code 0 and nothing alarming on the screen', async () => {
    child.stdin.write('\x03');
    expect(await exited()).toBe(0);
    expect(troubles()).toEqual([]);
    expect(screen()).toMatch(/INFO: stopped/);
  }, 30_000);
});
