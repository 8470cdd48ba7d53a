import { EventEmitter } from 'node:events';
import type { TransactionRow } from './db/schema.js';

/**
 * Tells requests waiting on a transaction (D9.9: up to SAGA_WAIT_MS) that the saga moved it, so they
 * do not poll. Two kinds of signal:
 * - a bare one (`touch` then `flush`): may come before the move is committed (consumers flush after
 *   each commit, for every transaction any of them touched), so its waiter reads the row again;
 * - one with the row as its own commit left it (`committed`), which the waiter takes as it is.
 * The move may also be applied by another replica, so waiters still read every `fallbackMs` on their own.
 */
export class SagaSignals {
  private readonly emitter = new EventEmitter();
  private touched = new Set<string>();

  constructor(readonly fallbackMs = 100) {
    this.emitter.setMaxListeners(0);
  }

  /** Marks a transaction as moved by a consumer's database transaction that is about to commit. */
  touch(transactionId: string): void {
    this.touched.add(transactionId);
  }

  /** After a commit: wakes the waiters of every transaction touched since the last flush. */
  flush(): void {
    const ids = this.touched;
    this.touched = new Set();
    for (const id of ids) this.emitter.emit(id);
  }

  /** After the commit that left the transaction as `row`: its waiters get the row itself. */
  committed(row: TransactionRow): void {
    this.emitter.emit(row.id, row);
  }

  /**
   * Listens for the transaction's signals from now on. Opened before the commit that starts a saga
   * step, it misses none of the signals of that step; `close` it when done.
   */
  watch(transactionId: string): SagaWatch {
    return new SagaWatch(this.emitter, transactionId);
  }
}

/** The signals of one transaction since its watch opened (`SagaSignals.watch`). */
export class SagaWatch {
  /** A signal not yet taken by `next`, with the latest row signalled since. */
  private pending: { row: TransactionRow | undefined } | null = null;
  private wake: (() => void) | null = null;
  private readonly listener = (row?: TransactionRow) => {
    this.pending = { row: row ?? this.pending?.row };
    this.wake?.();
  };

  constructor(private readonly emitter: EventEmitter, private readonly transactionId: string) {
    emitter.on(transactionId, this.listener);
  }

  /**
   * The next signal (at once when one came since the last call), or null after `ms` without one.
   * Its `row` is the transaction as a commit left it, when the signal carried it.
   */
  next(ms: number): Promise<{ row: TransactionRow | undefined } | null> {
    const take = () => {
      const signal = this.pending;
      this.pending = null;
      return signal;
    };
    if (this.pending) return Promise.resolve(take());
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve(take());
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.wake = done;
    });
  }

  close(): void {
    this.emitter.off(this.transactionId, this.listener);
    this.wake?.();
  }
}
