import { EventEmitter } from 'node:events';

/**
 * Tells requests waiting on a transaction (D9.9: up to SAGA_WAIT_MS) that the saga moved it, so they
 * read its row once instead of polling. A signal may come before the move is committed (consumers
 * signal after each commit, for every transaction they touched), so a waiter always re-reads; and the
 * move may be applied by another replica, so waiters still look every `fallbackMs` on their own.
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

  /** Resolves at the next signal for the transaction, after `ms`, whichever comes first. */
  next(transactionId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.emitter.off(transactionId, done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, Math.min(ms, this.fallbackMs)));
      this.emitter.on(transactionId, done);
    });
  }
}
