import { subjects, type AppError } from '@aex/contracts';
import { RecentMap, type Bus, type Stoppable } from '@aex/platform';
import { takeResult } from '../domain/token-bucket.js';
import { RateLimitedError, withHeaders, type LimitDecision, type RateLimiter } from './rate-limit.js';

/** Addresses a replica remembers as closed at once (the oldest forgotten first). */
const MAX_CLOSED = 10_000;

/**
 * D24.1: one failed-authentication limit per client address for every bearer secret the gateway
 * checks — API keys, the operator token, the metrics token, the console's sign-in — in the shared
 * token bucket `auth_failures_ip` (RATE_LIMIT_AUTH_FAILURES_PER_MIN_PER_IP, the address as
 * TRUST_PROXY makes it). Each failed check takes a token. The failure that leaves the bucket without
 * a whole token closes the address: until its next token every check from it answers 429
 * `RATE_LIMITED` with `Retry-After`, a right secret included — else a right guess would be told from
 * a wrong one by its answer. The replica that closes an address tells the others with a notice on
 * the bus, so a right secret held in any replica's memory is refused alike; a lost notice costs no
 * guess, since each wrong one still takes from the shared bucket, which refuses it.
 */
export class AuthFailures {
  /** Closed addresses, each until its bucket's next token (ms, this replica's clock). */
  private readonly closed = new RecentMap<string, number>(MAX_CLOSED);
  private listening: Stoppable | undefined;

  private constructor(
    private readonly bus: Bus,
    private readonly limiter: RateLimiter,
    private readonly limit: number,
    private readonly clock: () => number,
  ) {}

  static async create(bus: Bus, limiter: RateLimiter, limit: number, clock: () => number = Date.now): Promise<AuthFailures> {
    const failures = new AuthFailures(bus, limiter, limit, clock);
    failures.listening = await bus.listen(subjects.notices(bus.namespace, 'gateway', 'auth_closed'), (data) => {
      const notice = data as { address?: unknown; ms?: unknown };
      if (typeof notice.address === 'string' && typeof notice.ms === 'number') failures.closeFor(notice.address, notice.ms);
    });
    return failures;
  }

  async stop(): Promise<void> {
    await this.listening?.stop();
  }

  /** 429 while `address` is closed; nothing to wait for otherwise (every request's check). */
  check(address: string): void {
    if (this.closed.size === 0) return;
    const until = this.closed.get(address);
    if (until === undefined) return;
    const now = this.clock();
    if (until <= now) {
      this.closed.delete(address);
      return;
    }
    // The bucket's tokens now: a fraction of one, the rest coming by `until`.
    const tokens = 1 - ((until - now) * this.limit) / 60_000;
    throw limited(withHeaders(takeResult(false, tokens, { tokens, atMs: now }, this.limit)));
  }

  /**
   * A token taken before a check that costs a lookup (an API key not held in memory): 429 when the
   * address is closed or its bucket is empty. Give it back (`succeeded`) when the check succeeds;
   * else `failedAfter`.
   */
  async take(address: string): Promise<LimitDecision> {
    this.check(address);
    const decision = await this.limiter.take('auth_failures_ip', address);
    if (!decision.allowed) {
      this.closeAll(address, decision);
      throw limited(decision);
    }
    return decision;
  }

  /** The check that `take` was for failed: the address is closed when that take left no whole token. */
  failedAfter(address: string, decision: LimitDecision): void {
    if (decision.remaining < 1) this.closeAll(address, decision);
  }

  /** The check that `take` was for succeeded: its token goes back. */
  succeeded(address: string): void {
    void this.limiter.refund('auth_failures_ip', address);
  }

  /**
   * A failed check of a secret that costs no lookup (the operator or metrics token): takes a token,
   * and rejects with `err` — or with 429 when the bucket had none left.
   */
  async failed(address: string, err: AppError): Promise<never> {
    this.failedAfter(address, await this.take(address));
    throw err;
  }

  /** Closes the address on every replica until the bucket's next token. */
  private closeAll(address: string, decision: LimitDecision): void {
    const ms = decision.retryAfterSeconds * 1000;
    this.closeFor(address, ms);
    this.bus.notify(subjects.notice(this.bus.namespace, 'gateway', 'auth_closed', address.replace(/[^A-Za-z0-9_-]/g, '_')), { address, ms });
  }

  private closeFor(address: string, ms: number): void {
    const until = this.clock() + ms;
    if ((this.closed.get(address) ?? 0) < until) this.closed.set(address, until);
  }
}

const limited = (decision: LimitDecision) => new RateLimitedError('Too many failed authentications from this address; retry later.', decision);
