import type { Logger } from './logger.js';
import type { Stoppable } from './bus/types.js';
import { outsideTrace } from './bus/tracing.js';

/**
 * Runs `task` every `everyMs` until stopped, never two at once; a failure is logged and the next
 * turn tries again. What the task does must be safe on every replica at once (its rows claimed with
 * SKIP LOCKED): the schedule is not coordinated between replicas.
 */
export function startPeriodic(logger: Logger, what: string, everyMs: number, task: () => Promise<unknown>): Stoppable {
  let running: Promise<unknown> | undefined;
  const timer = outsideTrace(() => setInterval(() => {
    if (running) return;
    running = task()
      .catch((err) => logger.warn({ err }, `${what} failed; trying again`))
      .finally(() => (running = undefined));
  }, everyMs));
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
