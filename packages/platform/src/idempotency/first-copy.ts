import type { Kysely, Transaction } from 'kysely';
import { AppError, type IdempotencyContext, type RpcReply } from '@aex/contracts';
import type { PlatformTables } from '../db/platform-tables.js';
import { isUniqueViolation } from '../db/errors.js';
import { toRpcReply, type EffectReply, type EffectRunner, type Reply } from '../replies.js';
import type { Transactor } from '../messaging/transaction-runner.js';
import type { UnitOfWork } from '../messaging/unit-of-work.js';
import { sealReply } from './reply-cipher.js';

type Tables = Kysely<PlatformTables>;

/**
 * The first copy of a write under a key the gateway made (`IdempotencyContext.firstCopy`): no claim
 * is taken — that costs a transaction of its own on every write — and the key's row is inserted,
 * with the sealed answer, by the effect's own transaction. A repeat (the gateway asking again) takes
 * the full claim of records.ts, inserting the same row: the primary key lets only one of them
 * commit, so either the first copy's effect committed and the repeat finds its answer, or the repeat
 * holds the key and the first copy's effect, should it still come, fails on the row and rolls back.
 */
export class FirstCopy {
  private written: RpcReply | undefined;

  constructor(
    private readonly keyHash: string,
    private readonly key: IdempotencyContext,
    private readonly requestId: string,
    private readonly expiresAt: Date,
    private readonly serviceDb: unknown,
  ) {}

  private stamp(reply: RpcReply): RpcReply {
    return { ...reply, meta: { requestId: this.requestId, timestamp: new Date().toISOString() } };
  }

  readonly effect: EffectRunner = async <DB, T>(tx: Transactor<DB>, fn: (trx: Transaction<DB>, work: UnitOfWork) => Promise<Reply<T>>): Promise<EffectReply<T>> => {
    if (tx.db !== this.serviceDb) throw new Error('ctx.effect must be given the service database');
    let answer: RpcReply | undefined;
    try {
      const reply = await tx.run(async (trx, work) => {
        const made = await fn(trx, work);
        answer = this.stamp(toRpcReply(made));
        const reply = sealReply(this.key.scope, this.key.key, JSON.stringify(answer));
        // A second effect of the request replaces the answer its first committed.
        if (this.written) await (trx as unknown as Tables).updateTable('idempotencyKeys').set({ reply }).where('keyHash', '=', this.keyHash).execute();
        else await (trx as unknown as Tables).insertInto('idempotencyKeys').values({ keyHash: this.keyHash, fingerprint: this.key.fingerprint, reply, expiresAt: this.expiresAt }).execute();
        return made;
      });
      this.written = answer;
      return reply as EffectReply<T>;
    } catch (err) {
      // A repeat holds or committed the key: it answers for the request; this copy applied nothing.
      if (isUniqueViolation(err, 'idempotency_keys_pkey')) throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A repeat of this request holds its operation key.', { details: { retryAfterSeconds: 1 } });
      throw err;
    }
  };

  /** The answer: the one committed with the effect when what came after it failed (the effect stands). */
  finish(reply: RpcReply): RpcReply {
    if (this.written && this.written.ok && !reply.ok) return this.written;
    return this.written && sameAnswer(reply, this.written) ? this.written : reply;
  }
}

function sameAnswer(a: RpcReply, b: RpcReply): boolean {
  const { meta: _m1, ...x } = a;
  const { meta: _m2, ...y } = b;
  return JSON.stringify(x) === JSON.stringify(y);
}
