import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExchangeClient, unwrap } from '@agent-exchange/client';
import { buildGateway } from '@aex/gateway';
import { loadConfig, NatsBus } from '@aex/platform';
import { createTestBus, eventually, testLogger, testNamespace } from '@aex/platform/testing';
import { startLocalNats } from '@aex/stack';
import { alive, spawnMain, stopProcess, uniqueEmail } from './harness.js';

// Operations: readiness that answers whatever stalls, and one exchange per data directory.

const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // As root, the embedded Postgres runs as its own system user, which must reach the directory.
  chmodSync(dir, 0o755);
  return dir;
};

describe('/readyz while NATS is frozen (SIGSTOP)', () => {
  it('answers 503 within a second, and 200 again once NATS is back', async () => {
    const dir = tempDir('aex-nats-');
    const nats = (await startLocalNats(dir, testLogger()))!;
    const pid = Number.parseInt(readFileSync(join(dir, 'nats-server.pid'), 'utf8'), 10);
    const bus = await NatsBus.connect(nats.url, testNamespace());
    const app = await buildGateway({ bus, config: loadConfig({}, { BUS_NAMESPACE: bus.namespace }), logger: testLogger() });
    try {
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      process.kill(pid, 'SIGSTOP');
      try {
        // kill() returns before the kernel has stopped the process: a loaded machine could still
        // have it answer the probe's PING. Wait until it is stopped ('T' in /proc/<pid>/stat).
        await eventually(async () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('T'), 5000, 5);
        const started = Date.now();
        // Bounded here too, so that a regression fails this test instead of hanging it (and leaving
        // the nats-server frozen).
        const res = await Promise.race([app.inject({ method: 'GET', url: '/readyz' }), new Promise<null>((r) => setTimeout(() => r(null), 5000))]);
        expect(Date.now() - started).toBeLessThan(1000);
        expect(res && [res.statusCode, res.json().errors[0].code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      // Ready again once NATS answers.
      await expect.poll(async () => (await app.inject({ method: 'GET', url: '/readyz' })).statusCode, { timeout: 5000 }).toBe(200);
    } finally {
      await app.close();
      await bus.close();
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('one exchange per data directory', () => {
  let dataDir = '';
  const namespace = testNamespace();
  let env: Record<string, string> = {};
  const running: ChildProcess[] = [];
  beforeAll(() => {
    dataDir = tempDir('aex-data-');
    env = { AEX_DATA_DIR: dataDir, NATS_URL: process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222', BUS_NAMESPACE: namespace, PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '' };
  });
  const start = async () => {
    const p = await spawnMain('services/stack/src/main.ts', env, /listening on (http:\/\/\S+)/);
    running.push(p.child);
    return { child: p.child, url: p.match[1]! };
  };

  afterAll(async () => {
    for (const c of running) if (c.exitCode === null && c.signalCode === null) await stopProcess(c, 'SIGTERM');
    const { dispose } = await createTestBus('jetstream', namespace);
    await dispose();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses a second start with a message naming the running one, which goes on serving', async () => {
    const first = await start();
    const second = spawnMain('services/stack/src/main.ts', env, /listening on/);
    const refusal = await second.then(() => '', (err: Error) => err.message);
    expect(refusal).toMatch(/exited with 1/);
    expect(refusal).toContain(`Another exchange (pid ${first.child.pid}, ${first.url}) is running on the data directory ${dataDir}`);
    // The first one's embedded Postgres was not touched: it still signs agents up.
    const client = new ExchangeClient({ baseUrl: first.url });
    expect((await client.createAccount({ accountType: 'individual', email: uniqueEmail(), displayName: 'still here', agent: { name: 'a' } })).status).toBe(201);
    expect(await stopProcess(first.child)).toBe(0);
  });

  it('starts again once the first stopped, and after a kill -9 (the lock dies with its process)', async () => {
    const again = await start();
    expect(unwrap(await new ExchangeClient({ baseUrl: again.url }).protocol()).name).toBe('agent-exchange');
    await stopProcess(again.child, 'SIGKILL');
    const afterKill = await start();
    expect(unwrap(await new ExchangeClient({ baseUrl: afterKill.url }).protocol()).name).toBe('agent-exchange');
    expect(await stopProcess(afterKill.child)).toBe(0);
  });
});

describe('nothing the stack starts outlives it', () => {
  it('stops its Postgres and nats-server when it is killed outright (kill -9), and the next start finds nothing left', async () => {
    const dataDir = tempDir('aex-orphans-');
    const env = { AEX_DATA_DIR: dataDir, NATS_URL: '', DATABASE_URL: '', PORT: '0', LOG_LEVEL: 'info' };
    const pidOf = (file: string) => Number.parseInt(readFileSync(join(dataDir, file), 'utf8').split('\n')[0]!, 10);
    try {
      const first = await spawnMain('services/stack/src/main.ts', env, /listening on (http:\/\/\S+)/, 90_000);
      const servers = [pidOf('postgres/postmaster.pid'), pidOf('nats-server.pid')];
      expect(servers.every(alive)).toBe(true);
      await stopProcess(first.child, 'SIGKILL');
      // The watchdog tied to the stack by a pipe stops both as soon as the pipe ends.
      await eventually(async () => !servers.some(alive), 20_000, 100);
      const again = await spawnMain('services/stack/src/main.ts', env, /listening on (http:\/\/\S+)/, 90_000);
      expect(unwrap(await new ExchangeClient({ baseUrl: again.match[1]! }).protocol()).name).toBe('agent-exchange');
      // Nothing was left for it to stop.
      expect(again.output()).not.toContain('left running by an earlier stack');
      const serversAgain = [pidOf('postgres/postmaster.pid'), pidOf('nats-server.pid')];
      expect(await stopProcess(again.child)).toBe(0);
      // A clean stop stops them itself, before it exits.
      expect(serversAgain.some(alive)).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
