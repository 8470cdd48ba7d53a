import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@aex/platform';
import { repoRoot, type KubeObject } from './helm.js';

// Runs what the chart renders as local processes: each container's command and environment, as a
// pod would get them, with the image's paths mapped onto this checkout. The strongest check of a
// chart there is without a cluster. What differs from a pod, and why:
// - `/app` (the image's WORKDIR, deploy/Dockerfile) is this repository, and `node` this Node 20;
// - pods have a network namespace each, these processes share one: every container port gets a free
//   local port, and the variables holding it (PORT, HEALTH_PORT) follow;
// - the Secrets a platform team keeps (existingSecret) are given by the caller.

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean }; configMapKeyRef?: { name: string; key: string; optional?: boolean } };
}
interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
}
type Workload = KubeObject & { spec: { template: { spec: { containers: Container[]; terminationGracePeriodSeconds?: number } } } };

/** The image's working directory and install path (checked against the Dockerfile by the tests). */
export const IMAGE_ROOT = '/app';

/** A path of the image, alone or as a flag's value (`--watch-path=/app/services`): this checkout's here. */
const inImage = new RegExp(`^(--[\\w-]+=)?${IMAGE_ROOT}(/|$)`);

/** One container of a rendered workload, ready to run here. */
export interface ContainerRun {
  workload: string;
  container: string;
  /** The command and args as rendered (paths inside the image). */
  command: string[];
  /** The same, mapped onto this checkout. */
  argv: string[];
  env: Record<string, string>;
  /** Local port of each named container port. */
  ports: Record<string, number>;
  /** The readiness probe's URL, if the container has one. */
  readyUrl?: string;
  gracePeriodSeconds: number;
}

/** The WORKDIR of the Dockerfile's final stage. */
export function imageWorkdir(): string {
  const lines = readFileSync(join(repoRoot, 'deploy/Dockerfile'), 'utf8').split('\n');
  const finalStage = lines.slice(lines.findLastIndex((l) => /^FROM\s/.test(l)));
  const workdir = finalStage.filter((l) => /^WORKDIR\s/.test(l)).at(-1);
  if (!workdir) throw new Error('the Dockerfile\'s final stage has no WORKDIR');
  return workdir.split(/\s+/)[1]!;
}

const dataOf = (o: KubeObject): Record<string, string> => {
  const data = { ...((o.stringData as Record<string, string>) ?? {}) };
  for (const [k, v] of Object.entries((o.data as Record<string, string>) ?? {})) data[k] = o.kind === 'Secret' ? Buffer.from(v, 'base64').toString() : v;
  return data;
};

/**
 * The containers of every rendered workload of `kind`, with their environment resolved from the
 * rendered ConfigMaps and Secrets (and `externalSecrets`). A reference to a missing object or key is
 * an error, as it would leave a pod in CreateContainerConfigError.
 */
