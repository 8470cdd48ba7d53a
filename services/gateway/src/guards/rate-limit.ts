import { AppError, names } from '@aex/contracts';
import { KvConflictError, type Bus, type KvStore } from '@aex/platform';
import { takeToken, type BucketState, type TakeResult } from '../domain/token-bucket.js';

export type RateGroup = 'read' | 'write' | 'discovery' | 'key_rotation' | 'accounts_ip' | 'public_ip';

/**
 * D4: token buckets shared by every gateway replica in a KV bucket, updated with compare-and-set.
 * Fails closed: when the KV cannot be read or written the request is refused with 503.
 */
export class RateLimiter {
  private constructor(private readonly kv: KvStore, private readonly limits: Record<RateGroup, number>, private readonly clock: () => number) {}

  static async create(bus: Bus, limits: Record<RateGroup, number>, clock: () => number = Date.now): Promise<RateLimiter> {
    // An entry untouched for 2 minutes is a full bucket again, so the TTL loses nothing.
    return new RateLimiter(await bus.kv(names.bucket(bus.namespace, 'rate_limits'), { ttlMs: 120_000 }), limits, clock);
  }

  async take(group: RateGroup, subject: string): Promise<TakeResult> {
    const key = `${group}.${subject.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    const limit = this.limits[group];
    try {
      for (let attempt = 0; attempt < 12; attempt++) {
        const entry = await this.kv.get(key);
        const previous = entry ? (JSON.parse(entry.value) as BucketState) : null;
        const result = takeToken(previous, limit, this.clock());
        // A refusal changes nothing worth writing: the bucket only refills with time.
        if (!result.allowed) return result;
        try {
          const value = JSON.stringify(result.state);
          if (entry) await this.kv.update(key, value, entry.revision);
          else await this.kv.create(key, value);
          return result;
        } catch (err) {
          if (!(err instanceof KvConflictError)) throw err;
        }
        // Another request of the same bucket won the compare-and-set: retry after a short jitter.
        await new Promise((r) => setTimeout(r, Math.random() * 2 * (attempt + 1)));
      }
    } catch {
      throw new AppError('RATE_LIMITER_UNAVAILABLE', 'The rate limiter is unavailable; the request was refused.');
    }
    // The backend works but this one bucket is hammered from many requests at once: that is a
    // client going too fast, so it is refused as rate limited, not as an outage.
    return { ...takeToken({ tokens: 0, atMs: this.clock() }, limit, this.clock()), allowed: false };
  }
}
