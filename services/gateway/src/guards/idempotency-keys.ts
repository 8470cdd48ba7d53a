import { createHash } from 'node:crypto';
import { AppError, IDEMPOTENCY_KEYS, type IdempotencyContext } from '@aex/contracts';
import { KvConflictError, type Bus, type KvStore } from '@aex/platform';

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
  private constructor(private readonly kv: KvStore) {}

  static async create(bus: Bus, ttlHours: number): Promise<IdempotencyKeyBinding> {
    return new IdempotencyKeyBinding(await bus.kv(IDEMPOTENCY_KEYS.bucket(bus.namespace), { ttlMs: ttlHours * 3_600_000 }));
  }

  /** Resolves when `ctx`'s key is free or bound to this same request; throws 422 or 503 otherwise. */
  async bind(ctx: IdempotencyContext): Promise<void> {
    // KV keys allow a narrow alphabet: the scope and the key, hashed together, name the entry.
    const entry = createHash('sha256').update(`${ctx.scope}\n${ctx.key}`).digest('hex');
    try {
      await this.kv.create(entry, ctx.fingerprint);
      return;
    } catch (err) {
      if (!(err instanceof KvConflictError)) throw unavailable();
    }
    const bound = await this.kv.get(entry).catch(() => {
      throw unavailable();
    });
    // Gone between the two calls (expired): the next attempt binds it; the caller retries.
    if (!bound) throw unavailable();
    if (bound.value !== ctx.fingerprint) {
      throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used for another request (another method, path or body); use a new key for a new request.', { field: '/headers/idempotency-key' });
    }
  }
}

const unavailable = () => new AppError('SERVICE_UNAVAILABLE', 'The exchange could not check the Idempotency-Key; retry with the same key.', { details: { retryAfterSeconds: 1 } });
