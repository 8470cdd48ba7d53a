import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '@aex/platform/testing';
import { alive, spawnMain, stopProcess, type SpawnedProcess } from './harness.js';

// `pnpm start`'s own servers never outlive it: Ctrl-C while a request is held up in Postgres (an
// operator's ledger check waiting on a lock, as a very large ledger would keep it reading) still
// ends with exit code 0 within the 15 s grace, and the embedded Postgres and nats-server it started
// are stopped with it.

const TOKEN = 'stack-shutdown-test-token';
let dataDir = '';
let stack: SpawnedProcess | undefined;
let blocker: pg.Client | undefined;

afterAll(async () => {
  await blocker?.end().catch(() => undefined);
  if (stack && stack.child.exitCode === null && stack.child.signalCode === null) await stopProcess(stack.child, 'SIGKILL');
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const pidOf = (file: string) => Number.parseInt(readFileSync(file, 'utf8').split('\n')[0]!, 10);

describe('stopping pnpm start with a request held up in Postgres', () => {
  it('exits 0 within the grace period and stops the Postgres and nats-server it started, leaving no pid file of nats-server', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'aex-shutdown-'));
    // Postgres runs as its own user when the tests run as root: it must reach its data directory.
    chmodSync(dataDir, 0o755);
    stack = await spawnMain('services/stack/src/main.ts', { AEX_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn', ADMIN_TOKEN: TOKEN, DATABASE_URL: '', NATS_URL: '' }, /listening on (http:\/\/\S+)/);
    const url = stack.match[1]!;
    const postmasterPid = join(dataDir, 'postgres', 'postmaster.pid');
    const pgPid = pidOf(postmasterPid);
    const natsPid = pidOf(join(dataDir, 'nats-server.pid'));
    // The embedded Postgres's port is the fourth line of its pid file; the password is the local stack's.
    const port = readFileSync(postmasterPid, 'utf8').split('\n')[3]!.trim();
    blocker = new pg.Client({ connectionString: `postgres://postgres:aex-local@127.0.0.1:${port}/exchange` });
    blocker.on('error', () => undefined);
    await blocker.connect();
    await blocker.query('begin');
    await blocker.query('lock table wallet.ledger_entries in access exclusive mode');
    const check = fetch(`${url}/admin/v1/ledger/check`, { headers: { authorization: `Bearer ${TOKEN}` } }).then((r) => r.status, () => 'connection closed');
    // The check is in Postgres, waiting for the lock.
    await eventually(async () => {
      // The statistics views are read once per transaction unless their snapshot is cleared.
      await blocker!.query('select pg_stat_clear_snapshot()');
      const r = await blocker!.query(`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%ledger_entries%'`);
      return (r.rows[0] as { n: number }).n > 0 || null;
    }, 10_000);

    const started = Date.now();
    const code = await stopProcess(stack.child, 'SIGINT');
    const took = Date.now() - started;
    expect(code, stack.output()).toBe(0);
    expect(took).toBeLessThan(15_000);
    expect(alive(pgPid)).toBe(false);
    expect(alive(natsPid)).toBe(false);
    // Stopped cleanly, nats-server leaves no pid file behind (one left means it was killed with the stack).
    expect(existsSync(join(dataDir, 'nats-server.pid'))).toBe(false);
    // The check was answered (refused, stopped in Postgres) or cut with the connection; never left hanging.
    expect([503, 'connection closed']).toContain(await check);
  }, 60_000);
});

describe('a pnpm start that fails after starting its servers', () => {
  it('stops the Postgres and nats-server it started before it exits (a refused configuration)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aex-failed-start-'));
    chmodSync(dir, 0o755);
    try {
      // Refused once both servers run: one nats-server cannot keep three copies of each stream.
      const failed = await spawnMain('services/stack/src/main.ts', { AEX_DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ADMIN_TOKEN: TOKEN, DATABASE_URL: '', NATS_URL: '', NATS_REPLICAS: '3' }, /listening on/)
        .then(() => 'started', (err: Error) => err.message);
      expect(failed).toMatch(/exited with 1/);
      expect(failed).toMatch(/NATS_REPLICAS 3 needs a JetStream cluster/);
      expect(failed).toMatch(/embedded Postgres started/);
      expect(failed).toMatch(/nats-server with JetStream started/);
      for (const file of [join(dir, 'postgres', 'postmaster.pid'), join(dir, 'nats-server.pid')]) {
        if (existsSync(file)) expect(alive(pidOf(file)), file).toBe(false);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
