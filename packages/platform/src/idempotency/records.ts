import { CompiledQuery, sql, type ControlledTransaction, type Kysely } from 'kysely';
import type { IdempotencyContext, RpcReply } from '@aex/contracts';
import type { PlatformTables } from '../db/platform-tables.js';
import type { Logger } from '../logger.js';
import { outsideTrace } from '../bus/tracing.js';
import { GroupCommit } from '../db/group-commit.js';
import type { EffectReply, EffectRunner } from '../replies.js';
import type { Transactor } from '../messaging/transaction-runner.js';
import { FirstCopy, type OperationRecord } from './first-copy.js';
import { KeyedRun } from './keyed-run.js';
import { idempotencyKeyHash, openReply, OPERATION_SCOPE_PREFIX } from './reply-cipher.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;
type Tables = Kysely<PlatformTables>;

export interface IdempotencyRecordsOptions {
  /** The service's transactions (its schema holds `idempotency_keys`; its relay publishes what effects commit). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  tx: Transactor<any>;
  /** The pool of claim transactions (`ServiceDb.claims`). */
  claims: AnyDb;
  ttlMs: number;
  /** A handler that has not reached its effect this long after its claim loses the claim. */
  abandonAfterMs: number;
  logger: Logger;
  /** The service's clock: when an answer expires and is pruned (D5.2). */
  now?: () => Date;
}

/**
 * The scope of an operation key the gateway made for a write sent without an Idempotency-Key: apart
 * from every client scope (`agent:…`, `operator`, `anonymous:…`), so neither key finds the other's
 * record (docs/idempotency.md "Operation keys").
 */
export const operationScope = (clientScope: string) => `${OPERATION_SCOPE_PREFIX}${clientScope}`;

/**
 * How long the answer under a gateway-made key is kept: for the gateway's own repeat, and for a client
 * told the outcome is unknown to repeat with the key it was given. Every write without a key leaves
 * one, so they are kept far shorter than a client's keys (D5.2).
 */
const OPERATION_KEY_TTL_MS = 3_600_000;

/** Rows deleted by one statement of a prune; a prune repeats it while it fills (at most `PRUNE_ROUNDS`). */
const PRUNE_BATCH = 1000;
const PRUNE_ROUNDS = 100;

/** How long a request waits for another request's claim of the same key before answering 409. */
const CLAIM_WAIT = '250ms';

const inUse = (): RpcReply => ({
  ok: false,
  status: 409,
  errors: [{ code: 'IDEMPOTENCY_KEY_IN_USE', message: 'A request with this Idempotency-Key is still being processed.', details: { retryAfterSeconds: 1 } }],
});

const reused = (): RpcReply => ({
  ok: false,
  status: 422,
  errors: [{ code: 'IDEMPOTENCY_KEY_REUSED', message: 'This Idempotency-Key was used for a different request.' }],
});

/**
 * A repeat under a key whose first copy committed its effect but died before writing the answer: the
 * request was applied; what it answered is lost. 202 in the style of an unknown outcome (the gateway
 * adds where the resource can be read), saying that it was applied.
 */
const appliedAnswerLost = (): RpcReply => ({
  ok: false,
  status: 202,
  errors: [{
    code: 'SERVICE_UNAVAILABLE',
    message: 'The request was applied, but the replica that applied it stopped before its answer was kept: read the resource for its state. Do not send it again.',
    details: { outcome: 'applied' },
  }],
});

const databaseDown = (): RpcReply => ({
  ok: false,
  status: 503,
  errors: [{ code: 'SERVICE_UNAVAILABLE', message: 'The service cannot reach its database; the request was not run.' }],
});

/**
 * Exactly-once effects at the owning service (D5.4, D5.5). A keyed request first claims its key by
 * inserting the key's row in a transaction of its own, which stays open while the handler runs:
 * - a repeat meanwhile waits for that row a moment and answers 409 IDEMPOTENCY_KEY_IN_USE;
 * - the handler's `ctx.effect` runs inside the claim's transaction and stores the answer there, so
 *   the effect, the key and the answer commit together (or, on any crash, not at all: Postgres rolls
 *   back the claim of a process that died and the key is free for the retry);
 * - an answer without an effect (a refusal, a read) is stored when the handler returns.
 * A committed row is final: a repeat with the same fingerprint gets the stored answer, another
 * fingerprint 422. No lease or clock decides whether an effect may run again.
 */
export class IdempotencyRecords {
  private pruneTimer: NodeJS.Timeout | undefined;

  private readonly now: () => Date;
  /**
   * The answers of first copies whose key's row their effect wrote without one (a step written at
   * commit, a group commit of fundings): those arriving together are written by one statement, a
   * fixed text, so a write costs no round trip of its own for its answer.
   */
  private readonly answers: GroupCommit<{ keyHash: string; sealed: Buffer }, undefined>;

  constructor(private readonly opts: IdempotencyRecordsOptions) {
    this.now = opts.now ?? (() => new Date());
    const db = opts.tx.db as Kysely<PlatformTables>;
    this.answers = new GroupCommit<{ keyHash: string; sealed: Buffer }, undefined>(async (items) => {
      await db.executeQuery(CompiledQuery.raw(
        'update idempotency_keys k set reply = a.reply from unnest($1::text[], $2::bytea[]) as a(key_hash, reply) where k.key_hash = a.key_hash',
        [items.map((i) => i.keyHash), items.map((i) => i.sealed)],
      ));
      return items.map(() => undefined);
    }, { maxBatch: 256, maxInFlight: 2 });
  }

