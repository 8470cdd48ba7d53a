import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'vitest';
import { generateSigningKey } from '@agent-exchange/client';
import { saveProfile, type Profile } from '@aex/agent-kit';
import { buildProgram } from '../src/cli.js';
import { runProgram } from '../src/run.js';
import { startFakeExchange } from './fake-exchange.js';

// What is real and what is not: the whole `aex` program runs in this process (commander, the
// profile file in a temporary folder, the client signing its requests, HTTP on loopback); the
// exchange is a fake that answers what each test tells it to (fake-exchange.ts).

export const AGENT_ID = '0a000000-0000-4000-8000-00000000000a';
export const ACCOUNT_ID = 'ac000000-0000-4000-8000-0000000000ac';
export const API_KEY = 'ae_live_0123456789abcdef';

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Variables beside AEX_CONFIG (which names the test's profile file). */
  env?: NodeJS.ProcessEnv;
  /** Whether standard output is a terminal (default: not). */
  isTTY?: boolean;
  /** When `aex listen` stops (default: never before the test ends it otherwise). */
  stopped?: () => Promise<void>;
}

/** Runs `aex` in this process with these arguments: its exit code and everything it printed. */
export type Aex = (args: string[], opts?: RunOptions) => Promise<Ran>;

/** A run of `aex` still going: what it has printed so far, and its end. */
export interface Running {
  readonly stdout: string;
  readonly stderr: string;
  readonly done: Promise<Ran>;
}

export function startAex(configPath: string, args: string[], opts: RunOptions = {}): Running {
  const printed = { stdout: '', stderr: '' };
  const io = { out: (t: string) => void (printed.stdout += t), err: (t: string) => void (printed.stderr += t), isTTY: opts.isTTY ?? false };
  const env = { AEX_CONFIG: configPath, ...opts.env };
  const program = buildProgram(io, env, opts.stopped ?? (() => new Promise<void>(() => {})));
  const done = runProgram(program, args, io).then((code) => ({ code, ...printed }));
  return {
    get stdout() {
      return printed.stdout;
    },
    get stderr() {
      return printed.stderr;
    },
    done,
  };
}

/** The profile `me` the `profile` fixture saves: this test's agent on the fake exchange, with a signing key. */
export function agentProfile(url: string): Profile & { signingSecretKey: string } {
  return { url, accountId: ACCOUNT_ID, agentId: AGENT_ID, apiKey: API_KEY, signingSecretKey: generateSigningKey().secretKey };
}

/**
 * Each test's own:
 * - `exchange`: a fake exchange on a free port, answering nothing until told;
 * - `dir`: a temporary folder of its own;
 * - `configPath`: the profile file's path in it (no file yet);
 * - `file(name, value)`: writes `value` (as JSON unless a string) to `name` in it, and answers its path;
 * - `aex`: the program run in-process with that file, answering when it ends;
 * - `startAex`: the same, answering at once with what it prints as it runs (`aex listen`);
 * - `profile`: the profile `me`, saved as the current one, acting as `AGENT_ID` on the exchange.
 */
export const cliTest = it
  // eslint-disable-next-line no-empty-pattern
  .extend('exchange', async ({}, { onCleanup }) => {
    const exchange = await startFakeExchange();
    onCleanup(() => exchange.close());
    return exchange;
  })
  // eslint-disable-next-line no-empty-pattern
  .extend('dir', async ({}, { onCleanup }) => {
    const dir = mkdtempSync(join(tmpdir(), 'aex-cli-unit-'));
    onCleanup(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  })
  .extend('configPath', async ({ dir }) => join(dir, 'agent-exchange', 'config.json'))
  .extend('file', async ({ dir }) => (name: string, value: unknown): string => {
    const path = join(dir, name);
    writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
    return path;
  })
  .extend('aex', async ({ configPath }) => ((args: string[], opts?: RunOptions) => startAex(configPath, args, opts).done) as Aex)
  .extend('startAex', async ({ configPath }) => (args: string[], opts?: RunOptions) => startAex(configPath, args, opts))
  .extend('profile', async ({ exchange, configPath }) => {
    const profile = agentProfile(exchange.url);
    saveProfile(configPath, 'me', profile);
    return profile;
  });
