import { sql, type Kysely, type Transaction } from 'kysely';
import { AppError, type ErrorEntry, type IdempotencyContext, type RpcReply } from '@aex/contracts';
import { isUniqueViolation } from '../db/errors.js';
import type { PlatformTables } from '../db/platform-tables.js';
import type { Logger } from '../logger.js';
import { toRpcReply, type EffectReply, type EffectRunner, type Reply } from '../replies.js';
import type { Transactor } from '../messaging/transaction-runner.js';
import type { UnitOfWork } from '../messaging/unit-of-work.js';
import { sealReply } from './reply-cipher.js';

type Tables = Kysely<PlatformTables>;

/**
 * The first copy of a write found its operation key taken (a unique violation of the key's row): a
 * repeat holds it and answers for the request; this copy applied nothing.
 */
export const isOperationKeyTaken = (err: unknown) => isUniqueViolation(err, 'idempotency_keys_pkey');
export const operationKeyTaken = () => new AppError('IDEMPOTENCY_KEY_IN_USE', 'A repeat of this request holds its operation key.', { details: { retryAfterSeconds: 1 } });

/** The row of an operation key, as a transaction that makes the effect without `ctx.effect` writes it. */
export interface OperationKeyRow {
  keyHash: string;
  fingerprint: string;
  expiresAt: Date;
}

/**
 * How a request's effect made without `ctx.effect` — a step written at commit, a group commit —
 * records the operation key the gateway made for it (`HandlerContext.operationRecord`). The key's row is
 * written by the effect's own transaction, with no answer yet (`reply` null); the request's answer
 * replaces it once known (`FirstCopy.finish`). A repeat finding a row without an answer waits for it.
 */
export interface OperationRecord {
  /** Writes the key's row in `trx`, a transaction making the effect. */
  insert(trx: Transaction<unknown>, work: UnitOfWork): Promise<void>;
  /** Has the key's row written by `work`'s last statement, only with the step's guarded write. */
  atCommit(work: UnitOfWork): void;
  /** The key's row, for a group commit to write with the request's effect (undefined once written). */
  row(): OperationKeyRow | undefined;
  /** A group commit wrote `row()` with the effect. */
  recorded(): void;
}

/**
 * The first copy of a write under a key the gateway made (`IdempotencyContext.firstCopy`): no claim
 * is taken — that costs a transaction of its own on every write — and the key's row is inserted
 * by the effect's own transaction: with the sealed answer through `ctx.effect`, without one through
 * `OperationRecord` (the answer is written when the request ends). A repeat (the gateway asking
 * again) takes the full claim of records.ts, inserting the same row: the primary key lets only one of
 * them commit, so either the first copy's effect committed and the repeat finds its answer, or the
 * repeat holds the key and the first copy's effect, should it still come, fails on the row and rolls
 * back (a unique violation of the key, which rpc.ts answers 409 IDEMPOTENCY_KEY_IN_USE).
 */
export class FirstCopy implements OperationRecord {
  /** Whether the key's row is committed. */
  private rowWritten = false;
  /** The answer the row holds (none when written by an `OperationRecord` path). */
  private stored: RpcReply | undefined;

  constructor(
    private readonly keyHash: string,
    private readonly key: IdempotencyContext,
    private readonly requestId: string,
    private readonly expiresAt: Date,
    private readonly serviceDb: unknown,
    private readonly logger: Logger,
    /** Writes the answer over the key's row (`records.ts`: the answers arriving together share one statement). */
    private readonly storeAnswer: (keyHash: string, sealed: Buffer) => Promise<void>,
  ) {}

  private stamp(reply: RpcReply): RpcReply {
    return { ...reply, meta: { requestId: this.requestId, timestamp: new Date().toISOString() } };
  }

  private seal(reply: RpcReply): Buffer {
    return sealReply(this.key.scope, this.key.key, JSON.stringify(reply));
  }

  readonly effect: EffectRunner = async <DB, T>(tx: Transactor<DB>, fn: (trx: Transaction<DB>, work: UnitOfWork) => Promise<Reply<T>>): Promise<EffectReply<T>> => {
    if (tx.db !== this.serviceDb) throw new Error('ctx.effect must be given the service database');
    let answer: RpcReply | undefined;
    const reply = await tx.run(async (trx, work) => {
      const made = await fn(trx, work);
      answer = this.stamp(toRpcReply(made));
      const reply = this.seal(answer);
      // A second effect of the request replaces the answer its first committed.
      if (this.rowWritten) await (trx as unknown as Tables).updateTable('idempotencyKeys').set({ reply }).where('keyHash', '=', this.keyHash).execute();
      else await (trx as unknown as Tables).insertInto('idempotencyKeys').values({ ...this.keyRow(), reply }).execute();
      return made;
    }).catch((err: unknown) => {
      // A repeat holds or committed the key: it answers for the request; this copy applied nothing.
      if (isOperationKeyTaken(err)) throw operationKeyTaken();
      throw err;
    });
    this.rowWritten = true;
    this.stored = answer;
    return reply as EffectReply<T>;
  };

  private keyRow(): OperationKeyRow {
    return { keyHash: this.keyHash, fingerprint: this.key.fingerprint, expiresAt: this.expiresAt };
  }

  row(): OperationKeyRow | undefined {
    return this.rowWritten ? undefined : this.keyRow();
  }

  recorded(): void {
    this.rowWritten = true;
  }

  async insert(trx: Transaction<unknown>, work: UnitOfWork): Promise<void> {
    if (this.rowWritten) return;
    await (trx as unknown as Tables).insertInto('idempotencyKeys').values({ ...this.keyRow(), reply: null }).execute();
    work.afterCommit(() => this.recorded());
  }

  atCommit(work: UnitOfWork): void {
    if (this.rowWritten) return;
    work.write((written) => sql`insert into idempotency_keys (key_hash, fingerprint, reply, expires_at)
      select ${this.keyHash}::text, ${this.key.fingerprint}::text, null::bytea, ${this.expiresAt}::timestamptz where ${written}`);
    work.afterCommit(() => this.recorded());
  }

  /**
   * The request's answer. Without an effect committed, nothing is stored (a repeat runs the request
   * again: nothing was applied). After one, the answer committed with it when what came after failed
   * (the effect stands); else the final answer, written over the row's (a refusal decided after the
   * effect: a hold the wallet refused, an output that failed its schema).
   */
  async finish(reply: RpcReply): Promise<RpcReply> {
    if (!this.rowWritten) return reply;
    const stored = this.stored;
    if (stored?.ok && !reply.ok) {
      this.logger.warn({ requestId: this.requestId, status: reply.status, errors: reply.errors as ErrorEntry[] }, 'request failed after its effect committed; answering with the committed answer');
      return stored;
    }
    if (stored && sameAnswer(reply, stored)) return stored;
    const answer = this.stamp(reply);
    try {
      // A statement of fixed text, not built by Kysely: it runs once for most writes.
      await this.storeAnswer(this.keyHash, this.seal(answer));
    } catch (err) {
      this.logger.warn({ err, requestId: this.requestId }, 'answer could not be stored under the operation key; a repeat is told the request was applied');
    }
    return answer;
  }
}

function sameAnswer(a: RpcReply, b: RpcReply): boolean {
  const { meta: _m1, ...x } = a;
  const { meta: _m2, ...y } = b;
  return JSON.stringify(x) === JSON.stringify(y);
}
