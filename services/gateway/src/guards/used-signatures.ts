import { createHash } from 'node:crypto';
import { AppError, names } from '@aex/contracts';
import { KvConflictError, StoreUnreachableError, within, type Bus, type KvStore } from '@aex/platform';
import { MAX_SKEW_MS } from '../domain/signature.js';

/**
 * How long a used signature is remembered: as long as it could still be accepted. A timestamp (RFC
 * 9421: `created`) is accepted from `MAX_SKEW_MS` before the clock to `MAX_SKEW_MS` after it, so a
 * signature first seen at the earliest is valid for two windows; a margin covers the replicas' clocks.
 * NATS 2.9 keeps entries by the bucket's age limit only (no per-key TTL), which is all this needs.
 */
export const USED_SIGNATURE_TTL_MS = 2 * MAX_SKEW_MS + 10_000;
/** One attempt at the bucket; a stream whose leader just died would otherwise hold it for nats.js's 5 s. */
const ATTEMPT_MS = 750;
/** Attempts go on this long (a JetStream leader election), then the request is refused with 503. */
const USE_BUDGET_MS = 10_000;
const RETRY_PAUSE_MS = 100;

/** What makes a verified signature the one it is: its entry in the bucket (see `signatureEntry`). */
export interface SignatureUse {
  /** The SHA-256 (hex) naming the signature's entry: of its bytes, or of its key id and nonce. */
  entry: string;
  /** The SHA-256 (hex) of the signature's bytes: a new signature under a used nonce is not its first use. */
  signature: string;
}

/** The entry of an RFC 9421 signature with a `nonce` (used once per key), or of any other signature's bytes. */
export function signatureUse(signatureBytes: Uint8Array, nonce?: { keyid: string; nonce: string }): SignatureUse {
  const signature = createHash('sha256').update(signatureBytes).digest('hex');
  const entry = nonce ? createHash('sha256').update(`nonce\n${nonce.keyid}\n${nonce.nonce}`).digest('hex') : signature;
  return { entry, signature };
}

interface Recorded {
  /** The signature's hash (differs from the entry's name for a nonce). */
  s: string;
  /** The SHA-256 of the Idempotency-Key's scope and key the first request carried; null without one. */
  k: string | null;
  /** The request that recorded it: an attempt that timed out and wrote anyway finds its own entry. */
  r: string;
}

/**
 * D24.2: a signature is used once. Every verified signature is recorded in a JetStream KV bucket all
 * gateway replicas share, by an atomic create — of two replicas racing with the same signature one
 * creates the entry, the other finds it — and a signature already recorded is refused with 401
 * `SIGNATURE_INVALID`, `details.reason: "replayed"`. Unless the request is the same request again
 * under the same Idempotency-Key: it goes on, and the key's owner replays its stored answer (D5).
 *
 * One create per signed request, whatever the traffic. Fails closed: a bucket that cannot be reached
 * within `USE_BUDGET_MS` refuses the signed request with 503 and `Retry-After: 1` (a signature that
 * cannot be recorded as used could be used again).
 */
export class UsedSignatures {
  private constructor(private readonly kv: KvStore, private readonly docs: string, private readonly budgetMs: number) {}

  /** `docs`: the page a refusal points to; `budgetMs`: how long attempts go on before the store counts as unreachable (503). */
  static async create(bus: Bus, docs: string, budgetMs = USE_BUDGET_MS): Promise<UsedSignatures> {
    return new UsedSignatures(await bus.kv(names.bucket(bus.namespace, 'used_signatures'), { ttlMs: USED_SIGNATURE_TTL_MS }), docs, budgetMs);
  }

  /**
   * Resolves when this is the signature's first use, or a repeat of its first request under the same
   * Idempotency-Key (`idempotency`: the key's scope and key, as the gateway binds them); throws 401
   * (replayed) or 503 otherwise.
   */
  async use(use: SignatureUse, requestId: string, idempotency: { scope: string; key: string } | undefined): Promise<void> {
    const mine: Recorded = { s: use.signature, k: idempotency ? createHash('sha256').update(`${idempotency.scope}\n${idempotency.key}`).digest('hex') : null, r: requestId };
    const deadline = Date.now() + this.budgetMs;
    for (;;) {
      try {
        return await this.useOnce(use.entry, mine);
      } catch (err) {
        if (!(err instanceof StoreUnreachableError)) throw err;
        if (Date.now() + ATTEMPT_MS > deadline) throw unavailable();
        await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
      }
    }
  }

  private async useOnce(entry: string, mine: Recorded): Promise<void> {
    try {
      await within(this.kv.create(entry, JSON.stringify(mine)), ATTEMPT_MS, 'the used-signature store');
      return;
    } catch (err) {
      if (!(err instanceof KvConflictError)) throw new StoreUnreachableError(String(err));
    }
    const found = await within(this.kv.get(entry), ATTEMPT_MS, 'the used-signature store').catch((err: unknown) => {
      throw new StoreUnreachableError(String(err));
    });
    // Gone between the two calls (expired): the next attempt records it.
    if (!found) throw new StoreUnreachableError('the entry expired between its create and its read');
    const first = JSON.parse(found.value) as Recorded;
    if (first.r === mine.r) return; // this request's own attempt, written after it was given up on
    if (first.s === mine.s && first.k !== null && first.k === mine.k) return;
    throw new AppError('SIGNATURE_INVALID', 'This signature was already used: sign every request, and every retry of one, anew (or repeat it with the first request\'s Idempotency-Key to be given its answer again).', { details: { reason: 'replayed', docs: this.docs } });
  }
}

const unavailable = () => new AppError('SERVICE_UNAVAILABLE', 'The exchange could not record the request\'s signature as used; sign the request anew and retry.', { details: { retryAfterSeconds: 1 } });
