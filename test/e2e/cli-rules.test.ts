import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { startTestExchange, type TestExchange } from './harness.js';
import { installPacked } from './packed-kit.js';
import { INPUT, party, serviceBody } from './transaction-kit.js';

// The packed aex CLI changing spending rules (D23.3: only the rules given change, --unset removes
// one, --replace replaces them all), spawning a child that buys at once (D6.8), and signing its
// owner agent in to the web console with a one-time link (D23.4), run as a person's shell runs it:
// installed outside the workspace, with a home directory of its own (cli.test.ts does the rest of
// the CLI the same way).

let ex: TestExchange;
let dir: string;
let bin: string;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A person with a HOME of their own, the profile `buyer` signed up in it (its account's owner agent). */
async function person() {
  const home = mkdtempSync(join(dir, 'home-'));
  const user = {
    home,
    aex(args: string[], extra: Record<string, string> = {}): Promise<Ran> {
      return new Promise((resolve) => {
        execFile(process.execPath, [bin, ...args], { env: { PATH: process.env.PATH ?? '', HOME: home, ...extra }, cwd: home, timeout: 60_000 }, (err, stdout, stderr) => {
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
  };
  const r = await user.aex(['--url', ex.url, 'signup', '--email', `buyer-${randomUUID()}@example.com`, '--display-name', 'buyer', '--save-as', 'buyer']);
  expect(r.code, r.stderr).toBe(0);
  return user;
}

const cliTest = it.extend('cli', async () => person());

beforeAll(async () => {
  ex = await startTestExchange();
  dir = mkdtempSync(join(tmpdir(), 'aex-cli-rules-'));
  const project = await installPacked(['@agent-exchange/cli'], dir);
  bin = join(project, 'node_modules', '@agent-exchange', 'cli', 'bin', 'aex.js');
}, 300_000);

afterAll(async () => {
  await ex?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('delegation rules (D23.3)', () => {
  cliTest('D23.3: delegation set changes only the rules given and says which were kept; --unset removes one; --replace replaces them all', async ({ cli }) => {
    const first = await cli.aex(['--profile', 'buyer', 'delegation', 'set', '--require-approval-above-cents', '200']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^requireHumanApprovalAboveCents +200 \(new\)$/m);
    const second = await cli.aex(['--profile', 'buyer', 'delegation', 'set', '--max-transaction-cents', '250']);
    expect(second.stdout).toContain('Changed 1 rule; the others are kept.');
    expect(second.stdout).toMatch(/^maxTransactionCents +250 \(new\)$/m);
    expect(second.stdout).toMatch(/^requireHumanApprovalAboveCents +200 \(kept\)$/m);
    expect((await cli.json<{ own: unknown }>(['--profile', 'buyer', 'delegation', 'show'])).own).toEqual({ maxTransactionCents: 250, requireHumanApprovalAboveCents: 200 });

    const raised = await cli.json<{ rules: unknown; changes: unknown[] }>(['--profile', 'buyer', 'delegation', 'set', '--max-transaction-cents', '300', '--unset', 'require-approval-above-cents']);
    expect(raised).toEqual({
      rules: { maxTransactionCents: 300 },
      changes: [{ field: 'maxTransactionCents', from: 250, to: 300 }, { field: 'requireHumanApprovalAboveCents', from: 200, to: null }],
    });
    const removed = await cli.aex(['--profile', 'buyer', 'delegation', 'set', '--unset', 'max-transaction-cents', '--blocked-categories', 'games,gambling']);
    expect(removed.stdout).toMatch(/^maxTransactionCents +removed \(was 300\)$/m);
    expect(removed.stdout).toMatch(/^blockedCategories +games,gambling \(new\)$/m);

    const replaced = await cli.aex(['--profile', 'buyer', 'delegation', 'set', '--replace', '--max-daily-spend-cents', '900']);
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.stdout).toContain('Replaced: these are all the rules now; any other rule was removed.');
    expect((await cli.json<{ own: unknown }>(['--profile', 'buyer', 'delegation', 'show'])).own).toEqual({ maxDailySpendCents: 900 });

    // The account's defaults change the same way.
    await cli.json(['--profile', 'buyer', 'delegation', 'set', '--account', '--auto-approve-below', '100']);
    const defaults = await cli.json<{ rules: unknown }>(['--profile', 'buyer', 'delegation', 'set', '--account', '--max-transaction-cents', '5000']);
    expect(defaults.rules).toEqual({ autoApproveBelow: 100, maxTransactionCents: 5000 });
    // D10.1: show names the rules in force, the account's defaults under the agent's own.
    expect(await cli.json(['--profile', 'buyer', 'delegation', 'show'])).toMatchObject({
      own: { maxDailySpendCents: 900 }, inForce: { autoApproveBelow: 100, maxTransactionCents: 5000, maxDailySpendCents: 900 }, base: 'account',
    });
    expect((await cli.aex(['--profile', 'buyer', 'delegation', 'show'])).stdout).toMatch(/^maxTransactionCents +- +5000$/m);
  });

  cliTest('D23.3: delegation set refuses nothing to change, an unknown --unset and --unset with --replace, and its help says how it changes rules', async ({ cli }) => {
    const nothing = await cli.aex(['--profile', 'buyer', 'delegation', 'set']);
    expect([nothing.code, nothing.stderr]).toEqual([2, expect.stringContaining('Give at least one rule to change')]);
    const unknown = await cli.aex(['--profile', 'buyer', 'delegation', 'set', '--unset', 'max-cents']);
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining('--unset takes one of: max-transaction-cents, max-daily-spend-cents')]);
    const both = await cli.aex(['--profile', 'buyer', 'delegation', 'set', '--replace', '--unset', 'auto-approve-below']);
    expect(both.code).toBe(2);
    const help = (await cli.aex(['delegation', 'set', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(help).toContain('Only the rules given change: the others are kept');
    expect(help).toContain('--unset <rule> remove one rule, named as its option is (repeatable)');
    expect(help).toContain('Rules --unset takes: max-transaction-cents, max-daily-spend-cents, allowed-categories, blocked-categories, require-approval-above-cents, auto-approve-below.');
    expect(help).toContain('--replace replace all the rules with exactly those given: every rule not given is removed');
  });
});

describe('a spawned child (D6.8)', () => {
  cliTest('D6.8: agents spawn --save-as gives the child a registered signing key, so it buys; its rules in force are its parent\'s', async ({ cli }) => {
    const seller = await party(ex);
    const service = unwrap(await seller.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: 300 } })));
    await cli.json(['--profile', 'buyer', 'wallet', 'fund', '5000']);
    await cli.json(['--profile', 'buyer', 'delegation', 'set', '--max-daily-spend-cents', '2000', '--require-approval-above-cents', '200']);
    const spawned = await cli.aex(['--profile', 'buyer', 'agents', 'spawn', '--name', 'helper', '--budget-cents', '1000', '--save-as', 'helper']);
    expect(spawned.code, spawned.stderr).toBe(0);
    expect(spawned.stdout).toMatch(/^profile +helper$/m);
    const child = await cli.json<{ id: string; signingKeyPublic: string | null; parentAgentId: string }>(['--profile', 'helper', 'agents', 'show']);
    expect(child.signingKeyPublic).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    // D10.1: what applies to the child is its parent's, though it has no rule of its own.
    expect(await cli.json(['--profile', 'helper', 'delegation', 'show'])).toMatchObject({ own: {}, inForce: { maxDailySpendCents: 2000, requireHumanApprovalAboveCents: 200 }, base: 'parent' });
    writeFileSync(join(cli.home, 'input.json'), JSON.stringify(INPUT));
    const bought = await cli.json<{ status: string; consumerAgentId: string }>(['--profile', 'helper', 'buy', service.id, '--input', join(cli.home, 'input.json')]);
    expect(bought).toMatchObject({ status: 'awaiting_approval', consumerAgentId: child.id });
  });
});

describe('aex console (D23.4)', () => {
  cliTest('D23.4: prints a one-time sign-in link without the key, which signs the owner agent in once; --open hands it to xdg-open', async ({ cli }) => {
    const key = (JSON.parse(readFileSync(join(cli.home, '.config/agent-exchange/config.json'), 'utf8')) as { profiles: Record<string, { apiKey: string; agentId: string }> }).profiles.buyer!;
    const printed = await cli.aex(['--profile', 'buyer', 'console']);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).not.toContain(key.apiKey);
    const url = /^(http\S+\/console\/#\/signin\?link=[A-Za-z0-9_-]{43})$/m.exec(printed.stdout)?.[1];
    expect(url, printed.stdout).toBeDefined();
    const signIn = (token: string) => fetch(`${ex.url}/console/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ link: token }) });
    const token = url!.split('link=')[1]!;
    const first = await signIn(token);
    expect(first.status).toBe(201);
    expect(((await first.json()) as { data: { agentId: string } }).data.agentId).toBe(key.agentId);
    expect((await signIn(token)).status).toBe(401);

    // --open: the platform's opener (here a stand-in for xdg-open that writes what it was given).
    const bin = mkdtempSync(join(cli.home, 'bin-'));
    const opened = join(cli.home, 'opened.txt');
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s' "$1" > '${opened}'\n`, { mode: 0o755 });
    const withOpen = await cli.aex(['--json', '--profile', 'buyer', 'console', '--open'], { PATH: `${bin}:${process.env.PATH ?? ''}` });
    expect(withOpen.code, withOpen.stderr).toBe(0);
    const answer = JSON.parse(withOpen.stdout) as { url: string; expiresAt: string; opened: boolean };
    expect(answer.opened).toBe(true);
    await vi.waitFor(() => expect(readFileSync(opened, 'utf8')).toBe(answer.url), { timeout: 10_000 });
    expect((await signIn(answer.url.split('link=')[1]!)).status).toBe(201);
  });
});
