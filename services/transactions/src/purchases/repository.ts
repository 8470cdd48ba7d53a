import { randomUUID } from 'node:crypto';
import { AppError, pagination, transactionEvent, transactionOutcome, walletSaga, type Principal } from '@aex/contracts';
import { precompiled, runStep, type EffectReply, type HandlerContext, type Precompiled, type Slots, type StepResult, type UnitOfWork } from '@aex/platform';
import { sql, type Kysely, type SelectQueryBuilder, type Transaction, type Updateable } from 'kysely';
import type { TransactionDeps } from '../context.js';
import type { Database, NegotiationRow, TransactionRow } from '../db/schema.js';
import { decidePurchase, TIMERS, type PurchaseChanges, type PurchaseCommand, type PurchaseEffect } from '../domain/purchase.js';
import type { KnownRow, KnownTransactions, VersionedRow } from './known-transactions.js';
import type { SagaSignals, SagaWatch } from './saga-signals.js';
import { transactionView } from './views.js';

type Trx = Transaction<Database>;

/** The row's version, which a write guarded by it expects to find (`updateKnown`). */
export const VERSION = sql<string>`xmin::text`.as('version');

const isParty = (t: Pick<TransactionRow, 'consumerAgentId' | 'providerAgentId'>, caller: Principal) => t.consumerAgentId === caller.agentId || t.providerAgentId === caller.agentId;

/** D9.8: a transaction is visible to its two parties only; to anyone else it does not exist (404). */
export async function visibleTransaction(db: Kysely<Database>, caller: Principal, id: string): Promise<VersionedRow> {
  const row = await db.selectFrom('transactions').selectAll().select(VERSION).where('id', '=', id).executeTakeFirst();
  if (!row || !isParty(row, caller)) throw new AppError('NOT_FOUND', 'No such transaction.');
  return row;
}

/**
 * The transaction as this replica last knew it (`fresh: false`), else as read now — for a request
 * whose write is guarded by the row's version (`purchaseStep`). Who the parties are, the service and
 * the contract revision never change, so D9.8's 404 and 403 are exact from either; the status may
 * have moved on since, so only a fresh row may refuse a request for its status before the write.
 */
export async function partyTransaction(db: Kysely<Database>, known: KnownTransactions, caller: Principal, id: string): Promise<{ row: KnownRow; fresh: boolean }> {
  const remembered = known.get(id);
  if (!remembered) return { row: await visibleTransaction(db, caller, id), fresh: true };
  if (!isParty(remembered, caller)) throw new AppError('NOT_FOUND', 'No such transaction.');
  return { row: remembered, fresh: false };
}

export const lockTransaction = (trx: Trx, id: string): Promise<VersionedRow | undefined> => trx.selectFrom('transactions').selectAll().select(VERSION).where('id', '=', id).forUpdate().executeTakeFirst();

/**
 * Updates the row that `t` was read as, if it is still that version. When it can, the update is made
 * by the unit of work's statement with the commit (`writeAtCommit`: one round trip less). The row
 * returned is then `t` with the changes, completed by that statement once it has run — the parts a
 * replica does not keep (input, output, metadata) and the new version — so an answer showing it is
 * built when sent (`rowReply`); a row that moved on since undoes the transaction, and the step runs
 * again. Made at once otherwise: undefined, with nothing written, when the row moved on (the step
 * runner then decides again on the row locked).
 */
export async function updateKnown(trx: Trx, work: UnitOfWork, t: KnownRow, changes: Updateable<TransactionRow>): Promise<VersionedRow | undefined> {
  const next = { ...t, ...changes } as VersionedRow;
  const update = rowUpdate(trx, t.id, changes, t.version);
  if (work.writeAtCommit<VersionedRow>({ parts: [['moved', update]], guard: 'moved', written: ([row]) => Object.assign(next, row) })) return next;
  return (await trx.executeQuery(update)).rows[0];
}

/** Updates the row `id` with `changes`, returning it as it leaves it (undefined when there is none). */
export const updateRow = async (trx: Trx, id: string, changes: Updateable<TransactionRow>): Promise<VersionedRow | undefined> =>
  (await trx.executeQuery(rowUpdate(trx, id, changes))).rows[0];

/** The update of these columns of a row, compiled once per set of columns. */
const updates = new Map<string, Precompiled<Record<string, unknown>, Database, VersionedRow>>();

/**
 * An update of the transaction `id` with `changes`, guarded by `version` when given, returning the
 * row as it leaves it: bound to a text Kysely compiled once for its set of columns.
 */
