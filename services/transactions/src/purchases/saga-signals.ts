import { EventEmitter } from 'node:events';
import type { TransactionRow } from '../db/schema.js';

/**
 * Tells requests waiting on a transaction (D9.9: up to SAGA_WAIT_MS) that the saga moved it, so they
 * do not poll. Both kinds of signal come after the commit of the step:
 * - one with the row as its commit left it (`committed`), which the waiter takes as it is;
 * - a bare one (`moved`), when the step did not leave a row to hand on: its waiter reads the row.
 * The move may be applied by another replica's consumer: a signal nobody here waits for goes to the
 * other replicas as a notice (`elsewhere`), whose waiters read the row. Notices may be lost (a
 * reconnection), so waiters still read every `fallbackMs` on their own.
 */
export class SagaSignals {
  private readonly emitter = new EventEmitter();

  constructor(readonly fallbackMs = 1_000, private readonly elsewhere?: (transactionId: string) => void) {
    this.emitter.setMaxListeners(0);
  }

  /** A notice from another replica's consumer: the transaction moved; its waiters here read it. */
  noticed(transactionId: string): void {
    this.emitter.emit(transactionId);
  }

  /** Wakes this replica's waiters of the transaction, or tells the other replicas when there are none. */
  private signal(transactionId: string, row?: TransactionRow): void {
    if (this.emitter.listenerCount(transactionId) > 0) this.emitter.emit(transactionId, row);
    else this.elsewhere?.(transactionId);
  }

  /** After the commit of a step that changed the transaction: its waiters read the row. */
  moved(transactionId: string): void {
    this.signal(transactionId);
  }

  /** After the commit that left the transaction as `row`: its waiters get the row itself. */
  committed(row: TransactionRow): void {
    this.signal(row.id, row);
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
