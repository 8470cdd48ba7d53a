import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@aex/platform';

/** A server the stack started in a process group of its own, and how it is stopped. */
export interface Watched {
  pid: number;
  program: string;
  signal: NodeJS.Signals;
}

export interface Watchdog {
  watch(server: Watched): void;
  /** After the servers are stopped: the watchdog finds none left and exits. */
  close(): void;
}

/**
 * Nothing the stack starts outlives it: `orphan-watchdog.mjs` runs beside it, tied to it by a pipe
 * that the kernel closes when the stack exits however it does (SIGKILL included), and then stops
 * every server it was told about. It is detached from the terminal's process group, so a Ctrl-C
 * reaches the stack, which stops its servers itself, in order.
 */
export function startWatchdog(logger: Logger): Watchdog {
  const script = fileURLToPath(new URL('./orphan-watchdog.mjs', import.meta.url));
  const child = spawn(process.execPath, [script], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  child.once('error', (err) => logger.error({ err }, 'the watchdog of the local servers did not start'));
  child.stdin.on('error', () => undefined);
  // Neither the process nor its pipe keeps the stack's event loop alive.
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  return {
    watch: (s) => void child.stdin.write(`${s.pid} ${s.program} ${s.signal}\n`),
    close: () => child.stdin.end(),
  };
}

/** With Postgres and NATS given by the configuration, the stack starts no server to watch. */
export const noWatchdog: Watchdog = { watch: () => undefined, close: () => undefined };
