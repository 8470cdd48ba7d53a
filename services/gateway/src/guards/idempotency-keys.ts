import { createHash } from 'node:crypto';
import { AppError, IDEMPOTENCY_KEYS, type IdempotencyContext } from '@aex/contracts';
import { KvConflictError, StoreUnreachableError, within, type Bus, type KvStore } from '@aex/platform';

/** One attempt at the bucket; a stream whose leader just died would otherwise hold it for nats.js's 5 s. */
const ATTEMPT_MS = 750;
/** Attempts go on this long: a JetStream leader election takes NATS 2.9 4–9 s under load. */
const BIND_BUDGET_MS = 12_000;
const RETRY_PAUSE_MS = 100;

/**
 * D5.6: an Idempotency-Key is bound to one request across the whole exchange. Each owning service
 * records its keys with their effects (D5.5), but only for its own routes; so the gateway also
 * records, in a JetStream KV bucket every replica shares, which request fingerprint first used each
 * (scope, key). A key used again with another method, path or body — whichever service owns the
 * routes — is refused with 422 before anything runs. A repeat of the same request goes on to its
 * service, which answers it from its own record.
 *
 * Entries live as long as the services keep their answers (IDEMPOTENCY_TTL_HOURS). When the bucket
 * cannot be reached the request is refused with 503 before it is forwarded, and nothing is stored
 * under the key (D5.4): binding a key must not be skipped, or a reuse could run.
 */
export class IdempotencyKeyBinding {
  private constructor(private readonly kv: KvStore, private readonly budgetMs: number) {}

  /** `budgetMs`: how long attempts go on before the store counts as unreachable (503). */
  static async create(bus: Bus, ttlHours: number, budgetMs = BIND_BUDGET_MS): Promise<IdempotencyKeyBinding> {
    return new IdempotencyKeyBinding(await bus.kv(IDEMPOTENCY_KEYS.bucket(bus.namespace), { ttlMs: ttlHours * 3_600_000 }), budgetMs);
  }

  /**
   * Resolves when `ctx`'s key is free or bound to this same request; throws 422 or 503 otherwise. The
   * bucket's leader may be changing (a NATS node lost): each attempt waits `ATTEMPT_MS`, and attempts
   * go on for `BIND_BUDGET_MS`, so a failover of a few seconds costs a delay, not a 503. An attempt
   * that timed out may still have bound the key: the next finds it bound to this same fingerprint.
   */
  async bind(ctx: IdempotencyContext): Promise<void> {
    const deadline = Date.now() + this.budgetMs;
    for (;;) {
      try {
        return await this.bindOnce(ctx);
      } catch (err) {
        if (!(err instanceof StoreUnreachableError) || Date.now() + ATTEMPT_MS > deadline) {
          if (err instanceof StoreUnreachableError) throw unavailable();
          throw err;
        }
        await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
      }
    }
  }

  private async bindOnce(ctx: IdempotencyContext): Promise<void> {
    // KV keys allow a narrow alphabet: the scope and the key, hashed together, name the entry.
    const entry = createHash('sha256').update(`${ctx.scope}\n${ctx.key}`).digest('hex');
    try {
      await within(this.kv.create(entry, ctx.fingerprint), ATTEMPT_MS, 'the Idempotency-Key store');
      return;
    } catch (err) {
      if (!(err instanceof KvConflictError)) throw new StoreUnreachableError(String(err));
    }
    const bound = await within(this.kv.get(entry), ATTEMPT_MS, 'the Idempotency-Key store').catch((err: unknown) => {
      throw new StoreUnreachableError(String(err));
    });
    // Gone between the two calls (expired): the next attempt binds it; the caller retries.
    if (!bound) throw unavailable();
    if (bound.value !== ctx.fingerprint) {
      throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used for another request (another method, path or body); use a new key for a new request.', { field: '/headers/idempotency-key' });
    }
  }
}

const unavailable = () => new AppError('SERVICE_UNAVAILABLE', 'The exchange could not check the Idempotency-Key; retry with the same key.', { details: { retryAfterSeconds: 1 } });
