import { randomUUID } from 'node:crypto';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ExchangeClient, verifyWebhook } from '@agent-exchange/client';
import { freePort } from '@aex/platform';
import { startTestExchange, type TestExchange } from './harness.js';
import { installPacked } from './packed-kit.js';

// The aex CLI as a person at a terminal and a script use it: the packed package installed outside
// the workspace with a home directory of its own, run at a pseudo-terminal (script) and with --json
// through whole purchases, `aex listen` receiving real deliveries.

let ex: TestExchange;
let dir: string;
let bin: string;
const running: ChildProcess[] = [];

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A person at a terminal with a HOME of their own: runs the installed `aex` there. */
function terminalUser(home: string) {
  const env = (extra: Record<string, string> = {}) => ({ PATH: process.env.PATH ?? '', HOME: home, ...extra });
  const user = {
    home,
    /** Runs `aex` (no terminal). */
    aex(args: string[], extra: Record<string, string> = {}): Promise<Ran> {
      return new Promise((resolve) => {
        execFile(process.execPath, [bin, ...args], { env: env(extra), cwd: home, timeout: 60_000 }, (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        });
      });
    },
    /** `aex --json …` that must succeed: its parsed output. */
    async json<T = Record<string, unknown>>(args: string[]): Promise<T> {
      const r = await user.aex(['--json', ...args]);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as T;
    },
    /**
     * Runs `aex` at a pseudo-terminal, as a person would: what the terminal shows so far (script -f
     * passes it on as it is written), and everything it showed when `aex` ends.
     */
    atTerminal(args: string[]): { shown: () => string; done: Promise<Ran> } {
      const line = [process.execPath, bin, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
      const child = spawn('script', ['-qfec', line, '/dev/null'], { env: env({ TERM: 'xterm' }), cwd: home });
      running.push(child);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const timeout = setTimeout(() => child.kill('SIGKILL'), 90_000);
      const done = new Promise<Ran>((resolve) => child.once('close', (code) => {
        clearTimeout(timeout);
        resolve({ code, stdout, stderr });
      }));
      return { shown: () => stdout, done };
    },
    /** Writes `value` as JSON to `name` in the HOME: its path. */
    file(name: string, value: unknown): string {
      const path = join(home, name);
      writeFileSync(path, JSON.stringify(value));
      return path;
    },
  };
  return user;
}
type TerminalUser = ReturnType<typeof terminalUser>;

const SERVICE = {
  name: 'Word counter',
  description: 'Counts the words in a text, exactly.',
  version: '1.0.0',
  category: 'text',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
  outputSchema: { type: 'object', properties: { words: { type: 'integer' } }, required: ['words'] },
  pricing: { model: 'fixed', basePriceCents: 250 },
  sla: { maxLatencyMs: 60_000, timeoutMs: 120_000 },
};

/** Signs up the profiles `seller` and `buyer` (the current one) in the user's HOME. */
async function signUp(user: TerminalUser): Promise<void> {
  for (const name of ['seller', 'buyer']) {
    const r = await user.aex(['--url', ex.url, 'signup', '--email', `${name}-${randomUUID()}@example.com`, '--display-name', name, '--save-as', name]);
    expect(r.code, r.stderr).toBe(0);
  }
}

/**
 * Each test's own person at a terminal: `blank`, a HOME with no profile yet; `cli`, one with the
 * profiles `seller` and `buyer` signed up; `serviceId`, the seller's word counter at 250 cents, the
 * buyer funded with 5,000 cents and the input and output files written. No test depends on another.
 */
const cliTest = it
  .extend('blank', async () => terminalUser(mkdtempSync(join(dir, 'home-'))))
  .extend('cli', async () => {
    const user = terminalUser(mkdtempSync(join(dir, 'home-')));
    await signUp(user);
    return user;
  })
  .extend('serviceId', async ({ cli }) => {
    await cli.json(['--profile', 'buyer', 'wallet', 'fund', '5000']);
    cli.file('input.json', { text: 'one two three' });
    cli.file('output.json', { words: 3 });
    return (await cli.json<{ id: string }>(['--profile', 'seller', 'services', 'register', cli.file('service.json', SERVICE)])).id;
  });

beforeAll(async () => {
  ex = await startTestExchange({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  dir = mkdtempSync(join(tmpdir(), 'aex-cli-'));
  const project = await installPacked(['@agent-exchange/cli'], dir);
  bin = join(project, 'node_modules', '@agent-exchange', 'cli', 'bin', 'aex.js');
}, 300_000);

afterAll(async () => {
  for (const c of running) c.kill('SIGKILL');
  await ex?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('profiles', () => {
  cliTest('signup makes an account, its agent and a registered signing key, kept in a profile file only its owner can read', async ({ blank: cli }) => {
    for (const name of ['seller', 'buyer']) {
      const r = await cli.aex(['--url', ex.url, 'signup', '--email', `${name}-${Date.now()}@example.com`, '--display-name', name, '--save-as', name]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/saved in .*config\.json \(mode 600\)/);
      expect(r.stdout).not.toMatch(/ae_live_/);
    }
    const path = join(cli.home, '.config', 'agent-exchange', 'config.json');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(cli.home, '.config', 'agent-exchange')).mode & 0o777).toBe(0o700);
    const saved = JSON.parse(readFileSync(path, 'utf8')) as { current: string; profiles: Record<string, { apiKey: string; agentId: string; signingSecretKey: string }> };
    expect(saved.current).toBe('buyer');
    expect(saved.profiles.seller!.apiKey).toMatch(/^ae_live_/);
    const agent = await cli.json<{ signingKeyPublic: string }>(['--profile', 'seller', 'agents', 'show']);
    expect(agent.signingKeyPublic).toMatch(/=$/);

    // A profile file others can read is refused, as ssh refuses such a key.
    const { chmodSync } = await import('node:fs');
    chmodSync(path, 0o644);
    const loose = await cli.aex(['wallet', 'balance']);
    expect(loose.code).toBe(2);
    expect(loose.stderr).toMatch(/can be read by other users .* chmod 600/);
    chmodSync(path, 0o600);
  });
});

describe('a whole purchase with --json, as a script runs it', () => {
  cliTest('funds, registers, discovers, buys and delivers (signed with RFC 9421, D20.1), verifies and reads both ledgers', async ({ cli }) => {
    expect(await cli.json(['--profile', 'buyer', 'wallet', 'fund', '5000'])).toMatchObject({ funded: true, newBalanceCents: 5000 });
    const serviceId = (await cli.json<{ id: string }>(['--profile', 'seller', 'services', 'register', cli.file('service.json', SERVICE)])).id;
    const found = await cli.json<{ matches: Array<{ serviceId: string; priceCents: number }> }>(['--profile', 'buyer', 'discover', 'count the words in a text']);
    expect(found.matches.find((m) => m.serviceId === serviceId)).toMatchObject({ priceCents: 250 });
    const tx = await cli.json<{ id: string; status: string }>(['--profile', 'buyer', '--signature-scheme', 'rfc9421', 'buy', serviceId, '--input', cli.file('input.json', { text: 'one two three' }), '--idempotency-key', 'cli-order-1']);
    expect(tx.status).toBe('funds_held');
    // The same key again: the same transaction, nothing bought twice.
    expect((await cli.json<{ id: string }>(['--profile', 'buyer', 'buy', serviceId, '--input', join(cli.home, 'input.json'), '--idempotency-key', 'cli-order-1'])).id).toBe(tx.id);
    const pending = await cli.json<Array<{ id: string }>>(['--profile', 'seller', 'tx', 'list', '--role', 'provider', '--status', 'funds_held']);
    expect(pending.map((t) => t.id)).toEqual([tx.id]);
    expect(await cli.json(['--profile', 'seller', '--signature-scheme', 'rfc9421', 'deliver', tx.id, '--output', cli.file('output.json', { words: 3 })])).toMatchObject({ status: 'delivered' });
    expect(await cli.json(['--profile', 'buyer', 'verify', tx.id, '--score', '90'])).toMatchObject({ status: 'settled' });
    expect([(await cli.json<{ claims: { delivery: { scheme: string } } }>(['--profile', 'buyer', 'receipt', 'get', tx.id])).claims.delivery.scheme, (await cli.aex(['--profile', 'buyer', '--signature-scheme', 'hmac', 'tx', 'list'])).stderr]).toEqual(['rfc9421', expect.stringMatching(/must be x-ae .* or rfc9421/)]);

    const ledger = await cli.json<Array<{ txType: string; amountCents: number }>>(['--profile', 'buyer', 'wallet', 'ledger']);
    expect(ledger.map((e) => [e.txType, e.amountCents])).toEqual([['fund', 5000], ['fund_hold', -250], ['fund_release', 250], ['settlement_out', -250]]);
    expect(await cli.json(['--profile', 'seller', 'wallet', 'balance'])).toMatchObject({ balanceCents: 237 });
  });
});

describe('prepaid sessions and signed receipts (D17.4–D17.6, D18)', () => {
  cliTest('opens a session, calls in it, shows and closes it; gets a receipt and verifies it online and offline', async ({ cli, serviceId }) => {
    const opened = await cli.json<{ id: string; status: string; budgetCents: number }>(['--profile', 'buyer', 'session', 'open', serviceId, '--budget-cents', '1000']);
    expect(opened).toMatchObject({ status: 'open', budgetCents: 1000 });
    const call = await cli.json<{ id: string; status: string; sessionId: string }>(['--profile', 'buyer', 'session', 'call', opened.id, '--input', join(cli.home, 'input.json')]);
    expect(call).toMatchObject({ status: 'funds_held', sessionId: opened.id });
    expect(await cli.json(['--profile', 'seller', 'deliver', call.id, '--output', join(cli.home, 'output.json')])).toMatchObject({ status: 'settled' });
    const shown = await cli.aex(['--profile', 'buyer', 'session', 'show', opened.id]);
    expect(shown.stdout).toMatch(/open · budget \$10\.00 · spent \$2\.50 · reserved \$0\.00 · left \$7\.50 · 1 call/);
    expect(await cli.json(['--profile', 'buyer', 'session', 'close', opened.id])).toMatchObject({ status: expect.stringMatching(/^clos/) });

    const file = join(cli.home, 'receipt.jws');
    const got = await cli.aex(['--profile', 'buyer', 'receipt', 'get', call.id, '--out', file]);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toMatch(new RegExp(`Transaction ${call.id}: settled · price \\$2\\.50 .* session ${opened.id}`));
    const valid = await cli.aex(['--profile', 'buyer', 'receipt', 'verify', file]);
    expect(valid.code, valid.stderr).toBe(0);
    expect(valid.stdout).toMatch(/^Valid: signed by did:web:/);
    // Offline: with a JWK set saved earlier, no exchange needed.
    writeFileSync(join(cli.home, 'jwks.json'), JSON.stringify(await (await fetch(`${ex.url}/.well-known/jwks.json`)).json()));
    expect((await cli.aex(['receipt', 'verify', file, '--jwks', join(cli.home, 'jwks.json'), '--url', 'http://127.0.0.1:9'])).code).toBe(0);
    const jws = readFileSync(file, 'utf8').trim().split('.');
    writeFileSync(file, `${jws[0]}.${Buffer.from('{"receipt":{}}').toString('base64url')}.${jws[2]}`);
    const forged = await cli.aex(['--json', 'receipt', 'verify', file, '--jwks', join(cli.home, 'jwks.json')]);
    expect(forged.code).toBe(4);
    expect(forged.stderr).toMatch(/Not valid/);
  });

  cliTest('buys metered: holds the price of --max-units, the seller reports --usage-units', async ({ cli }) => {
    await cli.json(['--profile', 'buyer', 'wallet', 'fund', '5000']);
    const perPage = { ...SERVICE, name: 'Page reader', pricing: { model: 'per_unit', basePriceCents: 100, unit: 'page' } };
    const serviceId = (await cli.json<{ id: string }>(['--profile', 'seller', 'services', 'register', cli.file('pages.json', perPage)])).id;
    const tx = await cli.json<{ id: string; metered: boolean; agreedPriceCents: number }>(['--profile', 'buyer', 'buy', serviceId, '--input', cli.file('input.json', { text: 'one two three' }), '--max-units', '10']);
    expect(tx).toMatchObject({ metered: true, agreedPriceCents: 1000 });
    expect(await cli.json(['--profile', 'seller', 'deliver', tx.id, '--output', cli.file('output.json', { words: 3 }), '--usage-units', '3'])).toMatchObject({ units: 3, agreedPriceCents: 300 });
    expect(await cli.json(['--profile', 'buyer', 'verify', tx.id, '--score', '80'])).toMatchObject({ status: 'settled' });
    expect(await cli.json(['--profile', 'buyer', 'wallet', 'balance'])).toMatchObject({ balanceCents: 4700, heldCents: 0 });
  });
});

describe('a purchase at a terminal, with aex listen receiving the webhooks', () => {
  let forwarded: Array<{ headers: Record<string, string | string[] | undefined>; body: string }>;
  let sink: Server;

  beforeAll(async () => {
    forwarded = [];
    sink = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString())).on('end', () => {
        forwarded.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => sink.close(() => resolve())));

  cliTest('shows a live status line, and listen prints, verifies and forwards every event, then puts the webhook URL back', async ({ cli, serviceId }) => {
    const port = await freePort();
    const listener = spawn(process.execPath, [bin, '--profile', 'buyer', 'listen', '--port', String(port), '--forward-to', `http://127.0.0.1:${(sink.address() as { port: number }).port}/hooks`], { env: { PATH: process.env.PATH ?? '', HOME: cli.home }, stdio: ['ignore', 'pipe', 'pipe'] });
    running.push(listener);
    let printed = '';
    let said = '';
    listener.stdout!.on('data', (c: Buffer) => (printed += c.toString()));
    listener.stderr!.on('data', (c: Buffer) => (said += c.toString()));
    await new Promise<void>((resolve, reject) => {
      const t = setInterval(() => said.includes('Ready:') && (clearInterval(t), resolve()), 50);
      listener.once('exit', (code) => reject(new Error(`listen exited ${code}: ${said}`)));
    });
    const me = await cli.json<{ webhookUrl: string; id: string }>(['--profile', 'buyer', 'agents', 'show']);
    expect(me.webhookUrl).toBe(`http://127.0.0.1:${port}/webhooks`);

    // A delivery that is not signed with the agent's secret is refused and never forwarded.
    const forged = await fetch(me.webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': 'msg_forged', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' }, body: '{"type":"transaction.settled","data":{}}' });
    expect(forged.status).toBe(400);

    const buying = cli.atTerminal(['--profile', 'buyer', 'buy', serviceId, '--input', join(cli.home, 'input.json'), '--wait', '--timeout', '60']);
    // The seller sees the purchase once the buyer's aex has made it and its price is held.
    const txId = await vi.waitFor(async () => {
      const pending = await cli.json<Array<{ id: string }>>(['--profile', 'seller', 'tx', 'list', '--role', 'provider', '--status', 'funds_held']);
      expect(pending).toHaveLength(1);
      return pending[0]!.id;
    }, { timeout: 60_000, interval: 100 });
    // Delivered only once the buyer's terminal shows the purchase held: its status line then has both statuses to show.
    await vi.waitFor(() => expect(buying.shown()).toMatch(new RegExp(`${txId.slice(0, 8)} {2}funds_held`)), { timeout: 30_000, interval: 50 });
    expect((await cli.aex(['--profile', 'seller', 'deliver', txId, '--output', join(cli.home, 'output.json')])).code).toBe(0);
    const bought = await buying.done;
    expect(bought.code, bought.stdout).toBe(0);
    expect(bought.stdout).toContain('\r\x1b[2K');
    expect(bought.stdout).toMatch(new RegExp(`${txId.slice(0, 8)} {2}funds_held`));
    expect(bought.stdout).toMatch(/✓ .{8} {2}delivered/);
    expect(bought.stdout).toContain('Delivered: {"words":3}');
    expect((await cli.aex(['--profile', 'buyer', 'verify', txId, '--score', '80'])).code).toBe(0);

    await vi.waitFor(() => expect(printed).toContain('transaction.settled'), { timeout: 10_000, interval: 100 });
    for (const type of ['funds_held', 'delivered', 'settled']) expect(printed).toMatch(new RegExp(`verified {2}transaction\\.${type} {2}${txId}.*→ 204`));
    expect(printed).toMatch(/refused {2}no webhook-signature matches the secret/);
    // What was forwarded is the delivery as the exchange signed it: the receiver verifies it too.
    const secret = (await new ExchangeClient({ baseUrl: ex.url, apiKey: JSON.parse(readFileSync(join(cli.home, '.config/agent-exchange/config.json'), 'utf8')).profiles.buyer.apiKey }).getWebhook(me.id));
    expect(secret.ok).toBe(true);
    const settled = forwarded.find((f) => f.body.includes('transaction.settled'))!;
    expect(verifyWebhook(settled.headers, settled.body, (secret.ok && secret.data.secret) || '')).toMatchObject({ type: 'transaction.settled' });
    expect(forwarded.some((f) => f.headers['webhook-id'] === 'msg_forged')).toBe(false);

    listener.kill('SIGINT');
    expect(await new Promise((resolve) => listener.once('exit', resolve))).toBe(0);
    expect(said).toMatch(/the webhook URL is back to none/);
    expect((await cli.json<{ webhookUrl: string | null }>(['--profile', 'buyer', 'agents', 'show'])).webhookUrl).toBeNull();
  }, 120_000);

  cliTest('prints plain lines, not a status line, when the output is not a terminal', async ({ cli, serviceId }) => {
    const waiting = cli.aex(['--profile', 'buyer', 'buy', serviceId, '--input', join(cli.home, 'input.json'), '--wait', '--timeout', '2']);
    const r = await waiting;
    expect(r.code).toBe(4);
    expect(r.stdout).not.toContain('\r');
    expect(r.stdout).toMatch(/^\S+Z {2}[0-9a-f-]{36} {2}funds_held$/m);
    expect(r.stderr).toMatch(/Still funds_held after 2 s/);
  });
});

describe('approvals, as the account owner decides them (D10.3)', () => {
  cliTest('buy says a purchase awaits the owner; approvals list shows it, approve holds its price, deny cancels another', async ({ cli, serviceId }) => {
    // The buyer profile is its account's owner agent: it sets its own approval rule, and decides.
    await cli.json(['--profile', 'buyer', 'delegation', 'set', '--require-approval-above-cents', '100']);
    const asked = await cli.aex(['--profile', 'buyer', 'buy', serviceId, '--input', join(cli.home, 'input.json')]);
    expect(asked.code, asked.stderr).toBe(0);
    const id = /Transaction ([0-9a-f-]{36}): awaiting_approval, \$2\.50\./.exec(asked.stdout)?.[1];
    expect(id, asked.stdout).toBeDefined();
    expect(asked.stdout).toContain(`It awaits your account owner's approval (above $1.00)`);
    expect(asked.stdout).toContain(`aex --profile OWNER approvals approve ${id}`);

    const inbox = await cli.aex(['--profile', 'buyer', 'approvals', 'list']);
    expect(inbox.stdout).toMatch(new RegExp(`${id}\\s+awaiting_approval\\s+\\$2\\.50`));
    expect(inbox.stdout).toContain('above $1.00');
    // The seller, the provider, knows of it but may not decide it.
    const seller = await cli.aex(['--profile', 'seller', 'approvals', 'approve', id!]);
    expect([seller.code, seller.stderr]).toEqual([1, expect.stringContaining("FORBIDDEN: Only the consumer's account owner agent may approve")]);

    const approved = await cli.aex(['--profile', 'buyer', 'approvals', 'approve', id!]);
    expect([approved.code, approved.stdout]).toEqual([0, `Approved: transaction ${id} is funds_held, $2.50 held.\n`]);
    expect(await cli.json(['--profile', 'buyer', 'wallet', 'balance'])).toMatchObject({ heldCents: 250 });
    expect(await cli.json<unknown[]>(['--profile', 'buyer', 'approvals', 'list'])).toEqual([]);

    const other = await cli.json<{ id: string; status: string }>(['--profile', 'buyer', 'buy', serviceId, '--input', join(cli.home, 'input.json')]);
    expect(other.status).toBe('awaiting_approval');
    const denied = await cli.aex(['--profile', 'buyer', 'approvals', 'deny', other.id, '--reason', 'not now']);
    expect(denied.stdout).toBe(`Denied: transaction ${other.id} is cancelled (approval_denied).\n`);
    const decided = await cli.json<Array<{ id: string; approval: { decision: string; reason?: string } }>>(['--profile', 'buyer', 'approvals', 'list', '--state', 'decided']);
    expect(decided.map((t) => [t.id, t.approval.decision, t.approval.reason])).toEqual([[other.id, 'denied', 'not now'], [id, 'approved', undefined]]);
  });
});

describe('exit codes, help and completion', () => {
  cliTest('says what went wrong, with an exit code a script can act on', async ({ cli, serviceId }) => {
    const refused = await cli.aex(['--profile', 'buyer', 'services', 'show', '00000000-0000-4000-8000-000000000000']);
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/^aex: NOT_FOUND: .*\nrequest id [0-9a-f-]{36}\n$/)]);
    const asJson = await cli.aex(['--json', '--profile', 'buyer', 'services', 'show', '00000000-0000-4000-8000-000000000000']);
    expect(JSON.parse(asJson.stderr)).toMatchObject({ error: { code: 'NOT_FOUND', status: 404, exitCode: 1 } });
    const badInput = await cli.aex(['--profile', 'buyer', 'buy', serviceId, '--input', cli.file('bad.json', { txt: 1 })]);
    expect([badInput.code, badInput.stderr]).toEqual([2, expect.stringContaining('"/input/text" is required')]);
    const unreachable = await cli.aex(['--url', `http://127.0.0.1:${await freePort()}`, '--profile', 'buyer', 'wallet', 'balance']);
    expect([unreachable.code, unreachable.stderr]).toEqual([3, expect.stringContaining('Could not reach the exchange')]);
    const noProfile = await cli.aex(['wallet', 'balance'], { HOME: mkdtempSync(join(dir, 'empty-')) });
    expect([noProfile.code, noProfile.stderr]).toEqual([2, expect.stringContaining('aex login or aex signup')]);
    const unknown = await cli.aex(['wallet', 'balanse']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command 'balanse'.*\n.*Did you mean balance\?/s);
  });

  cliTest('has --help on every command', async ({ blank: cli }) => {
    const commands = ['signup', 'login', 'profiles', 'keys generate', 'keys register', 'keys rotate', 'agents show', 'agents create', 'agents deactivate', 'agents spawn', 'delegation show', 'delegation set',
      'wallet balance', 'wallet fund', 'wallet withdraw', 'wallet ledger', 'services register', 'services list', 'services show', 'services pause', 'services resume', 'discover', 'buy',
      'tx list', 'tx show', 'tx cancel', 'tx negotiate', 'deliver', 'verify', 'disputes open', 'disputes show', 'disputes respond', 'disputes decide', 'disputes withdraw', 'listen', 'did resolve', 'completion',
      'session open', 'session call', 'session show', 'session list', 'session close', 'receipt get', 'receipt verify', 'console'];
    const results = await Promise.all(commands.map((c) => cli.aex([...c.split(' '), '--help'])));
    results.forEach((r, i) => {
      expect(r.code, commands[i]).toBe(0);
      expect(r.stdout, commands[i]).toMatch(/^Usage: aex /);
    });
  });

  cliTest('completes commands in bash from the script it prints', async ({ blank: cli }) => {
    const script = (await cli.aex(['completion', 'bash'])).stdout;
    expect(script).toContain('complete -F _aex_complete aex');
    writeFileSync(join(cli.home, 'aex-completion.bash'), script);
    const complete = (words: string[]) => new Promise<string>((resolve, reject) => {
      const line = `source ${join(cli.home, 'aex-completion.bash')}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _aex_complete; echo "\${COMPREPLY[*]}"`;
      execFile('bash', ['-c', line], (err, stdout) => (err ? reject(err) : resolve(stdout.trim())));
    });
    expect(await complete(['aex', 'wal'])).toBe('wallet');
    expect((await complete(['aex', 'wallet', ''])).split(' ')).toEqual(expect.arrayContaining(['balance', 'fund', 'withdraw', 'ledger']));
    expect(await complete(['aex', 'disputes', 'res'])).toBe('respond');
  });
});

