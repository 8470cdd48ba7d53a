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

export interface BatchTake {
  /** The bucket after the whole batch. */
  state: BucketState;
  /** Tokens handed out (the first `granted` requests of the batch are allowed). */
  granted: number;
  /** One result per request of the batch, in order. */
  results: TakeResult[];
}

/**
 * D4.1 token bucket: capacity = the per-minute limit, refilled continuously at limit/60 tokens per
 * second; each request takes one token. `n` requests arriving together are served in order while a
 * whole token remains — exactly what `n` takes one after the other would give, in one state change.
 * Pure: the caller stores the state and passes the clock.
 */
export function takeTokens(previous: BucketState | null, perMinute: number, nowMs: number, n: number): BatchTake {
  const capacity = perMinute;
  const refillPerMs = perMinute / 60_000;
  const elapsed = previous ? Math.max(0, nowMs - previous.atMs) : 0;
  const available = previous ? Math.min(capacity, previous.tokens + elapsed * refillPerMs) : capacity;
  const granted = Math.max(0, Math.min(n, Math.floor(available)));
  const state = { tokens: available - granted, atMs: nowMs };
  const results: TakeResult[] = [];
  for (let i = 0; i < n; i++) {
    const allowed = i < granted;
    // What the bucket held right after this request: honest RateLimit-Remaining for each.
    const tokens = allowed ? available - (i + 1) : state.tokens;
    results.push({
      allowed,
      state,
      limit: capacity,
      remaining: Math.floor(tokens),
      resetSeconds: Math.ceil((capacity - tokens) / refillPerMs / 1000),
      retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / refillPerMs / 1000)),
    });
  }
  return { state, granted, results };
}

/** One request's take (a batch of one). */
export function takeToken(previous: BucketState | null, perMinute: number, nowMs: number): TakeResult {
  return takeTokens(previous, perMinute, nowMs, 1).results[0]!;
}
