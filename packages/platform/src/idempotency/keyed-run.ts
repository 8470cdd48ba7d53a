import { sql, type ControlledTransaction, type Kysely, type Transaction } from 'kysely';
import { isAppError, type ErrorEntry, type IdempotencyContext, type RpcReply } from '@aex/contracts';
import type { PlatformTables } from '../db/platform-tables.js';
import { outsideTrace } from '../bus/tracing.js';
import { toRpcReply, type EffectReply, type EffectRunner, type Reply } from '../replies.js';
import type { IdempotencyRecordsOptions } from './records.js';
import type { Transactor } from '../messaging/transaction-runner.js';
import { UnitOfWork } from '../messaging/unit-of-work.js';
import { sealReply } from './reply-cipher.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;
type Tables = Kysely<PlatformTables>;

/**
 * D5.4: answers that are never stored (the key is released): 401 and 429 — and a 503 given before any
 * effect (a service the handler depends on did not answer): nothing was applied and the answer says to
 * retry, so a repeat under the key must run the request, not replay a refusal that no longer holds.
 */
const storable = (reply: RpcReply) => reply.status !== 401 && reply.status !== 429 && reply.status !== 503;

/** One keyed request between its claim and its answer (records.ts explains the protocol). */
export class KeyedRun {
  private state: 'claimed' | 'effected' | 'abandoned' | 'unknown' = 'claimed';
  /** The answer committed with the effect. */
  private committed: RpcReply | undefined;
  private inEffect = false;
  private readonly deadline: NodeJS.Timeout;

  constructor(
    private readonly trx: ControlledTransaction<unknown>,
    private readonly keyHash: string,
    private readonly key: IdempotencyContext,
    private readonly requestId: string,
    private readonly opts: IdempotencyRecordsOptions,
  ) {
    // A handler stuck before its effect (a stalled dependency) must not hold the key forever: the
    // claim is given up and the key freed; its effect, should it come, then fails (nothing applied).
    this.deadline = outsideTrace(() => setTimeout(() => void this.abandon(), opts.abandonAfterMs));
  }

  private async abandon(): Promise<void> {
    if (this.state !== 'claimed' || this.inEffect) return;
    this.state = 'abandoned';
    this.opts.logger.warn({ requestId: this.requestId }, 'handler did not reach its effect in time; Idempotency-Key claim given up');
    await this.trx.rollback().execute().catch(() => undefined);
  }

  private stamp(reply: RpcReply): RpcReply {
    return { ...reply, meta: { requestId: this.requestId, timestamp: new Date().toISOString() } };
  }

  private seal(reply: RpcReply): Buffer {
    return sealReply(this.key.scope, this.key.key, JSON.stringify(reply));
  }

  private async store(db: AnyDb, reply: RpcReply): Promise<void> {
    await (db as Tables).updateTable('idempotencyKeys').set({ reply: this.seal(reply) }).where('keyHash', '=', this.keyHash).execute();
  }

  readonly effect: EffectRunner = async <DB, T>(tx: Transactor<DB>, fn: (trx: Transaction<DB>, work: UnitOfWork) => Promise<Reply<T>>): Promise<EffectReply<T>> => {
    if (tx.db !== (this.opts.tx.db as unknown)) throw new Error('ctx.effect must be given the service database');
    if (this.state === 'effected') return this.effectAgain(tx, fn);
    if (this.state !== 'claimed') throw new Error('the Idempotency-Key claim of this request was given up; nothing was applied');
    this.inEffect = true;
    try {
      await sql`savepoint effect`.execute(this.trx);
      // What the effect publishes is handed to the relay as soon as it commits; the key's answer is
      // written after the flush, so the flush is not the last statement.
      const work = new UnitOfWork(this.trx as unknown as AnyDb, tx.relay);
      let reply: Reply<T>;
      try {
        reply = await fn(this.trx as unknown as Transaction<DB>, work);
      } catch (err) {
        // The effect is undone; the claim stays, to store the refusal as this key's answer.
        await sql`rollback to savepoint effect`.execute(this.trx);
        work.discard();
        throw err;
      }
      await work.flush();
      const answer = this.stamp(toRpcReply(reply));
      await this.store(this.trx, answer);
      this.state = 'unknown';
      await this.trx.commit().execute();
      work.committed();
      this.state = 'effected';
      this.committed = answer;
      return reply as EffectReply<T>;
    } finally {
      this.inEffect = false;
    }
  };

