import type { Sla, TransactionView } from '@aex/contracts';
import type { ExchangeClient } from './client.js';
import type { ExchangeError } from './outcome.js';

export interface WaitForDeliveryOptions {
  /** How long to wait in all, in milliseconds (`deliveryDeadlineMs(sla)` derives one from the service's SLA). */
  timeoutMs: number;
  /** The first pause between two reads; each pause doubles up to `maxIntervalMs`. Default 250 ms. */
  intervalMs?: number;
  /** The longest pause between two reads. Default 4000 ms. */
  maxIntervalMs?: number;
  /** Called with each status seen, the first read's included. */
  onStatus?: (transaction: TransactionView) => void;
  signal?: AbortSignal;
  /** The clock and the pause (tests give their own). */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * How a wait ended: `delivered` (the transaction is `delivered`, or beyond: `settled`, `disputed`);
 * `ended` — it reached another terminal status (`cancelled`, `expired`, `failed`); `timeout` — still
 * in progress when the time was up (the caller may cancel it: the held price comes back); `error` —
 * the exchange refused to show it (other than a rate limit or a moment's unavailability, waited out).
 */
export type DeliveryWait =
  | { outcome: 'delivered' | 'ended' | 'timeout'; transaction: TransactionView }
  | { outcome: 'error'; error: ExchangeError };

const DELIVERED: readonly string[] = ['delivered', 'settled', 'disputed'];
const ENDED: readonly string[] = ['cancelled', 'expired', 'failed'];
/** Answers waited out and read again: a rate limit (429), an exchange briefly unavailable (503), no connection. */
const TRANSIENT: readonly number[] = [0, 429, 503];

/**
 * Reads a purchase until it is delivered, ends, or `timeoutMs` passes. The pause between reads starts
 * at `intervalMs` and doubles up to `maxIntervalMs`, so a long wait costs a few reads a minute, well
 * inside the read rate limit; a 429 or 503 is waited out for its `Retry-After` (at least the current
 * pause) instead of failing the wait. A webhook (`transaction.delivered`) tells sooner where one can
 * reach the agent.
 */
export async function waitForDelivery(client: ExchangeClient, transactionId: string, opts: WaitForDeliveryOptions): Promise<DeliveryWait> {
  const now = opts.now ?? Date.now;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const deadline = now() + opts.timeoutMs;
  const maxPause = opts.maxIntervalMs ?? 4000;
  let pause = Math.min(opts.intervalMs ?? 250, maxPause);
  let last: TransactionView | undefined;
  let refused: ExchangeError | undefined;
  for (;;) {
    const r = await client.getTransaction(transactionId);
    let wait = pause;
    if (r.ok) {
      if (r.data.status !== last?.status) opts.onStatus?.(r.data);
      last = r.data;
      if (DELIVERED.includes(last.status)) return { outcome: 'delivered', transaction: last };
      if (ENDED.includes(last.status)) return { outcome: 'ended', transaction: last };
    } else if (TRANSIENT.includes(r.status)) {
      refused = r.error;
      wait = Math.max(pause, retryAfterMs(r.headers, now()));
    } else {
      return { outcome: 'error', error: r.error };
    }
    const left = deadline - now();
    if (left <= 0 || opts.signal?.aborted) {
      return last ? { outcome: 'timeout', transaction: last } : { outcome: 'error', error: refused! };
    }
    // The last read comes at the deadline rather than a whole pause after it.
    await sleep(Math.min(wait, left));
    pause = Math.min(pause * 2, maxPause);
  }
}

/** `Retry-After` in milliseconds (seconds, or an HTTP date), 0 when absent or unreadable. */
function retryAfterMs(headers: Headers | null, nowMs: number): number {
  const value = headers?.get('retry-after');
  if (!value) return 0;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? 0 : Math.max(0, at - nowMs);
}

/**
 * How long to wait for a delivery of a service with this SLA: what it promises (`maxLatencyMs`)
 * plus a margin for the delivery's way to you, capped (default 60 s) and never past `timeoutMs`,
 * when the exchange expires the purchase and returns the price anyway.
 */
export function deliveryDeadlineMs(sla: Pick<Sla, 'maxLatencyMs' | 'timeoutMs'>, opts: { marginMs?: number; capMs?: number } = {}): number {
  return Math.min(sla.maxLatencyMs + (opts.marginMs ?? 5000), opts.capMs ?? 60_000, sla.timeoutMs);
}
