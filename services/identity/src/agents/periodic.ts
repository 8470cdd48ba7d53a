import type { Logger, Stoppable } from '@aex/platform';
import { outsideTrace } from '@aex/platform';

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

/**
 * Asks `check` until it answers something or `ms` pass (5 ms between tries at first, doubling up to
 * 50 ms); what it answered, or undefined. How a request waits for its saga to decide.
 */
export async function pollUntil<T>(check: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  let interval = 5;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (Date.now() >= deadline) return undefined;
    await new Promise((r) => setTimeout(r, interval));
    interval = Math.min(interval * 2, 50);
  }
}