export async function containersOf(objects: KubeObject[], kind: 'Deployment' | 'Job', externalSecrets: Record<string, Record<string, string>> = {}): Promise<ContainerRun[]> {
  const stores = new Map<string, Record<string, string>>();
  for (const o of objects) if (o.kind === 'ConfigMap' || o.kind === 'Secret') stores.set(`${o.kind}/${o.metadata.name}`, dataOf(o));
  for (const [name, data] of Object.entries(externalSecrets)) if (!stores.has(`Secret/${name}`)) stores.set(`Secret/${name}`, data);
  const store = (kindOf: 'ConfigMap' | 'Secret', name: string, where: string) => {
    const found = stores.get(`${kindOf}/${name}`);
    if (!found) throw new Error(`${where}: ${kindOf} ${name} does not exist`);
    return found;
  };
  const value = (kindOf: 'ConfigMap' | 'Secret', ref: { name: string; key: string }, where: string) => {
    const found = store(kindOf, ref.name, where)[ref.key];
    if (found === undefined) throw new Error(`${where}: ${kindOf} ${ref.name} has no key ${ref.key}`);
    return found;
  };
  const runs: ContainerRun[] = [];
  for (const w of objects.filter((o) => o.kind === kind) as Workload[]) {
    for (const c of w.spec.template.spec.containers) {
      const where = `${w.metadata.name}/${c.name}`;
      const env: Record<string, string> = {};
      for (const from of c.envFrom ?? []) {
        if (from.configMapRef) Object.assign(env, store('ConfigMap', from.configMapRef.name, where));
        if (from.secretRef) Object.assign(env, store('Secret', from.secretRef.name, where));
      }
      for (const e of c.env ?? []) {
        if (e.value !== undefined) env[e.name] = e.value;
        else if (e.valueFrom?.secretKeyRef) env[e.name] = value('Secret', e.valueFrom.secretKeyRef, where);
        else if (e.valueFrom?.configMapKeyRef) env[e.name] = value('ConfigMap', e.valueFrom.configMapKeyRef, where);
        else throw new Error(`${where}: env ${e.name} has neither a value nor a reference this harness knows`);
      }
      const ports: Record<string, number> = {};
      for (const p of c.ports ?? []) {
        const local = await distinctPort();
        ports[p.name] = local;
        for (const [k, v] of Object.entries(env)) if (v === String(p.containerPort) && /PORT$/.test(k)) env[k] = String(local);
      }
      const command = [...(c.command ?? []), ...(c.args ?? [])];
      const argv = command.map((a) => (a === 'node' ? process.execPath : a.replace(inImage, (_m, flag: string | undefined, slash: string) => `${flag ?? ''}${repoRoot}${slash}`)));
      if (argv.length === 0) throw new Error(`${where}: no command (the image's CMD starts the gateway only)`);
      const probe = c.readinessProbe?.httpGet;
      const probePort = probe && (typeof probe.port === 'number' ? probe.port : ports[probe.port]);
      if (probe && probePort === undefined) throw new Error(`${where}: the readiness probe's port ${String(probe.port)} is not a port of the container`);
      runs.push({
        workload: w.metadata.name,
        container: c.name,
        command,
        argv,
        env,
        ports,
        readyUrl: probe ? `http://127.0.0.1:${probePort}${probe.path}` : undefined,
        gracePeriodSeconds: w.spec.template.spec.terminationGracePeriodSeconds ?? 30,
      });
    }
  }
  return runs;
}

/** A container run as a local process. */
export interface RunningContainer {
  run: ContainerRun;
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** How a container is started: as a local process, or in the built image (test/e2e/image.test.ts). */
export type Launcher = (run: ContainerRun) => ChildProcess;

/** Starts the container's command with exactly its environment (and PATH), in the image's WORKDIR. */
export const localProcess: Launcher = (run) =>
  spawn(run.argv[0]!, run.argv.slice(1), { cwd: repoRoot, env: { ...run.env, PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['ignore', 'pipe', 'pipe'] });

/** Starts a container with `launch` (a local process by default), collecting its output. */
export function start(run: ContainerRun, launch: Launcher = localProcess): RunningContainer {
  const child = launch(run);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { run, child, output: () => out, exited };
}

/** Polls the readiness probe until it answers 200; fails at once if the process exits. */
export async function ready(c: RunningContainer, timeoutMs = 90_000): Promise<void> {
  if (!c.run.readyUrl) throw new Error(`${c.run.workload} has no readiness probe`);
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void c.exited.then((code) => (exitCode = code));
  let last = '';
  while (Date.now() < deadline) {
    if (exitCode !== undefined) throw new Error(`${c.run.workload} exited with ${exitCode} before it was ready:\n${c.output()}`);
    try {
      const res = await fetch(c.run.readyUrl, { signal: AbortSignal.timeout(2000) });
      last = `${res.status} ${await res.text()}`;
      if (res.status === 200) return;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${c.run.workload} not ready within ${timeoutMs} ms (last: ${last}):\n${c.output()}`);
}

/** SIGTERM, as the kubelet sends it; resolves with the exit code, or throws after the grace period. */
export async function terminate(c: RunningContainer): Promise<number | null> {
  if (c.child.exitCode !== null) return c.child.exitCode;
  c.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), c.run.gracePeriodSeconds * 1000)));
  const code = await Promise.race([c.exited, late]);
  clearTimeout(timer);
  if (code === 'late') {
    c.child.kill('SIGKILL');
    throw new Error(`${c.run.workload} did not stop within its grace period of ${c.run.gracePeriodSeconds} s`);
  }
  return code;
}

/** Ports handed out by this process: a port freed by one draw can be drawn again by the next, and two containers would share it. */
const handedOut = new Set<number>();
async function distinctPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}