describe('keys and identities', () => {
  cliTest('generates and registers a new signing key (the old one signs the change), rotates the API key, and logs in with it', async ({ cli }) => {
    const before = await cli.json<{ signingKeyPublic: string; id: string }>(['--profile', 'seller', 'agents', 'show']);
    const generated = await cli.json<{ publicKey: string }>(['--profile', 'seller', 'keys', 'generate']);
    expect(generated.publicKey).not.toBe(before.signingKeyPublic);
    expect(await cli.json(['--profile', 'seller', 'keys', 'register'])).toMatchObject({ signingKeyPublic: generated.publicKey });
    // The new key signs: delivering needs a signature, and a wrong key would be refused.
    const path = join(cli.home, '.config/agent-exchange/config.json');
    const oldKey = (JSON.parse(readFileSync(path, 'utf8')) as { profiles: Record<string, { apiKey: string }> }).profiles.seller!.apiKey;
    const rotated = await cli.json<{ keyPrefix: string; saved: boolean }>(['--profile', 'seller', 'keys', 'rotate']);
    expect(rotated.saved).toBe(true);
    const newKey = (JSON.parse(readFileSync(path, 'utf8')) as { profiles: Record<string, { apiKey: string }> }).profiles.seller!.apiKey;
    expect(newKey.slice(0, 12)).toBe(rotated.keyPrefix);
    expect((await new ExchangeClient({ baseUrl: ex.url, apiKey: oldKey }).getWallet(before.id)).ok).toBe(false);
    expect((await cli.aex(['--profile', 'seller', 'wallet', 'balance'])).code).toBe(0);

    const login = await cli.aex(['--url', ex.url, 'login', '--agent-id', before.id, '--save-as', 'again'], { AEX_API_KEY: newKey });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toMatch(/signs with a key this profile does not have: give it with --signing-key/);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  cliTest('resolves an agent\'s did:web document', async ({ cli }) => {
    const me = await cli.json<{ id: string; didWeb: string }>(['--profile', 'buyer', 'agents', 'show']);
    const doc = await cli.json<{ id: string; verificationMethod: unknown[] }>(['--profile', 'buyer', 'did', 'resolve', me.id]);
    expect(doc.id).toBe(me.didWeb);
    expect(doc.verificationMethod.length).toBeGreaterThan(0);
  });
});
