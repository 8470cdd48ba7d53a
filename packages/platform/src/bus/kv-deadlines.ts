/**
 * Bounds on KV operations. A JetStream KV answers in about a millisecond; an operation on a bucket
 * whose leader just died waits for nats.js's 5 s request timeout, and an election takes NATS 2.9 4–9 s.
 * A caller on a request's path waits for an attempt at most a bound of its own, then tries again or
 * goes on without the store (docs/messaging.md "When a NATS node is lost").
 */

const RETRY_PAUSE_MS = 100;

/** The store did not answer in time (a node down, a bucket without a leader, no connection). */
export class StoreUnreachableError extends Error {}

/**
 * `op`, or a `StoreUnreachableError` after `ms`. The operation may still complete later: the caller
 * must be fine with that (a write that lands after its caller gave up).
 */
export function within<T>(op: Promise<T>, ms: number, store = 'the store'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreUnreachableError(`no answer from ${store} within ${ms} ms`)), ms);
  });
  op.catch(() => undefined); // a late failure of an operation no longer waited for is not unhandled
  return Promise.race([op, timeout]).finally(() => clearTimeout(timer));
}

/**
 * `attempt()`, each try bounded by `attemptMs`, tried again after any failure until `budgetMs` has
 * passed (a leader election); then the last error.
 */
export async function withinBudget<T>(attempt: () => Promise<T>, opts: { attemptMs: number; budgetMs: number; store?: string }): Promise<T> {
  const deadline = Date.now() + opts.budgetMs;
  for (;;) {
    try {
      return await within(attempt(), opts.attemptMs, opts.store);
    } catch (err) {
      if (Date.now() + opts.attemptMs > deadline) throw err;
      await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
    }
  }
}
