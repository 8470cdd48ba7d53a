import type { Transaction } from 'kysely';
import type { Transactor } from './messaging/transaction-runner.js';
import type { UnitOfWork } from './messaging/unit-of-work.js';
import type { PaginationInfo, RpcReply } from '@aex/contracts';

/** What a handler returns on success; failures are thrown or returned as AppError. */
export interface Reply<T> {
  data: T;
  status?: number;
  pagination?: PaginationInfo;
}

/** Marks a reply made by `ctx.effect` (a type-level brand; nothing at run time). */
export declare const EFFECT_MADE: unique symbol;

/**
 * The reply of an operation that changes state (`Operation.effect`): only `ctx.effect` makes one,
 * so a handler that forgets to record its Idempotency-Key with its change does not compile (D5.5).
 */
export type EffectReply<T> = Reply<T> & { readonly [EFFECT_MADE]: true };

/**
 * Runs the database transaction that makes a request's effect. `tx` is the service's own transactions;
 * `fn` gets the transaction and its unit of work (messages, timers) and returns the reply. With an Idempotency-Key the transaction is the
 * one that holds the key's claim, and the reply is stored in it: effect, key and answer commit
 * together or not at all. A second call runs in a transaction of its own and replaces the answer.
 */
export type EffectRunner = <DB, T>(tx: Transactor<DB>, fn: (trx: Transaction<DB>, work: UnitOfWork) => Promise<Reply<T>>) => Promise<EffectReply<T>>;

/** A handler's success as it travels on the bus. */
export function toRpcReply<T>(r: Reply<T>): RpcReply {
  return { ok: true, status: r.status ?? 200, data: r.data, ...(r.pagination ? { pagination: r.pagination } : {}) };
}

/**
 * The reply of an effect committed by a group commit (db/group-commit.ts) instead of `ctx.effect`:
 * allowed only for a request without an Idempotency-Key, which has no key to record with its effect.
 */
export function groupCommitted<T>(ctx: { keyed: boolean }, r: Reply<T>): EffectReply<T> {
  if (ctx.keyed) throw new Error('A request with an Idempotency-Key makes its effect through ctx.effect (D5.5).');
  return r as EffectReply<T>;
}