  /**
   * Runs one request. Without a key, `handle` runs with plain transactions. The first copy of a
   * request under a key the gateway made is given the `OperationRecord` its effects record the key by.
   */
  async run(
    key: IdempotencyContext | undefined, requestId: string, handle: (effect: EffectRunner, operationRecord?: OperationRecord) => Promise<RpcReply>,
    replayed?: () => Promise<void>,
  ): Promise<RpcReply> {
    if (!key) return handle(plainEffect);
    const keyHash = idempotencyKeyHash(key.scope, key.key);
    const ttlMs = key.scope.startsWith(OPERATION_SCOPE_PREFIX) ? Math.min(OPERATION_KEY_TTL_MS, this.opts.ttlMs) : this.opts.ttlMs;
    if (key.firstCopy && key.scope.startsWith(OPERATION_SCOPE_PREFIX)) {
      const first = new FirstCopy(keyHash, key, requestId, new Date(this.now().getTime() + ttlMs), this.opts.tx.db, this.opts.logger, (hash, sealed) => this.answers.submit({ keyHash: hash, sealed }));
      return first.finish(await handle(first.effect, first));
    }
    let claim: Claim;
    try {
      claim = await this.claim(keyHash, key, ttlMs);
    } catch (err) {
      this.opts.logger.error({ err }, 'Idempotency-Key claim failed');
      return databaseDown();
    }
    if (claim.kind === 'busy') return inUse();
    if (claim.kind === 'stored') {
      if (claim.fingerprint !== key.fingerprint) return reused();
      // A first copy's effect committed the key without its answer (a step written at commit): the
      // answer follows while its handler runs; once that is long over, it died before writing it.
      if (claim.reply === null && claim.expiresAt.getTime() - ttlMs > this.now().getTime() - this.opts.abandonAfterMs) return inUse();
      // The effect committed, but what its handler did after the commit may not have happened (the
      // replica died between): the service does it again before the answer goes out.
      await replayed?.().catch((err: unknown) => this.opts.logger.error({ err, keyHash }, 'what follows a replayed write’s commit failed'));
      if (claim.reply === null) return appliedAnswerLost();
      const plaintext = openReply(key.scope, key.key, claim.reply);
      if (plaintext === null) {
        this.opts.logger.error({ keyHash }, 'stored Idempotency-Key answer cannot be read');
        return inUse();
      }
      return { ...(JSON.parse(plaintext) as RpcReply), replayed: true };
    }
    const run = new KeyedRun(claim.trx, keyHash, key, requestId, this.opts);
    let reply: RpcReply;
    try {
      reply = await handle(run.effect);
    } catch (err) {
      await run.release();
      throw err;
    }
    return run.finish(reply);
  }

  private async claim(keyHash: string, key: IdempotencyContext, ttlMs: number): Promise<Claim> {
    const trx = await this.opts.claims.startTransaction().execute();
    try {
      await sql`select set_config('lock_timeout', ${CLAIM_WAIT}, true)`.execute(trx);
      if (!(await this.insertClaim(trx, keyHash, key.fingerprint, ttlMs))) {
        const row = await (trx as unknown as Tables).selectFrom('idempotencyKeys').select(['fingerprint', 'reply', 'expiresAt']).where('keyHash', '=', keyHash).executeTakeFirst();
        if (row && row.expiresAt.getTime() > this.now().getTime()) {
          await trx.rollback().execute();
          return { kind: 'stored', fingerprint: row.fingerprint, reply: row.reply, expiresAt: row.expiresAt };
        }
        // D5.2: an answer older than the retention is forgotten; the key is free again.
        await (trx as unknown as Tables).deleteFrom('idempotencyKeys').where('keyHash', '=', keyHash).execute();
        if (!(await this.insertClaim(trx, keyHash, key.fingerprint, ttlMs))) {
          await trx.rollback().execute();
          return { kind: 'busy' };
        }
      }
      await sql`set local lock_timeout to default`.execute(trx);
      return { kind: 'claimed', trx };
    } catch (err) {
      await trx.rollback().execute().catch(() => undefined);
      // 55P03 lock_not_available: another request holds this key's claim right now.
      if ((err as { code?: string }).code === '55P03') return { kind: 'busy' };
      throw err;
    }
  }

  private async insertClaim(trx: AnyDb, keyHash: string, fingerprint: string, ttlMs: number): Promise<boolean> {
    const row = await (trx as Tables)
      .insertInto('idempotencyKeys')
      .values({ keyHash, fingerprint, reply: null, expiresAt: new Date(this.now().getTime() + ttlMs) })
      .onConflict((oc) => oc.column('keyHash').doNothing())
      .returning('keyHash')
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Deletes records past their retention (D5.2); returns how many. */
  async prune(): Promise<number> {
    let pruned = 0;
    for (let round = 0; round < PRUNE_ROUNDS; round++) {
      const r = await sql`delete from idempotency_keys where key_hash in (select key_hash from idempotency_keys where expires_at < ${this.now()} limit ${PRUNE_BATCH})`.execute(this.opts.tx.db);
      const n = Number(r.numAffectedRows ?? 0);
      pruned += n;
      if (n < PRUNE_BATCH) break;
    }
    return pruned;
  }

  /** Prunes every minute until stopped. */
  start(): void {
    this.pruneTimer = outsideTrace(() => setInterval(() => void this.prune().catch((err) => this.opts.logger.warn({ err }, 'pruning Idempotency-Keys failed')), 60_000));
    this.pruneTimer.unref();
  }

  stop(): void {
    clearInterval(this.pruneTimer);
  }
}

type Claim =
  | { kind: 'claimed'; trx: ControlledTransaction<unknown> }
  | { kind: 'stored'; fingerprint: string; reply: Buffer | null; expiresAt: Date }
  | { kind: 'busy' };

const plainEffect: EffectRunner = async (tx, fn) => (await tx.run(fn)) as EffectReply<never>;
