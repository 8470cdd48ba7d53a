import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// What the tests need to run the docs' shell walkthroughs as written.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The ```sh blocks between `<!-- name -->` and `<!-- /name -->` of a Markdown file, joined. */
export function shellBlocks(file: string, name: string): string {
  const text = readFileSync(join(repoRoot, file), 'utf8');
  const start = text.indexOf(`<!-- ${name} -->`);
  const end = text.indexOf(`<!-- /${name} -->`);
  if (start < 0 || end < start) throw new Error(`${file} has no section ${name}`);
  const blocks = [...text.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  if (blocks.length === 0) throw new Error(`${file}'s section ${name} has no sh block`);
  return blocks.join('\n');
}

/** Runs a script in bash, stopping at the first failing command, and gives back what it printed. */
export async function bash(script: string, opts: { cwd: string; env: Record<string, string>; timeoutMs: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`bash exited with ${code ?? signal}:\n${out}`));
    });
  });
}

/** The ```json block between `<!-- name -->` and `<!-- /name -->` of a Markdown file, parsed. */
export function jsonBlock(file: string, name: string): unknown {
  const text = readFileSync(join(repoRoot, file), 'utf8');
  const section = text.slice(text.indexOf(`<!-- ${name} -->`), text.indexOf(`<!-- /${name} -->`));
  const block = /```json\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error(`${file}'s section ${name} has no json block`);
  return JSON.parse(block[1]!);
}
