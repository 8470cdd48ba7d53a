/**
 * Writes items in batches (group commit): an item waits at most `waitMs` for company, a batch holds
 * at most `max`, batches are written one after another, and `add` resolves once its batch has been
 * written (or rejects with the batch's error).
 */
export class TimedBatches<T> {
  private queue: { item: T; done: (err?: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly write: (items: T[]) => Promise<void>, private readonly opts: { max: number; waitMs: number }) {}

  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, done: (err) => (err ? reject(err) : resolve()) });
      if (this.queue.length >= this.opts.max) void this.flush();
      else this.timer ??= setTimeout(() => void this.flush(), this.opts.waitMs);
    });
  }

  /** Writes what waits now; resolves when every batch begun so far is written. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.queue;
    this.queue = [];
    if (batch.length > 0) {
      this.writing = this.writing.then(async () => {
        try {
          await this.write(batch.map((b) => b.item));
          for (const b of batch) b.done();
        } catch (err) {
          for (const b of batch) b.done(err);
        }
      });
    }
    return this.writing;
  }
}