function rowUpdate(trx: Trx, id: string, changes: Updateable<TransactionRow>, version?: string) {
  // An undefined value leaves its column alone, as Kysely's `set` would.
  const columns = Object.keys(changes).filter((c) => changes[c as keyof typeof changes] !== undefined);
  const key = `${version === undefined ? '' : 'v:'}${columns.join(',')}`;
  let update = updates.get(key);
  if (!update) {
    update = precompiled((db: Kysely<Database>, $: Slots<Record<string, unknown>>) => db
      .updateTable('transactions')
      .set(Object.fromEntries(columns.map((c) => [c, $[`set_${c}`]])) as Updateable<TransactionRow>)
      .where('id', '=', $.id as string)
      .$if(version !== undefined, (q) => q.where(sql<boolean>`xmin = ${$.version}::xid`))
      .returningAll()
      .returning(VERSION)) as Precompiled<Record<string, unknown>, Database, VersionedRow>;
    updates.set(key, update);
  }
  const values: Record<string, unknown> = { id, version };
  for (const c of columns) values[`set_${c}`] = changes[c as keyof typeof changes];
  return update.bind(trx, values);
}

/** D9.8: 403 FORBIDDEN when the caller is a party but not the one this action belongs to. */
export function requireRole(t: Pick<TransactionRow, 'consumerAgentId' | 'providerAgentId'>, caller: Principal, role: 'consumer' | 'provider', what: string): void {
  const agentId = role === 'consumer' ? t.consumerAgentId : t.providerAgentId;
  if (agentId !== caller.agentId) throw new AppError('FORBIDDEN', `Only the ${role} may ${what} this transaction.`, { details: { role } });
}

export type PurchaseStep = StepResult<VersionedRow, PurchaseChanges, PurchaseEffect>;

/**
 * One step of the purchase (`decidePurchase`) through the platform's step runner, in `trx`: decided
 * on `remembered` (the row as this replica last knew or read it) when given, with the write guarded
 * by its version, else — or when that row moved on — on the row locked (`lock`, by default a locking
 * read). The changed row and its effects are written in `trx`; a refusal is thrown. Undefined when
 * there is no such transaction. `command` may be built from the row locked (a negotiation reads its
 * latest message under the lock).
 */
export async function purchaseStep(
  deps: Pick<TransactionDeps, 'now'>,
  trx: Trx,
  work: UnitOfWork,
  id: string,
  command: PurchaseCommand | ((t: KnownRow) => PurchaseCommand),
  opts: { remembered?: KnownRow | undefined; lock?: () => Promise<VersionedRow | undefined> } = {},
): Promise<PurchaseStep | undefined> {
  const now = deps.now();
  return runStep<KnownRow, PurchaseChanges, PurchaseEffect>({
    remembered: opts.remembered,
    lock: opts.lock ?? (() => lockTransaction(trx, id)),
    decide: (t) => decidePurchase(t, typeof command === 'function' ? command(t) : command, now),
    write: (t, changes, guarded) => {
      const row: Updateable<TransactionRow> = { ...changes };
      // JSON columns as text: node-postgres would write an array as a Postgres array.
      if (changes.output !== undefined) row.output = changes.output === null ? null : JSON.stringify(changes.output) as never;
      if (changes.approval !== undefined) row.approval = changes.approval === null ? null : JSON.stringify(changes.approval) as never;
      return guarded ? updateKnown(trx, work, t, row) : updateRow(trx, t.id, row);
    },
    apply: (t, effects) => applyEffects(trx, work, t as VersionedRow, effects, now),
  }) as Promise<PurchaseStep | undefined>;
}