  /**
   * A second effect of one request: its own transaction, which replaces the stored answer. A refusal
   * it throws (an AppError, e.g. 402 once a saga step refused what the first effect started) becomes
   * the stored answer, committed with whatever the transaction wrote before it.
   */
  private async effectAgain<DB, T>(tx: Transactor<DB>, fn: (trx: Transaction<DB>, work: UnitOfWork) => Promise<Reply<T>>): Promise<EffectReply<T>> {
    let refusal: unknown;
    const reply = await tx.run(async (trx, work) => {
      await (trx as unknown as Tables).selectFrom('idempotencyKeys').select('keyHash').where('keyHash', '=', this.keyHash).forUpdate().execute();
      let answer: RpcReply;
      let made: Reply<T> | undefined;
      try {
        made = await fn(trx, work);
        answer = this.stamp(toRpcReply(made));
      } catch (err) {
        if (!isAppError(err)) throw err;
        refusal = err;
        answer = this.stamp({ ok: false, status: err.status, errors: err.entries });
      }
      await this.store(trx, answer);
      this.committed = answer;
      return made;
    });
    if (refusal) throw refusal;
    return reply as EffectReply<T>;
  }

  /** Lets the claim go without an answer (the handler threw instead of answering). */
  async release(): Promise<void> {
    clearTimeout(this.deadline);
    if (this.state === 'claimed') {
      this.state = 'abandoned';
      await this.trx.rollback().execute().catch(() => undefined);
    }
  }

  /** The request's answer, stored under its key unless D5.4 says otherwise. */
  async finish(reply: RpcReply): Promise<RpcReply> {
    clearTimeout(this.deadline);
    switch (this.state) {
      case 'claimed':
        return this.finishWithoutEffect(reply);
      case 'effected':
        return this.finishAfterEffect(reply);
      default:
        // Abandoned, or the commit's outcome is unknown: nothing is known to be stored.
        return reply;
    }
  }

  private async finishWithoutEffect(reply: RpcReply): Promise<RpcReply> {
    if (!storable(reply)) {
      await this.trx.rollback().execute().catch(() => undefined);
      return reply;
    }
    const answer = this.stamp(reply);
    try {
      await this.store(this.trx, answer);
      await this.trx.commit().execute();
      return answer;
    } catch (err) {
      this.opts.logger.warn({ err, requestId: this.requestId }, 'answer could not be stored under its Idempotency-Key');
      await this.trx.rollback().execute().catch(() => undefined);
      return reply;
    }
  }

  private async finishAfterEffect(reply: RpcReply): Promise<RpcReply> {
    const committed = this.committed!;
    if (!reply.ok && committed.ok) {
      // The effect is committed; what failed after it does not undo it, so the answer is the one
      // committed with it (e.g. sign-up's 202 while its wallet saga finishes).
      this.opts.logger.warn({ requestId: this.requestId, status: reply.status, errors: reply.errors as ErrorEntry[] }, 'request failed after its effect committed; answering with the committed answer');
      return committed;
    }
    if (sameAnswer(reply, committed)) return committed;
    const answer = this.stamp(reply);
    try {
      await this.store(this.opts.tx.db, answer);
      return answer;
    } catch (err) {
      this.opts.logger.warn({ err, requestId: this.requestId }, 'final answer could not replace the committed one; replays give the committed answer');
      return answer;
    }
  }
}

function sameAnswer(a: RpcReply, b: RpcReply): boolean {
  const { meta: _m1, ...x } = a;
  const { meta: _m2, ...y } = b;
  return JSON.stringify(x) === JSON.stringify(y);
}
