import { TERMINAL_STATUSES } from '@aex/contracts';
import type { ExchangeClient, Outcome } from '@agent-exchange/client';

type Transaction = Extract<Awaited<ReturnType<ExchangeClient['getTransaction']>>, { ok: true }>['data'];

export interface WaitOptions {
  /** Gives up after this long, answering the last status seen. */
  timeoutMs: number;
  /** Time between two reads (default 500 ms). */
  intervalMs?: number;
  /** Called with every status seen, the first read included. */
  onStatus?: (tx: Transaction, elapsedMs: number) => void | Promise<void>;
  signal?: AbortSignal;
}

export type WaitOutcome = { reached: true; transaction: Transaction } | { reached: false; transaction: Transaction; timedOut: boolean } | { reached: false; error: Extract<Outcome<Transaction>, { ok: false }>['error'] };

/**
 * Reads a transaction until its status is one of `until` or terminal (settled, cancelled, expired,
 * failed), or the time is up. Polling, not webhooks: a tool may run where nothing can reach it.
 */
export async function waitForStatus(client: ExchangeClient, transactionId: string, until: readonly string[], opts: WaitOptions): Promise<WaitOutcome> {
  const started = Date.now();
  const interval = opts.intervalMs ?? 500;
  let lastStatus: string | undefined;
  for (;;) {
    const r = await client.getTransaction(transactionId);
    if (!r.ok) return { reached: false, error: r.error };
    const tx = r.data;
    if (tx.status !== lastStatus) {
      lastStatus = tx.status;
      await opts.onStatus?.(tx, Date.now() - started);
    }
    if (until.includes(tx.status)) return { reached: true, transaction: tx };
    if (TERMINAL_STATUSES.includes(tx.status)) return { reached: false, transaction: tx, timedOut: false };
    if (Date.now() - started + interval > opts.timeoutMs || opts.signal?.aborted) return { reached: false, transaction: tx, timedOut: true };
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

/** Statuses in which the provider has work to do. */
export const AWAITING_DELIVERY: readonly string[] = ['funds_held', 'executing', 'validation_failed'];
