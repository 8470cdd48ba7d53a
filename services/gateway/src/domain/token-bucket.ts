/** State of one token bucket (D4.1): tokens left and when they were counted. */
export interface BucketState {
  tokens: number;
  atMs: number;
}

export interface TakeResult {
  allowed: boolean;
  state: BucketState;
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again (RateLimit-Reset). */
  resetSeconds: number;
  /** Seconds until one token is available (Retry-After, at least 1) when refused. */
  retryAfterSeconds: number;
}

/**
 * D4.1 token bucket: capacity = the per-minute limit, refilled continuously at limit/60 tokens per
 * second; a request takes one token. Pure: the caller stores the state and passes the clock.
 */
export function takeToken(previous: BucketState | null, perMinute: number, nowMs: number): TakeResult {
  const capacity = perMinute;
  const refillPerMs = perMinute / 60_000;
  const elapsed = previous ? Math.max(0, nowMs - previous.atMs) : 0;
  const available = previous ? Math.min(capacity, previous.tokens + elapsed * refillPerMs) : capacity;
  const allowed = available >= 1;
  const tokens = allowed ? available - 1 : available;
  const state = { tokens, atMs: nowMs };
  return {
    allowed,
    state,
    limit: capacity,
    remaining: Math.floor(tokens),
    resetSeconds: Math.ceil((capacity - tokens) / refillPerMs / 1000),
    retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / refillPerMs / 1000)),
  };
}
