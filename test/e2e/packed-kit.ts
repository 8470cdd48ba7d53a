import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// The packages people install (the client, the CLI, the MCP server), as they get them: packed with
// pnpm (which builds them), installed with npm into a project outside the workspace.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

/** Packs each workspace package and installs the tarballs with npm into `dir/project`; answers that project's folder. */
export async function installPacked(packages: string[], dir: string): Promise<string> {
  const tarballs = join(dir, 'tarballs');
  const project = join(dir, 'project');
  mkdirSync(tarballs, { recursive: true });
  mkdirSync(project, { recursive: true });
  for (const name of packages) await run('pnpm', ['--filter', name, 'pack', '--pack-destination', tarballs], { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024 });
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'my-agents', version: '1.0.0', private: true, type: 'module' }));
  const files = readdirSync(tarballs).filter((f) => f.endsWith('.tgz')).map((f) => join(tarballs, f));
  await run('npm', ['install', '--no-fund', '--no-audit', '--no-update-notifier', ...files], {
    cwd: project,
    // The user's npm cache, so dependencies come from it rather than the registry each run.
    env: { ...process.env, npm_config_cache: process.env.npm_config_cache ?? join(homedir(), '.npm') },
    maxBuffer: 16 * 1024 * 1024,
  });
  return project;
}

/** The path of an installed package's bin. */
export const binOf = (project: string, name: string) => join(project, 'node_modules', '.bin', name);
