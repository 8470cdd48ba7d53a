import { BusUnavailableError } from './bus/types.js';

/**
 * How an RPC is asked so that a replica that dies with a request in it costs that request little
 * (docs/idempotency.md "When a replica dies"). Each service's replicas share one queue group, so
 * NATS gives each copy of a request to one of the replicas at random, and a replica killed or cut
 * off loses its subscription at once: a copy sent afterwards reaches a live one.
 */

/** Sends one copy of the request, waiting at most `timeoutMs` for its answer. */
export type Send = (timeoutMs: number) => Promise<unknown>;

/** A read is asked again after this share of the RPC timeout without an answer: long enough that a saturated exchange, whose reads are slow but answered, is not sent more of them. */
const HEDGE_SHARE = 0.2;
/** At most this many copies of one read. */
const MAX_COPIES = 3;
/** A write is asked again, under its operation key, when this share of the RPC timeout is left. */
const WRITE_AGAIN_SHARE = 0.2;
/**
 * "No responders" (no replica subscribed) is asked again this long — a replica restarting, the
 * other one's connection moving to another NATS node — before the caller is told 503.
 */
const NO_RESPONDERS_GRACE_MS = 1_000;
const PAUSE_MS = 100;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One copy, sent again while NATS says nobody listens, until `graceUntil` (or the deadline). */
export async function askDelivered(send: Send, deadline: number, graceUntil: number): Promise<unknown> {
  for (;;) {
    try {
      return await send(Math.max(1, deadline - Date.now()));
    } catch (err) {
      if (!(err instanceof BusUnavailableError) || !err.noResponders) throw err;
      if (Date.now() + PAUSE_MS >= Math.min(graceUntil, deadline)) throw err;
      await sleep(PAUSE_MS);
    }
  }
}

const graceFrom = (start: number, timeoutMs: number) => start + Math.min(NO_RESPONDERS_GRACE_MS, timeoutMs);

/**
 * A read, hedged: without an answer after a fifth of the timeout another copy is sent (the queue
 * group picks a replica again), up to three copies; the first answer wins; all share one deadline.
 * Safe because a read changes nothing.
 */
export function askHedged(send: Send, timeoutMs: number): Promise<unknown> {
  const start = Date.now();
  const deadline = start + timeoutMs;
  const grace = graceFrom(start, timeoutMs);
  const hedgeMs = Math.max(1, Math.round(timeoutMs * HEDGE_SHARE));
  return new Promise((resolve, reject) => {
    let settled = false;
    let running = 0;
    let copies = 0;
    let timer: NodeJS.Timeout | undefined;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const launch = () => {
      copies++;
      running++;
      askDelivered(send, deadline, grace).then(
        (reply) => settle(() => resolve(reply)),
        (err: unknown) => {
          running--;
          // Another copy may still answer; a failure that is not the bus's ends the call at once.
          if (running === 0 || !(err instanceof BusUnavailableError)) settle(() => reject(err));
        },
      );
      if (copies < MAX_COPIES) timer = setTimeout(() => !settled && launch(), hedgeMs);
    };
    launch();
  });
}

/** The outcome of a write is not known: it was delivered, and neither it nor its repeats answered. */
export const OUTCOME_UNKNOWN = Symbol('outcome unknown');

/**
 * A write that carries an operation key (an Idempotency-Key, the client's or the gateway's): the
 * first copy waits the whole timeout; when a fifth of it is left without an answer — or at once
 * when a NATS server is lost meanwhile (`serverLost`) — the request is asked again under the same key, which the owner answers with the stored outcome if the first
 * copy committed, or runs if it did not (never both: records.ts). `inUse` recognises the owner's
 * "that key is still being processed" (the first copy holds its claim), asked again until the
 * deadline; `sendAgain` sends the repeats (without the first copy's mark). Resolves with the first answer, whichever copy gives it (`again` says the repeat did),
 * or `OUTCOME_UNKNOWN`; rejects only when no replica ever took the request.
 */
export function askKeyedWrite(
  send: Send, timeoutMs: number, inUse: (reply: unknown) => boolean, sendAgain: Send = send,
  serverLost?: (listener: () => void) => () => void,
): Promise<{ reply: unknown; again: boolean } | typeof OUTCOME_UNKNOWN> {
  const start = Date.now();
  const deadline = start + timeoutMs;
  return new Promise((resolve, reject) => {
    let settled = false;
    let firstLost = false;
    let againLost = false;
    let asking = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stopListening?.();
      fn();
    };
    const askAgain = async (): Promise<unknown> => {
      while (!settled && Date.now() < deadline) {
        try {
          const reply = await sendAgain(Math.max(1, deadline - Date.now()));
          if (!inUse(reply)) return reply;
        } catch (err) {
          if (!(err instanceof BusUnavailableError)) throw err;
        }
        await sleep(Math.min(2 * PAUSE_MS, Math.max(0, deadline - Date.now())));
      }
      return OUTCOME_UNKNOWN;
    };
    const lost = () => {
      firstLost = true;
      if (againLost) settle(() => resolve(OUTCOME_UNKNOWN));
    };
    askDelivered(send, deadline, graceFrom(start, timeoutMs)).then(
      // "In use" to the first copy: a repeat holds the key and answers for the request.
      (reply) => (inUse(reply) ? lost() : settle(() => resolve({ reply, again: false }))),
      (err: unknown) => {
        // Never delivered (no responders), or not the bus's failure: nothing is unknown.
        if (!(err instanceof BusUnavailableError) || err.noResponders) return settle(() => reject(err));
        lost();
      },
    );
    const again = () => {
      if (asking || settled) return;
      asking = true;
      clearTimeout(timer);
      askAgain().then(
        (reply) => {
          if (reply !== OUTCOME_UNKNOWN) return settle(() => resolve({ reply, again: true }));
          againLost = true;
          if (firstLost) settle(() => resolve(OUTCOME_UNKNOWN));
        },
        (err: unknown) => settle(() => reject(err)),
      );
    };
    const timer = setTimeout(again, Math.round(timeoutMs * (1 - WRITE_AGAIN_SHARE)));
    // A NATS server lost (this connection's, or the one the replica holding the request was on):
    // the first copy or its answer may be gone with it, so the repeat is not left to the timer.
    const stopListening = serverLost?.(again);
  });
}
