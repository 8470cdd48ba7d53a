import { AppError, names } from '@aex/contracts';
import { KvConflictError, RecentMap, StoreUnreachableError, type Bus, type KvEntry, type KvStore, type Logger } from '@aex/platform';
import { spareTokens, takeResult, takeTokens, tokensAt, type BucketState, type TakeResult } from '../domain/token-bucket.js';
import { StandInBuckets, withinTimeout } from './rate-limit-store.js';

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
/** How long a batch keeps asking a store that does not answer before a stand-in serves it (rate-limit-store.ts). */
const STORE_PATIENCE_MS = 1_500;
/** The pause between two tries of a store that did not answer. */
const RETRY_MS = 100;
/** Longest an empty bucket's refusal is repeated without asking the store. */
const REFUSAL_MS = 250;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
 * refused (429) only when the bucket holds no token.
 *
 * A bucket taken often is not asked on every request: with each batch, the replica also takes as
 * many tokens as the bucket had requests in the last quarter second — never more than half of what
 * it holds (`spareTokens`) — and spends them locally for up to `LEASE_MS`; what it has not spent then
 * goes back. An empty bucket's refusal is repeated locally until its next token, for at most
 * `REFUSAL_MS`. So a busy bucket costs a replica a few compare-and-sets a second whatever the request
 * rate, and a replicated (R3) store costs no write per request; docs/gateway-caches.md has the bounds.
 *
 * Through a failover: every KV operation waits at most `KV_TIMEOUT_MS` and is tried again for
 * `STORE_PATIENCE_MS`; a store that still takes no writes but answers reads (a stream electing its
 * next leader) has the bucket served by a stand-in, charged to the store once it takes writes again
 * (rate-limit-store.ts). Fails closed: when the KV cannot be read either, 503 RATE_LIMITER_UNAVAILABLE.
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
  /** Refusals decided by the store, repeated locally until the bucket's next token (`refuseFor`). */
  private readonly refused = new Map<string, { state: BucketState; limit: number; until: number }>();
  /** Buckets served here while the store takes no writes (rate-limit-store.ts). */
  private readonly standIns: StandInBuckets;
  private readonly sweeper: NodeJS.Timeout;

  private constructor(private readonly kv: KvStore, private readonly limits: Record<RateGroup, number>, private readonly clock: () => number, logger?: Logger) {
    this.standIns = new StandInBuckets(kv, clock, logger);
    this.sweeper = setInterval(() => this.sweep(), LEASE_MS);
    this.sweeper.unref();
  }

  static async create(bus: Bus, limits: Record<RateGroup, number>, clock: () => number = Date.now, logger?: Logger): Promise<RateLimiter> {
    // An entry untouched for 2 minutes is a full bucket again, so the TTL loses nothing. Any copy
    // answers a read: reads go on through a leader election (what keeps a stand-in serving instead of
    // failing closed), and a copy a few writes behind only makes the next compare-and-set fail.
    return new RateLimiter(await bus.kv(names.bucket(bus.namespace, 'rate_limits'), { ttlMs: 120_000, reads: 'any' }), limits, clock, logger);
  }

  /** Gives every unspent leased token back to the store. */
  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    const held = [...this.leases.entries()];
    this.leases.clear();
    await Promise.all(held.map(([key, lease]) => this.giveBack(key, lease.limit, lease.tokens)));
    // A round under way may have begun before the last takes: one more charges those.
    await this.standIns.settle();
    await this.standIns.settle();
  }

  async take(group: RateGroup, subject: string): Promise<LimitDecision> {
    return this.decide(group, subject);
  }

  /**
   * One request's take: the decision itself when this replica makes it alone (from a lease, or an
   * empty bucket's repeated refusal) — no promise on the hot path — else the promise of the store's.
   */
  decide(group: RateGroup, subject: string): LimitDecision | Promise<LimitDecision> {
    const key = bucketKey(group, subject);
    this.count(key, this.clock());
    return this.fromLease(key) ?? this.fromRefusal(key) ?? this.ask(key, this.limits[group]);
  }

  private ask(key: string, limit: number): Promise<LimitDecision> {
    return new Promise((resolve, reject) => {
      const queue = this.queues.get(key);
      if (queue) {
        queue.push({ resolve, reject });
        return;
      }
      this.queues.set(key, [{ resolve, reject }]);
      void this.drain(key, limit);
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
    this.refused.delete(key);
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
   * when the bucket can spare them. A store that does not answer is asked again until
   * `STORE_PATIENCE_MS` have passed (a stream electing a new leader); the bucket is then served by a
   * stand-in while the store can still be read, and refused with 503 when it cannot.
   */
  private async takeBatch(key: string, limit: number, n: number, wanted: number): Promise<TakeResult[]> {
    if (!this.standIns.has(key)) {
      try {
        return await this.takeFromStore(key, limit, n, wanted);
      } catch (err) {
        if (!(err instanceof StoreUnreachableError)) throw unavailable();
      }
    }
    return this.standIns.take(key, limit, n).catch(() => {
      throw unavailable();
    });
  }

  private async takeFromStore(key: string, limit: number, n: number, wanted: number): Promise<TakeResult[]> {
    const giveUpAt = performance.now() + STORE_PATIENCE_MS;
    for (let round = 0, lost = 0; lost < MAX_ROUNDS; round++) {
      let outcome: TakeResult[] | 'lost' | 'stale';
      try {
        outcome = await this.takeRound(key, limit, n, wanted, round);
      } catch (err) {
        if (performance.now() >= giveUpAt) throw err instanceof StoreUnreachableError ? err : new StoreUnreachableError(String(err));
        // No answer, or no leader yet: the next try goes to the store again, not to what this replica wrote.
        this.written.delete(key);
        await sleep(RETRY_MS);
        continue;
      }
      if (outcome === 'lost') {
        // Another replica won this round: read its write and go again, after a short jitter.
        lost++;
        await sleep(Math.random() * Math.min(8, lost));
      } else if (outcome !== 'stale') {
        return outcome;
      }
    }
    // Sixty-four rounds lost to other replicas (or to a copy of the store that lags behind its
    // leader, whose reads keep giving an old revision): the bucket is served by a stand-in, charged
    // to the store once a write gets through, rather than refused while the store still answers.
    throw new StoreUnreachableError('the rate-limit store lost every compare-and-set');
  }

  /**
   * One compare-and-set: the results, or 'stale' when what this replica wrote last was not current
   * (read the store now), or 'lost' when another replica changed the bucket in between.
   */
  private async takeRound(key: string, limit: number, n: number, wanted: number, round: number): Promise<TakeResult[] | 'lost' | 'stale'> {
    const { entry, known } = await this.read(key, round);
    const now = this.clock();
    const batch = takeTokens(entry ? (JSON.parse(entry.value) as BucketState) : null, limit, now, n);
    // A refusal is decided on the store's entry only: what this replica wrote may be stale (another
    // replica gave tokens back since, or the entry expired, which makes the bucket full).
    if (known && batch.granted < n) return 'stale';
    if (batch.granted < n) this.refuseFor(key, batch.state, limit, now);
    // A batch that takes nothing changes nothing worth writing: the bucket only refills with time.
    if (batch.granted === 0) return batch.results;
    const spare = spareTokens(batch.state.tokens, wanted);
    const shared = { tokens: batch.state.tokens - spare, atMs: now };
    try {
      await this.write(key, JSON.stringify(shared), entry);
    } catch (err) {
      if (!(err instanceof KvConflictError)) throw err;
      return known ? 'stale' : 'lost';
    }
    if (spare > 0) this.addLease(key, { tokens: spare, shared, limit, expiresAt: now + LEASE_MS });
    return batch.results;
  }

  /**
   * An empty bucket is not asked again for each request: its refusal is repeated here until the
   * next token is due, for at most `REFUSAL_MS` (a 429 at most that much refill early; the tokens
   * refilled meanwhile stay in the store for the next take).
   */
  private refuseFor(key: string, state: BucketState, limit: number, now: number): void {
    const nextTokenMs = ((1 - state.tokens) * 60_000) / limit;
    this.refused.set(key, { state, limit, until: now + Math.min(REFUSAL_MS, Math.max(0, nextTokenMs)) });
  }

  /** The refusal this replica repeats for the bucket, when one holds now. */
  private fromRefusal(key: string): LimitDecision | undefined {
    const refusal = this.refused.get(key);
    if (!refusal) return undefined;
    const now = this.clock();
    if (now >= refusal.until) {
      this.refused.delete(key);
      return undefined;
    }
    return withHeaders(takeResult(false, tokensAt(refusal.state, refusal.limit, now), refusal.state, refusal.limit));
  }

  /**
   * The bucket as a round of a compare-and-set starts from: what this replica last wrote, when it
   * remembers it (the write then proves it current or fails), else the store's entry — from any copy
   * at first, and from the leader once a round was lost on it (a copy lagging behind gives an old
   * revision every time), any copy again while the leader does not answer (an election).
   */
  private async read(key: string, round: number): Promise<{ entry: KvEntry | null; known: boolean }> {
    const written = round === 0 ? this.written.get(key) : undefined;
    if (written) return { entry: written, known: true };
    if (round < 2) return { entry: await withinTimeout(this.kv.get(key)), known: false };
    return { entry: await withinTimeout(this.kv.getLatest(key)).catch(() => withinTimeout(this.kv.get(key))), known: false };
  }

  /** Compare-and-set of the bucket on `entry` (create when there is none), remembered when it succeeds. */
  private async write(key: string, value: string, entry: KvEntry | null): Promise<void> {
    try {
      const revision = await withinTimeout(entry ? this.kv.update(key, value, entry.revision) : this.kv.create(key, value));
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
    for (const [key, refusal] of this.refused) if (refusal.until <= now) this.refused.delete(key);
    if (this.standIns.size > 0) void this.standIns.settle();
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

/** `r` (a result made for this answer alone) with its D4.3 headers. */
export function withHeaders(r: TakeResult): LimitDecision {
  return Object.assign(r, { headers: { 'ratelimit-limit': String(r.limit), 'ratelimit-remaining': String(r.remaining), 'ratelimit-reset': String(r.resetSeconds) } });
}
