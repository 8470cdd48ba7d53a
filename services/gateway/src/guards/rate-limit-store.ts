import { StoreUnreachableError, within, type KvEntry, type KvStore, type Logger } from '@aex/platform';
import { takeTokens, tokensAt, type BucketState, type TakeResult } from '../domain/token-bucket.js';

/**
 * How long one operation on the shared buckets may take. A JetStream KV answers in about a
 * millisecond; a request to a stream whose leader just died waits for nats.js's 5 s timeout, which
 * every request behind it would wait too. Past this, the operation counts as failed and is tried again.
 */
export const KV_TIMEOUT_MS = 500;
/** How long a read of the store vouches for a stand-in bucket (see `StandInBuckets`). */
const STAND_IN_READ_MS = 1_000;
/**
 * Longest a bucket is served by a stand-in: a failover takes seconds; a store that has taken no
 * write for this long (a cluster without a majority) is down, and the bucket fails closed.
 */
const STAND_IN_MAX_MS = 30_000;


/**
 * One operation on the shared buckets, or a `StoreUnreachableError` after `KV_TIMEOUT_MS`. A
 * compare-and-set that lands after it was given up on took tokens without serving anyone — the store
 * only ever holds fewer tokens than it should, never more.
 */
export const withinTimeout = <T>(op: Promise<T>, ms = KV_TIMEOUT_MS): Promise<T> => within(op, ms, 'the rate-limit store');

/** The bucket an entry holds at `now` (no entry: full — an entry untouched long enough has expired). */
export const storedTokens = (entry: KvEntry | null, limit: number, now: number): number =>
  entry ? tokensAt(JSON.parse(entry.value) as BucketState, limit, now) : limit;

interface StandIn {
  limit: number;
  /** The bucket as this replica counts it: the store's last read, refilled, less what was served since. */
  state: BucketState;
  /** Tokens served here that the store has not been charged yet. */
  owed: number;
  /** Real time (ms) of the last read of the store that succeeded. */
  readAt: number;
  /** Real time (ms) the stand-in began. */
  since: number;
  /** Why its last charge was not written: what a refusal past `STAND_IN_MAX_MS` reports. */
  lastFailure?: string;
}

/** Fewest milliseconds between two warnings that a stand-in bucket refused a request. */
const WARN_EVERY_MS = 5_000;

/**
 * D4.4 through a failover: buckets this replica serves alone while the store answers reads but takes
 * no writes — a replicated KV whose stream leader died accepts no write until its other nodes have
 * elected a new one, seconds later, while any of them still answers a read. A stand-in starts from
 * the store's entry, is served locally, and is read again every second (a failed read: 503, as the
 * store is then really unreachable). Every quarter second `settle` tries to charge the store what was
 * served; the first write that succeeds hands the bucket back to the store. The charge may take the
 * stored bucket below zero: refusals then last until the refill has paid it back, so over a minute
 * the limit holds; within the failover each replica serves at most what the bucket held (docs/gateway-caches.md).
 */
export class StandInBuckets {
  private readonly buckets = new Map<string, StandIn>();
  private settling: Promise<void> | undefined;
  private warnedAt = -Infinity;

  constructor(private readonly kv: KvStore, private readonly clock: () => number, private readonly logger?: Logger) {}

  has(key: string): boolean {
    return this.buckets.has(key);
  }

  get size(): number {
    return this.buckets.size;
  }

