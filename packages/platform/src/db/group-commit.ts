/**
 * Group commit: requests that arrive while a batch is being written wait for the next
 * batch, and each batch is written in one database transaction — so under load many requests share
 * one BEGIN, one lock round and one COMMIT, and alone a request is written at once, never delayed
 * by a timer.
 *
 * `write` gets the batch's items and gives one result per item, in order. When a batch of several
 * fails as a whole (a deadlock, a constraint one item broke), each of its items is written again
 * alone, so one item's failure never becomes another's: every item gets its own outcome.
 */
export class GroupCommit<I, O> {
  private readonly queue: Array<{ item: I; resolve: (o: O) => void; reject: (err: unknown) => void }> = [];
  private running = 0;

  constructor(
    private readonly write: (items: I[]) => Promise<O[]>,
    private readonly opts: { maxBatch: number; maxInFlight: number },
  ) {}

  submit(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.running < this.opts.maxInFlight) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running++;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.opts.maxBatch);
        try {
          const results = await this.write(batch.map((b) => b.item));
          batch.forEach((b, i) => b.resolve(results[i]!));
        } catch (err) {
          if (batch.length === 1) batch[0]!.reject(err);
          else await Promise.all(batch.map((b) => this.write([b.item]).then(([o]) => b.resolve(o!), b.reject)));
        }
      }
    } finally {
      this.running--;
    }
  }
}
