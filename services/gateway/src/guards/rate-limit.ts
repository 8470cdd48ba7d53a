import { AppError, names } from '@aex/contracts';
import { KvConflictError, RecentMap, type Bus, type KvEntry, type KvStore } from '@aex/platform';
import { spareTokens, takeResult, takeTokens, tokensAt, type BucketState, type TakeResult } from '../domain/token-bucket.js';

export type RateGroup = 'read' | 'write' | 'discovery' | 'key_rotation' | 'accounts_ip' | 'public_ip' | 'auth_failures_ip';

export interface LimitDecision extends TakeResult {
  /** D4.3 headers of this answer. */
  headers: Record<string, string>;
}

interface Waiter {
  resolve(r: LimitDecision): void;
  reject(err: unknown): void;
}

/** A lost compare-and-set is retried this often: only other replicas can win it (see below). */
const MAX_ROUNDS = 64;
/** How long a replica holds tokens it took ahead (a lease); unspent ones then go back to the store. */
const LEASE_MS = 250;

/** Tokens this replica took from the shared bucket ahead of its requests, spent locally. */
interface Lease {
  tokens: number;
  /** The shared bucket right after the lease was taken. */
  shared: BucketState;
  limit: number;
  expiresAt: number;
}

/** Takes of one bucket in the current and the previous lease period: what a new lease should hold. */
interface Demand {
  since: number;
  count: number;
  previous: number;
}

/**
 * D4: token buckets shared by every gateway replica in a KV bucket, updated with compare-and-set.
 * Within one replica, concurrent takes of one bucket are coalesced: at most one compare-and-set per
 * bucket is in flight, and the requests that arrive meanwhile are served together by the next one.
 * A lost compare-and-set therefore means another replica changed the bucket, and with R replicas a
 * round is lost at most R−1 times in a row — so contention never turns into a refusal: a request is
 * refused (429) only when the bucket truly holds no token. Fails closed: when the KV cannot be read
 * or written, 503 RATE_LIMITER_UNAVAILABLE.
 *
 * A bucket taken often is not asked on every request: with each batch, the replica also
 * takes as many tokens as the bucket had requests in the last quarter second — only out of the upper
 * half of the bucket, at most a tenth of it (`spareTokens`) — and spends them locally for up to
 * `LEASE_MS`; what it has not spent then goes back. Below half a bucket every token is taken from the
 * store as before, so a refusal is exact where it matters; docs/gateway-caches.md has the argument.
 */
export class RateLimiter {
  private readonly queues = new Map<string, Waiter[]>();
  private readonly leases = new Map<string, Lease>();
  private readonly demand = new Map<string, Demand>();
  /**
   * What this replica last wrote to each bucket, with its revision: the next
   * compare-and-set is tried on it without reading the store first. Only another replica's write (or
   * the entry's expiry) makes it stale, and then the compare-and-set fails and the bucket is read.
   */
  private readonly written = new RecentMap<string, KvEntry>(10_000);
  private readonly sweeper: NodeJS.Timeout;

  private constructor(private readonly kv: KvStore, private readonly limits: Record<RateGroup, number>, private readonly clock: () => number) {
    this.sweeper = setInterval(() => this.sweep(), LEASE_MS);
    this.sweeper.unref();
  }

  static async create(bus: Bus, limits: Record<RateGroup, number>, clock: () => number = Date.now): Promise<RateLimiter> {
    // An entry untouched for 2 minutes is a full bucket again, so the TTL loses nothing.
    return new RateLimiter(await bus.kv(names.bucket(bus.namespace, 'rate_limits'), { ttlMs: 120_000 }), limits, clock);
  }

