import { AppError, names } from '@aex/contracts';
import { KvConflictError, type Bus, type KvStore } from '@aex/platform';
import { takeTokens, type TakeResult } from '../domain/token-bucket.js';

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

/**
 * D4: token buckets shared by every gateway replica in a KV bucket, updated with compare-and-set.
 * Within one replica, concurrent takes of one bucket are coalesced: at most one compare-and-set per
 * bucket is in flight, and the requests that arrive meanwhile are served together by the next one.
 * A lost compare-and-set therefore means another replica changed the bucket, and with R replicas a
 * round is lost at most R−1 times in a row — so contention never turns into a refusal: a request is
 * refused (429) only when the bucket truly holds no token. Fails closed: when the KV cannot be read
 * or written, 503 RATE_LIMITER_UNAVAILABLE.
 */
export class RateLimiter {
  private readonly queues = new Map<string, Waiter[]>();

  private constructor(private readonly kv: KvStore, private readonly limits: Record<RateGroup, number>, private readonly clock: () => number) {}

  static async create(bus: Bus, limits: Record<RateGroup, number>, clock: () => number = Date.now): Promise<RateLimiter> {
    // An entry untouched for 2 minutes is a full bucket again, so the TTL loses nothing.
    return new RateLimiter(await bus.kv(names.bucket(bus.namespace, 'rate_limits'), { ttlMs: 120_000 }), limits, clock);
  }

  take(group: RateGroup, subject: string): Promise<LimitDecision> {
    const key = bucketKey(group, subject);
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
      const batch = queue.splice(0);
      try {
        const results = await this.takeBatch(key, limit, batch.length);
        batch.forEach((w, i) => w.resolve(withHeaders(results[i]!)));
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
    this.queues.delete(key);
  }

  /** Gives one token back (a take that turned out not to count); best effort, never above capacity. */
  async refund(group: RateGroup, subject: string): Promise<void> {
    const key = bucketKey(group, subject);
    const limit = this.limits[group];
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const entry = await this.kv.get(key).catch(() => null);
      if (!entry) return; // expired: the bucket is full anyway
      const now = takeTokens(JSON.parse(entry.value) as TakeResult['state'], limit, this.clock(), 0).state;
      try {
        await this.kv.update(key, JSON.stringify({ tokens: Math.min(limit, now.tokens + 1), atMs: now.atMs }), entry.revision);
        return;
      } catch (err) {
        if (!(err instanceof KvConflictError)) return;
      }
    }
  }

  private async takeBatch(key: string, limit: number, n: number): Promise<TakeResult[]> {
    try {
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const entry = await this.kv.get(key);
        const batch = takeTokens(entry ? (JSON.parse(entry.value) as TakeResult['state']) : null, limit, this.clock(), n);
        // A batch that takes nothing changes nothing worth writing: the bucket only refills with time.
        if (batch.granted === 0) return batch.results;
        try {
          const value = JSON.stringify(batch.state);
          if (entry) await this.kv.update(key, value, entry.revision);
          else await this.kv.create(key, value);
          return batch.results;
        } catch (err) {
          if (!(err instanceof KvConflictError)) throw err;
        }
        // Another replica won this round: read its write and go again, after a short jitter.
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(8, round + 1)));
      }
    } catch {
      throw unavailable();
    }
    // Sixty-four rounds lost to other replicas: the store is not keeping up, which is an outage.
    throw unavailable();
  }
}

/** 429 RATE_LIMITED carrying the D4.3 headers of the bucket that refused. */
export class RateLimitedError extends AppError {
  constructor(message: string, readonly decision: LimitDecision) {
    super('RATE_LIMITED', message, { details: { retryAfterSeconds: decision.retryAfterSeconds } });
  }
}

/** The KV key of a bucket: its group and subject (agent id or client IP), in KV-safe characters. */
const bucketKey = (group: RateGroup, subject: string) => `${group}.${subject.replace(/[^A-Za-z0-9_-]/g, '_')}`;

const unavailable = () => new AppError('RATE_LIMITER_UNAVAILABLE', 'The rate limiter is unavailable; the request was refused.');

function withHeaders(r: TakeResult): LimitDecision {
  return { ...r, headers: { 'ratelimit-limit': String(r.limit), 'ratelimit-remaining': String(r.remaining), 'ratelimit-reset': String(r.resetSeconds) } };
}
