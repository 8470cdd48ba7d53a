/**
 * `pnpm bench`: every benchmark, one after the other (each alone on the machine), its own
 * output shown as it runs, then one table of every figure next to its baseline measured in the same
 * run, with the ratio and the target. All figures are also written as JSON, so that runs can be
 * compared over time.
 *
 *   pnpm bench                              all of them (about 20 minutes)
 *   pnpm bench --only gateway,lifecycle     some of them
 *   pnpm bench --json bench-results.json    where the JSON goes (default: .data/bench/<time>.json)
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { table, type Row } from './report.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const BENCHES: Record<string, string> = {
  gateway: 'gateway/gateway.bench.ts',
  lifecycle: 'lifecycle/lifecycle.bench.ts',
  sessions: 'sessions/sessions.bench.ts',
  signing: 'signing/signing.bench.ts',
  webhooks: 'webhooks/webhooks.bench.ts',
  discovery: 'discovery/discovery.bench.ts',
  ledger: 'ledger/ledger-check.bench.ts',
};

const args = process.argv.slice(2);
const arg = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const only = arg('--only')?.split(',').map((s) => s.trim()) ?? Object.keys(BENCHES);
const unknown = only.filter((b) => !(b in BENCHES));
if (unknown.length > 0) {
  console.error(`unknown benchmark ${unknown.join(', ')}; known: ${Object.keys(BENCHES).join(', ')}`);
  process.exit(2);
}
const out = resolve(arg('--json') ?? join(root, '.data/bench', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`));

const scratch = join(tmpdir(), `aex-bench-${process.pid}`);
mkdirSync(scratch, { recursive: true });
const reports: { bench: string; at: string; rows: Row[]; detail: unknown }[] = [];
const failed: string[] = [];
try {
  for (const name of only) {
    console.log(`\n━━ ${name} ━━`);
    const file = join(scratch, `${name}.json`);
    const code = await new Promise<number | null>((done) => {
      const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', join(here, BENCHES[name]!), '--json', file], { cwd: root, stdio: 'inherit' });
      child.once('exit', (c) => done(c));
    });
    try {
      if (code !== 0) throw new Error(`exit code ${code}`);
      reports.push(JSON.parse(readFileSync(file, 'utf8')) as (typeof reports)[number]);
    } catch (err) {
      failed.push(`${name} (${(err as Error).message})`);
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

// The figures are written before they are shown, so nothing measured is lost to the table.
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), node: process.version, reports, failed }, null, 2));
console.log('\n━━ every figure, each next to its baseline from the same run (ratio = exchange ÷ baseline; ↓: lower is better) ━━\n');
console.log(table(reports.flatMap((r) => r.rows.map((row) => ({ ...row, bench: r.bench })))));
console.log(`\nwritten to ${out}`);
if (failed.length > 0) {
  console.error(`failed: ${failed.join(', ')}`);
  process.exit(1);
}
