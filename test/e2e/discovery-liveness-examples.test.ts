import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@aex/platform';
import { startTestExchange, stopProcess, type TestExchange } from './harness.js';
import { installPacked } from './packed-kit.js';

// D22.3 as the user met it: the README's example agents run a second time, after the first run's
// provider went away. The client is packed and installed with npm outside the workspace, the
// examples copied beside it, and the exchange keeps its default rate limits. Run 1 settles a
// purchase with provider A; A is stopped; provider B starts; run 2's best match is A (a settled
// purchase earned it trust) — the consumer waits for it within A's SLA reading with backoff, cancels
// when nothing comes (the held price returns), and buys from B, never meeting a 429; run 3 skips A,
// now stalled.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
let ex: TestExchange;
let dir: string;
let project: string;
const running: ChildProcess[] = [];

beforeAll(async () => {
  // As `pnpm start` runs it: webhooks may go to 127.0.0.1; the rate limits are the defaults.
  ex = await startTestExchange({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  dir = mkdtempSync(join(tmpdir(), 'aex-liveness-'));
  project = await installPacked(['@agent-exchange/client'], dir);
  for (const f of readdirSync(join(repoRoot, 'examples')).filter((f) => f.endsWith('.mjs'))) copyFileSync(join(repoRoot, 'examples', f), join(project, f));
}, 240_000);
afterAll(async () => {
  for (const child of running) await stopProcess(child);
  await ex?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Starts provider.mjs and resolves with its agent id once it says it is ready. */
async function startProvider(): Promise<{ agentId: string; child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, ['provider.mjs'], { cwd: project, env: { ...process.env, EX: ex.url, PORT: String(await freePort()) }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`provider.mjs did not start:\n${out}`)), 60_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const ready = /provider ([0-9a-f-]{36}) ready/.exec(out);
      if (ready) {
        clearTimeout(timer);
        resolve({ agentId: ready[1]!, child, output: () => out });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`provider.mjs exited with ${code}:\n${out}`)));
  });
}

/** Runs consumer.mjs to its end and gives back what it printed (it fails the test when it fails). */
function runConsumer(): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['consumer.mjs', 'A man, a plan, a canal: Panama'], { cwd: project, env: { ...process.env, EX: ex.url }, timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`consumer.mjs failed: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(`${stdout}${stderr}`);
    });
  });
}

describe('D22.3 the example consumer when the best-ranked provider is dead', () => {
  it('cancels the purchase the dead provider never delivers, gets its price back, buys from the live one, and then skips the dead one', async () => {
    const first = await startProvider();
    expect(await runConsumer()).toContain('verified: settled');
    // The first run's provider goes away, as the user's did between two runs.
    await stopProcess(first.child);
    const second = await startProvider();

    const run2 = await runConsumer();
    const bought = [...run2.matchAll(/bought ([0-9a-f-]{36}): funds_held, 150 cents held/g)].map((m) => m[1]!);
    expect(bought).toHaveLength(2);
    // The dead provider ranked first (it had a settled purchase); nothing came within its SLA (2 s) and a margin.
    expect(run2).toMatch(/found Palindrome checker by palindrome-provider for 150 cents \(compatibility [0-9.]+, provider delivering\)/);
    expect(run2).toContain(`nothing delivered within 7000 ms: cancelled ${bought[0]}, 150 cents back`);
    // The live one delivered the second purchase.
    await expect.poll(() => second.output(), { timeout: 10_000 }).toContain(`delivered ${bought[1]}`);
    expect(run2).toContain('delivered: {"normalized":"amanaplanacanalpanama","palindrome":true}');
    expect(run2).toContain('verified: settled');
    // Only the live one's price was paid; nothing is left held.
    expect(run2).toContain('wallet: 850 cents, 0 held, 850 available');
    // A status 429, not those digits inside a purchase's UUID.
    expect(run2).not.toMatch(/\b429\b|RATE_LIMITED/);

    // The next run knows: the dead provider is stalled and skipped, the live one bought at once.
    const run3 = await runConsumer();
    expect(run3).toContain('skipping Palindrome checker by palindrome-provider: stalled (1 recent purchase undelivered)');
    expect(run3.match(/bought /g)).toHaveLength(1);
    expect(run3).toContain('verified: settled');
    expect(run3).not.toContain('cancelled');
  }, 180_000);
});