/** Makes a decision's effects in `trx`, in order: messages through the outbox, timers, negotiation messages. */
export async function applyEffects(trx: Trx, work: UnitOfWork, t: Pick<TransactionRow, 'id' | 'consumerAgentId' | 'providerAgentId'>, effects: readonly PurchaseEffect[], now: Date): Promise<void> {
  for (const e of effects) {
    switch (e.kind) {
      case 'holdFunds':
        work.enqueue(walletSaga.holdFunds, { transactionId: t.id, consumerAgentId: t.consumerAgentId, amountCents: e.amountCents, attempt: e.attempt }, { now });
        break;
      case 'returnHold':
        work.enqueue(walletSaga.returnHold, { transactionId: t.id }, { now });
        break;
      case 'settle':
        work.enqueue(walletSaga.settle, { transactionId: t.id, providerAgentId: t.providerAgentId, amountCents: e.amountCents, feeCents: e.feeCents, ...(e.refundCents > 0 ? { refundCents: e.refundCents } : {}) }, { now });
        break;
      case 'schedule':
        work.schedule({ kind: TIMERS[e.timer], key: t.id, fireAt: e.at, ...(e.payload ? { payload: e.payload } : {}) });
        break;
      case 'cancelTimers':
        work.cancelTimers(e.timers.map((timer) => TIMERS[timer]), t.id);
        break;
      case 'restoreOfferExpiry': {
        const last = await lastMessage(trx, t.id);
        if (last?.expiresAt) work.schedule({ kind: TIMERS.offerExpiry, key: t.id, fireAt: last.expiresAt, payload: { round: last.round } });
        break;
      }
      case 'recordMessage':
        await trx.insertInto('negotiationMessages').values({
          id: randomUUID(), transactionId: t.id, fromAgentId: e.fromAgentId, messageType: e.messageType, round: e.round,
          terms: JSON.stringify(e.terms) as never, message: e.message, expiresAt: e.expiresAt, createdAt: now,
        }).execute();
        break;
      case 'recordAccept': {
        const last = (await lastMessage(trx, t.id))!;
        await trx.insertInto('negotiationMessages').values({
          id: randomUUID(), transactionId: t.id, fromAgentId: e.fromAgentId, messageType: 'accept', round: last.round + 1,
          terms: '{}' as never, message: e.message, expiresAt: null, createdAt: now,
        }).execute();
        break;
      }
      case 'announce':
        work.enqueue(transactionEvent(e.event.status), e.event, { now });
        break;
      case 'trustOutcome':
        work.enqueue(transactionOutcome, { transactionId: t.id, providerAgentId: t.providerAgentId, outcome: e.outcome, qualityScore: e.qualityScore, late: e.late, at: now.toISOString() }, { now });
        break;
    }
  }
}

/**
 * One page of the transactions `q` selects, newest first, as `viewerAccountId`'s agent sees them,
 * with the count of them all (every list of transactions: an agent's, an account's, its approvals).
 */
export async function transactionsPage(q: SelectQueryBuilder<Database, 'transactions', object>, page: { limit?: number | undefined; offset?: number | undefined }, viewerAccountId: string) {
  const limit = page.limit ?? 20;
  const offset = page.offset ?? 0;
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('createdAt', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    q.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { data: rows.map((r) => transactionView(r, viewerAccountId)), pagination: pagination(count.n, limit, offset) };
}

/** The negotiation's latest message (every negotiation has its opening offer). */
export const lastMessage = (trx: Trx, id: string): Promise<NegotiationRow | undefined> =>
  trx.selectFrom('negotiationMessages').selectAll().where('transactionId', '=', id).orderBy('round', 'desc').limit(1).executeTakeFirst();

/**
 * Answers a request with a refusal after its effect committed (402 once the wallet refused, 400 once
 * invalid output moved the status): made by a second `ctx.effect`, so that it is also the answer
 * stored under the request's Idempotency-Key (D5.3).
 */
export function refuseAfterEffect<T>(ctx: HandlerContext, db: Kysely<Database>, refusal: AppError): Promise<EffectReply<T>> {
  return ctx.effect(db, async () => {
    throw refusal;
  });
}

/**
 * Waits until `done` holds for the transaction's row or `ms` pass; returns the last row seen. A
 * signal of the saga brings the row as committed, or has it read again; without one it is read every
 * `signals.fallbackMs` (the move may be made by another replica). Given a `watch` opened before the
 * commit that started the step, no signal can have been missed, so the row is not read first.
 */
export async function awaitRow(db: Kysely<Database>, signals: SagaSignals, id: string, ms: number, done: (t: TransactionRow) => boolean, watch?: SagaWatch): Promise<TransactionRow> {
  const deadline = Date.now() + ms;
  const listening = watch ?? signals.watch(id);
  const read = () => db.selectFrom('transactions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  try {
    let row = watch ? undefined : await read();
    for (;;) {
      if (row && (done(row) || Date.now() >= deadline)) return row;
      const left = deadline - Date.now();
      if (left <= 0) return row ?? (await read());
      const signal = await listening.next(Math.min(left, signals.fallbackMs));
      row = signal?.row ?? (await read());
    }
  } finally {
    listening.close();
  }
}
