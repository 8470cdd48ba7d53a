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

/** Pauses before a consume loop that ended on its own is started again. */
const RESTART_PAUSES_MS = [250, 500, 1_000, 2_000];

/**
 * Runs a durable pull consumer for as long as it is not stopped: each delivered message goes to
 * `handle`, at most `concurrency` at a time. nats.js recovers a pull on its own (heartbeats missed, a
 * reconnect, a leader elected again); when its loop ends anyway (the consumer was gone for a while,
 * the connection was refused a subscription), it is started again, so no consumer of a service
 * silently stops taking messages.
 */
export function runPullConsumer(
  js: JetStreamClient,
  where: { stream: string; durable: string },
  concurrency: number,
  handle: (m: JsMsg) => Promise<void>,
  logger: Logger | undefined,
): Stoppable {
  const gate = new Semaphore(concurrency);
  let stopped = false;
  let messages: ConsumerMessages | undefined;
  let wake: (() => void) | undefined;
  const consumeOnce = async () => {
    const consumer = await js.consumers.get(where.stream, where.durable);
    messages = await consumer.consume({ max_messages: concurrency * 2, expires: PULL_EXPIRES_MS, idle_heartbeat: IDLE_HEARTBEAT_MS });
    // `stop` may have come while the consumer was looked up.
    if (stopped) await messages.close();
    for await (const m of messages) {
      await gate.acquire();
      void handle(m).finally(() => gate.release());
    }
  };
  const loop = (async () => {
    for (let attempt = 0; !stopped; attempt++) {
      const started = Date.now();
      const err = await consumeOnce().then(() => undefined, (e: unknown) => e);
      if (stopped) break;
      // A loop that ran a while ended for a new reason: the pauses start over.
      if (Date.now() - started > RESTART_PAUSES_MS.at(-1)!) attempt = 0;
      logger?.warn({ err, ...where }, 'consumer stopped taking messages; consuming again');
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, RESTART_PAUSES_MS[Math.min(attempt, RESTART_PAUSES_MS.length - 1)]);
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
