import type { Io } from './io.js';

/** What every command is given: where it writes, the environment its profile comes from, and when to stop. */
export interface Context {
  readonly io: Io;
  readonly env: NodeJS.ProcessEnv;
  /** Resolves when a command that runs until stopped (`aex listen`) should stop. */
  readonly stopped: () => Promise<void>;
}

/** The process's SIGINT or SIGTERM (Ctrl-C at a terminal, a supervisor's stop). */
export function untilSignalled(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}