  /** Gives every unspent leased token back to the store. */
  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    const held = [...this.leases.entries()];
    this.leases.clear();
    await Promise.all(held.map(([key, lease]) => this.giveBack(key, lease.limit, lease.tokens)));
  }

  take(group: RateGroup, subject: string): Promise<LimitDecision> {
    const key = bucketKey(group, subject);
    this.count(key, this.clock());
    const local = this.fromLease(key);
    if (local) return Promise.resolve(local);
    return new Promise((resolve, reject) => {
      const queue = this.queues.get(key);
      if (queue) {
        queue.push({ resolve, reject });
        return;
      }
      this.queues.set(key, [{ resolve, reject }]);
      void this.drain(key, this.limits[group]);
    });
  }

  /** Serves the bucket's queue batch by batch until no request waits. */
  private async drain(key: string, limit: number): Promise<void> {
    const queue = this.queues.get(key)!;
    while (queue.length > 0) {
      // Requests that queued while a lease was being taken are served from it first.
      let local: LimitDecision | undefined;
      while (queue.length > 0 && (local = this.fromLease(key))) queue.shift()!.resolve(local);
      if (queue.length === 0) break;
      const batch = queue.splice(0);
      try {
        const results = await this.takeBatch(key, limit, batch.length, this.demand.get(key)?.previous ?? 0);
        batch.forEach((w, i) => w.resolve(withHeaders(results[i]!)));
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
    this.queues.delete(key);
  }

  /** Gives one token back (a take that turned out not to count); best effort, never above capacity. */
  async refund(group: RateGroup, subject: string): Promise<void> {
    await this.giveBack(bucketKey(group, subject), this.limits[group], 1);
  }

  /** Puts `n` tokens back into the store; best effort, never above capacity. */
  private async giveBack(key: string, limit: number, n: number): Promise<void> {
    if (n < 1) return;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const { entry } = await this.read(key, round).catch(() => ({ entry: null }));
      if (!entry) return; // expired: the bucket is full anyway
      const now = this.clock();
      const state = { tokens: Math.min(limit, tokensAt(JSON.parse(entry.value) as BucketState, limit, now) + n), atMs: now };
      try {
        await this.write(key, JSON.stringify(state), entry);
        return;
      } catch (err) {
        if (!(err instanceof KvConflictError)) return;
      }
    }
  }

  /**
   * One compare-and-set for `n` waiting requests, and for a lease of up to `wanted` more tokens
   * when the bucket can spare them.
   */
  private async takeBatch(key: string, limit: number, n: number, wanted: number): Promise<TakeResult[]> {
    try {
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const { entry, known } = await this.read(key, round);
        const now = this.clock();
        const batch = takeTokens(entry ? (JSON.parse(entry.value) as BucketState) : null, limit, now, n);
        // A refusal is decided on the store's entry only: what this replica wrote may be stale (another
        // replica gave tokens back since, or the entry expired, which makes the bucket full).
        if (known && batch.granted < n) continue;
        // A batch that takes nothing changes nothing worth writing: the bucket only refills with time.
        if (batch.granted === 0) return batch.results;
        const spare = spareTokens(batch.state.tokens, limit, wanted);
        const shared = { tokens: batch.state.tokens - spare, atMs: now };
        try {
          await this.write(key, JSON.stringify(shared), entry);
          if (spare > 0) this.addLease(key, { tokens: spare, shared, limit, expiresAt: now + LEASE_MS });
          return batch.results;
        } catch (err) {
          if (!(err instanceof KvConflictError)) throw err;
        }
        // What this replica wrote last was stale: read the bucket now, at once.
        if (known) continue;
        // Another replica won this round: read its write and go again, after a short jitter.
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(8, round + 1)));
      }
    } catch {
      throw unavailable();
    }
    // Sixty-four rounds lost to other replicas: the store is not keeping up, which is an outage.
    throw unavailable();
  }

  /**
   * The bucket as the first round of a compare-and-set starts from: what this replica last wrote,
   * when it remembers it (the write then proves it current or fails), else the store's entry.
   */
  private async read(key: string, round: number): Promise<{ entry: KvEntry | null; known: boolean }> {
    const written = round === 0 ? this.written.get(key) : undefined;
    return written ? { entry: written, known: true } : { entry: await this.kv.get(key), known: false };
  }

  /** Compare-and-set of the bucket on `entry` (create when there is none), remembered when it succeeds. */
  private async write(key: string, value: string, entry: KvEntry | null): Promise<void> {
    try {
      const revision = entry ? await this.kv.update(key, value, entry.revision) : await this.kv.create(key, value);
      this.written.set(key, { value, revision });
    } catch (err) {
      this.written.delete(key);
      throw err;
    }
  }

  /** One token from this replica's lease of the bucket, when it holds one; an ended lease goes back. */
  private fromLease(key: string): LimitDecision | undefined {
    const lease = this.leases.get(key);
    if (!lease) return undefined;
    const now = this.clock();
    if (lease.expiresAt > now && lease.tokens >= 1) {
      lease.tokens--;
      // What the store holds now (refilled since) and what this replica still holds count as remaining.
      const tokens = Math.min(lease.limit, tokensAt(lease.shared, lease.limit, now) + lease.tokens);
      return withHeaders(takeResult(true, tokens, lease.shared, lease.limit));
    }
    this.endLease(key, lease);
    return undefined;
  }

  private addLease(key: string, lease: Lease): void {
    const old = this.leases.get(key);
    if (old) this.endLease(key, old);
    this.leases.set(key, lease);
  }

  private endLease(key: string, lease: Lease): void {
    if (this.leases.get(key) === lease) this.leases.delete(key);
    const unspent = Math.floor(lease.tokens);
    lease.tokens = 0;
    void this.giveBack(key, lease.limit, unspent);
  }

  private count(key: string, now: number): void {
    const d = this.demand.get(key);
    if (!d) {
      this.demand.set(key, { since: now, count: 1, previous: 0 });
      return;
    }
    if (now - d.since >= LEASE_MS) {
      // A period with no take in between counts as nothing taken.
      d.previous = now - d.since < 2 * LEASE_MS ? d.count : 0;
      d.since = now;
      d.count = 0;
    }
    d.count++;
  }

  /** Ends leases past their time (their tokens go back) and forgets buckets nobody takes from. */
  private sweep(): void {
    const now = this.clock();
    for (const [key, lease] of this.leases) if (lease.expiresAt <= now) this.endLease(key, lease);
    for (const [key, d] of this.demand) if (now - d.since >= 2 * LEASE_MS) this.demand.delete(key);
  }
}

