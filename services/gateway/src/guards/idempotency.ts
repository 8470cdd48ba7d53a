import { createHash } from 'node:crypto';
import { AppError, names } from '@aex/contracts';
import { KvConflictError, type Bus, type KvStore } from '@aex/platform';

interface Record_ {
  state: 'in_flight' | 'done';
  fingerprint: string;
  startedAt: number;
  status?: number;
  body?: string;
}

export type IdempotencyOutcome =
  | { kind: 'proceed'; finish: (status: number, body: string) => Promise<void> }
  | { kind: 'replay'; status: number; body: string };

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * D5: `Idempotency-Key` records in a KV bucket living 48 h. The first request claims the key with a
 * KV create (atomic across replicas); a repeat with the same fingerprint replays the stored answer,
 * with another fingerprint is 422, while the first still runs is 409. An in-flight claim older than
 * `abandonAfterMs` (its gateway died) may be taken over.
 */
export class IdempotencyStore {
  private constructor(private readonly kv: KvStore, private readonly abandonAfterMs: number) {}

  static async create(bus: Bus, ttlHours: number, abandonAfterMs: number): Promise<IdempotencyStore> {
    return new IdempotencyStore(await bus.kv(names.bucket(bus.namespace, 'idempotency'), { ttlMs: ttlHours * 3_600_000 }), abandonAfterMs);
  }

  static fingerprint(method: string, path: string, rawBody: Uint8Array | undefined): string {
    const bodyHash = createHash('sha256').update(rawBody ?? '').digest('hex');
    return createHash('sha256').update(`${method}\n${path}\n${bodyHash}`).digest('hex');
  }

  async begin(scope: string, key: string, fingerprint: string): Promise<IdempotencyOutcome> {
    if (!KEY_PATTERN.test(key)) {
      throw new AppError('VALIDATION_ERROR', 'Idempotency-Key must be 1–255 printable ASCII characters.', { field: '/headers/idempotency-key' });
    }
    const kvKey = `${scope}.${createHash('sha256').update(key).digest('hex')}`;
    const claim = (): string => JSON.stringify({ state: 'in_flight', fingerprint, startedAt: Date.now() } satisfies Record_);
    try {
      for (let attempt = 0; attempt < 4; attempt++) {
        try {
          const revision = await this.kv.create(kvKey, claim());
          return { kind: 'proceed', finish: this.finisher(kvKey, fingerprint, revision) };
        } catch (err) {
          if (!(err instanceof KvConflictError)) throw err;
        }
        const entry = await this.kv.get(kvKey);
        if (!entry) continue;
        const rec = JSON.parse(entry.value) as Record_;
        if (rec.fingerprint !== fingerprint) {
          throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for a different request.');
        }
        if (rec.state === 'done') return { kind: 'replay', status: rec.status!, body: rec.body! };
        if (Date.now() - rec.startedAt < this.abandonAfterMs) {
          throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still being processed.', { details: { retryAfterSeconds: 1 } });
        }
        try {
          const revision = await this.kv.update(kvKey, claim(), entry.revision);
          return { kind: 'proceed', finish: this.finisher(kvKey, fingerprint, revision) };
        } catch (err) {
          if (!(err instanceof KvConflictError)) throw err;
        }
      }
      throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still being processed.', { details: { retryAfterSeconds: 1 } });
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw new AppError('SERVICE_UNAVAILABLE', 'The idempotency store is unavailable; the request was not run.');
    }
  }

  /** D5.4: 2xx and 4xx answers are stored, except 401 and 429; anything else releases the key. */
  private finisher(kvKey: string, fingerprint: string, revision: number) {
    return async (status: number, body: string) => {
      const storable = (status >= 200 && status < 300) || (status >= 400 && status < 500 && status !== 401 && status !== 429);
      if (storable) {
        await this.kv.update(kvKey, JSON.stringify({ state: 'done', fingerprint, startedAt: Date.now(), status, body } satisfies Record_), revision).catch(() => undefined);
      } else {
        await this.kv.delete(kvKey).catch(() => undefined);
      }
    };
  }
}
