import type { ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { Logger } from '../logger.js';
import { Semaphore, type Stoppable } from './types.js';

/**
 * How long a pull request stays open at the consumer's leader. A request the leader did not answer
 * by then ends and another is sent, so no request outlives a leader by more than this; it is also
 * how long nats.js waits before asking again whether the consumer exists when it did not answer
 * (docs/messaging.md, "When a NATS node is lost"). nats.js's default is 30 s.
 */
export const PULL_EXPIRES_MS = 2_000;

/**
 * The leader holding a pull request sends a heartbeat this often while it has nothing to deliver.
 * Two missed (2–3 s) and nats.js checks the consumer and pulls again — at the leader elected in the
 * meantime. nats.js's default is half the expiry (15 s): a lost leader stalled a consumer 30–45 s.
 */
export const IDLE_HEARTBEAT_MS = 1_000;

/**
 * Ends a consume loop whose consumer is gone: deleted under a pull, or not found twice in a row. A
 * NATS 2.9 server also answers "consumer deleted" to the pulls a consumer's leader holds when it
 * stops leading: the loop started again pulls at once, where nats.js would wait for missed heartbeats.
 */
async function endWhenGone(messages: ConsumerMessages, pull: (alive: boolean) => void, busy: () => boolean): Promise<void> {
  for await (const s of messages.status()) {
    if (s.type === 'heartbeat') pull(true);
    // Missed while waiting for messages: the leader is gone. (A consumer working at full
    // concurrency pulls nothing and hears no heartbeat: that is load, not a stall.)
    else if (s.type === 'heartbeats_missed' && !busy()) pull(false);
    if (s.type === 'consumer_deleted' || (s.type === 'consumer_not_found' && s.count >= 2)) {
      messages.stop();
      return;
    }
  }
}

/** Pauses before a consume loop that ended on its own is started again. */
const RESTART_PAUSES_MS = [250, 500, 1_000, 2_000];

/**
 * Runs a durable pull consumer for as long as it is not stopped: each delivered message goes to
 * `handle`, at most `concurrency` at a time. nats.js recovers a pull on its own (heartbeats missed, a
 * reconnect, a leader elected again) but not a consumer that is gone — deleted, or lost with the
 * only node that held it — which it only keeps looking for. Such a loop is ended, and any loop that
 * ended is started again once `ensure` has made the consumer again, so no consumer of a service
 * silently stops taking messages.
 */
export function runPullConsumer(
  js: JetStreamClient,
  where: { stream: string; durable: string },
  opts: {
    concurrency: number;
    ensure: () => Promise<void>;
    /** Told whether the pull is alive (a message or a heartbeat came) or stalled (heartbeats missed, its loop ended). */
    pull?: (alive: boolean) => void;
  },
  handle: (m: JsMsg) => Promise<void>,
  logger: Logger | undefined,
): Stoppable {
  const { concurrency } = opts;
  const pull = opts.pull ?? (() => undefined);
  const gate = new Semaphore(concurrency);
  let stopped = false;
  let messages: ConsumerMessages | undefined;
  let wake: (() => void) | undefined;
  const consumeOnce = async (again: boolean) => {
    if (again) await opts.ensure();
    const consumer = await js.consumers.get(where.stream, where.durable);
    const current = await consumer.consume({ max_messages: concurrency * 2, expires: PULL_EXPIRES_MS, idle_heartbeat: IDLE_HEARTBEAT_MS });
    messages = current;
    void endWhenGone(current, pull, () => gate.saturated);
    // `stop` may have come while the consumer was looked up. Not awaited: nats.js's `close` resolves
    // once the iteration below has ended, which it then does at once.
    if (stopped) void messages.close();
    for await (const m of messages) {
      pull(true);
      await gate.acquire();
      void handle(m).finally(() => gate.release());
    }
  };
  const loop = (async () => {
    let failures = 0;
    for (let first = true; !stopped; first = false) {
      const started = Date.now();
      const err = await consumeOnce(!first).then(() => undefined, (e: unknown) => e);
      if (stopped) break;
      pull(false);
      // A loop that ran a while ended for a new reason: the pauses start over.
      failures = Date.now() - started > RESTART_PAUSES_MS.at(-1)! ? 0 : failures + 1;
      logger?.warn({ err, ...where }, 'consumer stopped taking messages; consuming again');
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, RESTART_PAUSES_MS[Math.min(failures, RESTART_PAUSES_MS.length - 1)]);
      });
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      wake?.();
      await messages?.close();
      await loop;
      await gate.idle();
    },
  };
}
