// The local stack's watchdog (docs/architecture.md, "Readiness and the run command"): Postgres and
// nats-server run in process groups of their own, so a stack killed outright (SIGKILL, an OOM kill, a
// crash) would leave them running. The stack starts this small process with a pipe on its standard
// input and writes one line per server it starts: `<pid> <program> <signal>`. When the pipe ends —
// the stack exited, however it did — every server still running under its program's name is sent its
// signal, then SIGKILL if it has not stopped within 15 s. Plain JavaScript, run by `node` alone.

import { readFileSync } from 'node:fs';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

const watched = new Map();
let pending = '';

process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  const lines = pending.split('\n');
  pending = lines.pop() ?? '';
  for (const line of lines) {
    const [pid, program, signal] = line.trim().split(' ');
    const n = Number.parseInt(pid ?? '', 10);
    if (Number.isSafeInteger(n) && n > 1 && program && signal) watched.set(n, { program, signal });
  }
});
process.stdin.on('end', () => void stopAll());
process.stdin.on('error', () => void stopAll());
// A Ctrl-C at the terminal is the stack's to handle; this process waits for the pipe to end.
process.on('SIGINT', () => undefined);

/** Whether `pid` still runs `program` (a pid reused by another program is left alone). */
function runs(pid, program) {
  try {
    return (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '').endsWith(program);
  } catch {
    return process.platform !== 'linux' && alive(pid);
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signal(pid, name) {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

async function stopAll() {
  const left = [...watched].filter(([pid, w]) => runs(pid, w.program));
  for (const [pid, w] of left) signal(pid, w.signal);
  for (let i = 0; i < 150 && left.some(([pid, w]) => runs(pid, w.program)); i++) await sleep(100);
  for (const [pid, w] of left) if (runs(pid, w.program)) signal(pid, 'SIGKILL');
  process.exit(0);
}
