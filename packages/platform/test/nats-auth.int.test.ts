import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsBus } from '../src/bus/nats-bus.js';
import { freePort } from '../src/net/free-port.js';
import { eventually } from '../src/testing/index.js';

// A NATS server with authorization, as a platform team runs it so that only the exchange's
// own services may use its subjects. The credentials travel in NATS_URL.
describe('the bus on a NATS server that requires a user and password', () => {
  let server: ChildProcess;
  let port: number;
  const store = mkdtempSync(join(tmpdir(), 'aex-nats-auth-'));

  beforeAll(async () => {
    port = await freePort();
    server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '--user', 'exchange', '--pass', 'pa:ss@word', '-js', '-sd', store], { stdio: 'ignore' });
    await eventually(async () => {
      const bus = await NatsBus.connect(`nats://exchange:${encodeURIComponent('pa:ss@word')}@127.0.0.1:${port}`, 'tauth', 'probe').catch(() => null);
      await bus?.close();
      return bus !== null;
    }, 10_000, 100);
  });
  afterAll(() => {
    server?.kill('SIGKILL');
    rmSync(store, { recursive: true, force: true });
  });

  it('connects with the credentials of the URL and carries requests', async () => {
    const bus = await NatsBus.connect(`nats://exchange:${encodeURIComponent('pa:ss@word')}@127.0.0.1:${port}`, 'tauth', 'test');
    try {
      expect(await bus.healthy()).toBe(true);
    } finally {
      await bus.close();
    }
  });

  it('is refused with wrong credentials or none', async () => {
    await expect(NatsBus.connect(`nats://exchange:wrong@127.0.0.1:${port}`, 'tauth', 'test')).rejects.toThrow(/Authorization Violation/i);
    await expect(NatsBus.connect(`nats://127.0.0.1:${port}`, 'tauth', 'test')).rejects.toThrow(/Authorization Violation/i);
  });
});
