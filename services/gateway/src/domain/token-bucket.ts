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
  const available = previous ? tokensAt(previous, perMinute, nowMs) : perMinute;
  const granted = Math.max(0, Math.min(n, Math.floor(available)));
  const state = { tokens: available - granted, atMs: nowMs };
  const results: TakeResult[] = [];
  for (let i = 0; i < n; i++) {
    const allowed = i < granted;
    // What the bucket held right after this request: honest RateLimit-Remaining for each.
    results.push(takeResult(allowed, allowed ? available - (i + 1) : state.tokens, state, perMinute));
  }
  return { state, granted, results };
}

/** The answer to one take, given the tokens the bucket holds right after it. */
export function takeResult(allowed: boolean, tokens: number, state: BucketState, perMinute: number): TakeResult {
  const refillPerMs = perMinute / 60_000;
  return {
    allowed,
    state,
    limit: perMinute,
    remaining: Math.max(0, Math.floor(tokens)),
    resetSeconds: Math.ceil((perMinute - tokens) / refillPerMs / 1000),
    retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / refillPerMs / 1000)),
  };
}

/** The bucket's tokens at `nowMs`, refilled since `state` was counted. */
export function tokensAt(state: BucketState, perMinute: number, nowMs: number): number {
  return Math.min(perMinute, state.tokens + Math.max(0, nowMs - state.atMs) * (perMinute / 60_000));
}

/** One request's take (a batch of one). */
export function takeToken(previous: BucketState | null, perMinute: number, nowMs: number): TakeResult {
  return takeTokens(previous, perMinute, nowMs, 1).results[0]!;
}

/**
 * How many tokens a replica may hold back for its coming requests (a lease, docs/gateway-caches.md):
 * what it expects to need, but never more than half of what the bucket holds after its own take —
 * another replica asking at the same moment still finds the other half, and a bucket with less than
 * two tokens is taken one batch at a time.
 */
export function spareTokens(tokens: number, wanted: number): number {
  return Math.max(0, Math.min(Math.floor(wanted), Math.floor(tokens / 2)));
}