/** 429 RATE_LIMITED carrying the D4.3 headers of the bucket that refused. */
export class RateLimitedError extends AppError {
  constructor(message: string, readonly decision: LimitDecision) {
    super('RATE_LIMITED', message, { details: { retryAfterSeconds: decision.retryAfterSeconds } });
  }
}

/**
 * A page the gateway answers itself (docs, agent cards), limited per client IP like every public
 * route (D4.2): its headers, or the 429 to throw.
 */
export async function takePublic(limiter: RateLimiter, ip: string): Promise<Record<string, string>> {
  const limited = await limiter.take('public_ip', ip);
  if (!limited.allowed) throw new RateLimitedError('Too many requests; retry later.', limited);
  return limited.headers;
}

/** The KV key of a bucket: its group and subject (agent id or client IP), in KV-safe characters. */
const bucketKey = (group: RateGroup, subject: string) => `${group}.${subject.replace(/[^A-Za-z0-9_-]/g, '_')}`;

const unavailable = () => new AppError('RATE_LIMITER_UNAVAILABLE', 'The rate limiter is unavailable; the request was refused.');

function withHeaders(r: TakeResult): LimitDecision {
  return { ...r, headers: { 'ratelimit-limit': String(r.limit), 'ratelimit-remaining': String(r.remaining), 'ratelimit-reset': String(r.resetSeconds) } };
}