  /** `n` takes of the bucket, served here; rejects when the store cannot even be read. */
  async take(key: string, limit: number, n: number): Promise<TakeResult[]> {
    let s = this.buckets.get(key);
    if (s && performance.now() - s.since >= STAND_IN_MAX_MS) throw this.refusal(key, `no charge written for ${STAND_IN_MAX_MS / 1000} s (last: ${s.lastFailure ?? 'none tried'})`);
    if (!s || performance.now() - s.readAt >= STAND_IN_READ_MS) {
      const readAt = performance.now();
      const entry = await withinTimeout(this.kv.get(key)).catch((err: unknown) => {
        throw this.refusal(key, `the store cannot be read (${String((err as Error)?.message ?? err)})`);
      });
      const now = this.clock();
      if (this.buckets.size === 0) this.logger?.warn('the rate-limit store takes no writes from this replica (a leader being elected, or every compare-and-set lost): buckets are served by stand-ins, charged to it once it does');
      s = this.buckets.get(key) ?? { limit, state: { tokens: 0, atMs: now }, owed: 0, readAt, since: readAt };
      s.state = { tokens: storedTokens(entry, limit, now) - s.owed, atMs: now };
      s.readAt = readAt;
      this.buckets.set(key, s);
    }
    const batch = takeTokens(s.state, limit, this.clock(), n);
    s.state = batch.state;
    s.owed += batch.granted;
    return batch.results;
  }

  /** A request refused because the bucket's stand-in cannot serve it (503); warned of now and then. */
  private refusal(key: string, why: string): StoreUnreachableError {
    if (performance.now() - this.warnedAt >= WARN_EVERY_MS) {
      this.warnedAt = performance.now();
      this.logger?.warn({ bucket: key, why }, 'rate limiter failing closed: 503 RATE_LIMITER_UNAVAILABLE');
    }
    return new StoreUnreachableError(why);
  }

  /**
   * Charges the store what each stand-in served; a bucket whose charge is written is the store's
   * again. One round at a time: a call during a round waits for it.
   */
  settle(): Promise<void> {
    this.settling ??= Promise.all([...this.buckets].map(([key, s]) => this.settleOne(key, s))).then(() => {
      this.settling = undefined;
    });
    return this.settling;
  }

  /**
   * Charges the store what the stand-in served. The first charge written hands the bucket back to
   * the store at once — under steady traffic the stand-in serves more during every charge's round
   * trip, so waiting for it to owe nothing would keep it serving until it fails closed. What it
   * served during that charge is charged next; when that charge cannot be written, the stand-in
   * takes the bucket again, owing it, so the store never holds more than it should.
   */
  private async settleOne(key: string, s: StandIn): Promise<void> {
    const charged = s.owed;
    const failure = await this.charge(key, s.limit, charged).then(() => undefined, (err: unknown) => String((err as Error)?.message ?? err));
    if (failure !== undefined) {
      // Still no writes (or another replica wrote in between): the next round tries again.
      s.lastFailure = failure;
      return;
    }
    this.buckets.delete(key);
    if (this.buckets.size === 0) this.logger?.info('the rate-limit store takes writes again: every stand-in bucket is charged and handed back');
    let leftover = s.owed - charged;
    for (let attempt = 0; leftover > 0 && attempt < 3; attempt++) {
      try {
        await this.charge(key, s.limit, leftover);
        leftover = 0;
      } catch {
        // Another replica wrote in between: read and try again.
      }
    }
    if (leftover > 0) this.owe(key, s.limit, leftover);
  }

  /** One compare-and-set taking `owed` tokens from the stored bucket, on the leader's entry. */
  private async charge(key: string, limit: number, owed: number): Promise<void> {
    // From the leader: a charge written on a copy's old revision would never get through.
    const entry = await withinTimeout(this.kv.getLatest(key));
    const now = this.clock();
    const value = JSON.stringify({ tokens: storedTokens(entry, limit, now) - owed, atMs: now });
    await withinTimeout(entry ? this.kv.update(key, value, entry.revision) : this.kv.create(key, value));
  }

  /** Puts a charge that could not be written back on the bucket's stand-in (a new one when none serves it). */
  private owe(key: string, limit: number, owed: number): void {
    const s = this.buckets.get(key);
    if (s) {
      s.owed += owed;
      s.state = { tokens: s.state.tokens - owed, atMs: s.state.atMs };
      return;
    }
    const now = performance.now();
    // Read again before it serves (readAt 0): the store took a write just now.
    this.buckets.set(key, { limit, state: { tokens: 0, atMs: this.clock() }, owed, readAt: 0, since: now });
  }
}
