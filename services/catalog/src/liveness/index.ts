import { outsideTrace, type Stoppable } from '@aex/platform';
import type { CatalogDeps } from '../context.js';
import { LIVENESS } from '../domain/liveness.js';
import { providersDue, prunePurchases, reevaluate, type SweepMark } from './provider-liveness.js';
import { startPurchaseRecorder } from './purchase-events.js';

/** How often each replica looks for liveness that time changed. */
export const SWEEP_EVERY_MS = 1000;
/** Purchases are kept this long after their verdict left the window (a late event then finds its row). */
const KEPT_AFTER_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface LivenessService extends Stoppable {
  /** Evaluates every provider whose liveness time changed since the last sweep; resolves once a sweep begun after the call is done. */
  sweep(): Promise<void>;
}

/**
 * D22.3: the catalog's knowledge of which providers deliver. Events change a provider's liveness as
 * they arrive (`purchase-events.ts`); time changes it too, with no event — a purchase in progress
 * passes its SLA, a verdict leaves the window — so every replica also sweeps each second for the
 * providers whose purchases crossed one of those moments since its last sweep, and evaluates them.
 * Evaluations are idempotent and serialised per provider, so replicas sweeping the same ones is
 * harmless. A replica's first sweep looks back a whole window, and at every purchase overdue in
 * progress: what passed while no catalog ran.
 */
export async function startLiveness(deps: CatalogDeps): Promise<LivenessService> {
  const recorder = await startPurchaseRecorder(deps);
  let last: SweepMark = { at: new Date(deps.now().getTime() - LIVENESS.windowMs), horizon: '0' };
  let running: Promise<void> | undefined;
  let stopped = false;

  const once = async (): Promise<void> => {
    const to = deps.now();
    const due = await providersDue(deps.db, last, to);
    for (const agentId of due.agentIds) await deps.tx.run((trx) => reevaluate(trx, agentId, to));
    last = due.mark;
    await prunePurchases(deps.db, new Date(to.getTime() - LIVENESS.windowMs - KEPT_AFTER_WINDOW_MS));
  };
  const start = (): Promise<void> => {
    running ??= once().finally(() => {
      running = undefined;
    });
    return running;
  };
  // A sweep already running may have read the clock before the caller's moment: then the next one.
  let queued: Promise<void> | undefined;
  const sweep = (): Promise<void> => {
    if (!running) return start();
    queued ??= running.catch(() => undefined).then(() => {
      queued = undefined;
      return start();
    });
    return queued;
  };
  let timer: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    if (stopped) return;
    timer = outsideTrace(() => setTimeout(() => {
      sweep()
        .catch((err: unknown) => deps.logger.warn({ err }, 'liveness sweep failed; retried at the next'))
        .finally(schedule);
    }, SWEEP_EVERY_MS));
  };
  schedule();

  return {
    sweep,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => undefined);
      await recorder.stop();
    },
  };
}
