import { AppError, transactionEvent, transactionOutcome, walletSaga, type Principal, type TransactionStatus } from '@aex/contracts';
import { cancelTimer, enqueue, precompiled, scheduleTimer, writeAtCommit, type EffectReply, type HandlerContext, type Precompiled, type Slots } from '@aex/platform';
import { sql, type Kysely, type Transaction, type Updateable } from 'kysely';
import type { Database, NegotiationRow, TransactionRow } from '../db/schema.js';
import { platformFee } from '../domain/pricing.js';
import { canMove, isTerminal } from '../domain/state-machine.js';
import type { KnownRow, KnownTransactions, VersionedRow } from '../known-transactions.js';
import type { SagaSignals, SagaWatch } from '../saga-signals.js';

type Trx = Transaction<Database>;

/** Durable timer kinds of this service (ARCHITECTURE "Timers"). */
export const TIMERS = { offerExpiry: 'offer_expiry', transactionExpiry: 'transaction_expiry', reviewWindow: 'review_window', disputeDeadline: 'dispute_deadline' } as const;

/** The row's version, which a write guarded by it expects to find (`moveIfUnchanged`). */
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
 * whose write is guarded by the row's version (`moveIfUnchanged`). Who the parties are, the service and
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
 * Updates the row that `t` was read as, if it is still that version. When it can (`writeAtCommit`,
 * One round trip less), the update is made by the statement written before the commit:
 * the row returned is then `t` with the changes, completed by that statement — the parts a replica
 * does not keep (input, output, metadata) and the new version — once it has run, so an answer
 * showing it is built when sent (`rowReply`); a row that moved on since undoes the transaction, and
 * the step runs again. Made at once otherwise: undefined, with nothing written, when the row moved
 * on (the caller then decides again on the row locked).
 */
export async function updateKnown(trx: Trx, t: KnownRow, changes: Updateable<TransactionRow>): Promise<VersionedRow | undefined> {
  const next = { ...t, ...changes } as VersionedRow;
  const update = rowUpdate(trx, t.id, changes, t.version);
  if (writeAtCommit<VersionedRow>(trx, { parts: [['moved', update]], guard: 'moved', written: ([row]) => Object.assign(next, row) })) return next;
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

/**
 * Every status move goes through here (D9.7): the row is updated, and `transaction.<status>` is
 * written to the outbox for both parties (D14.1) in the same database transaction. A move the state
 * machine does not know is a bug, never a request's doing. Reaching a terminal status with money
 * held (or a hold on its way) sends it back, and the transaction's timers are dropped. `t` is the
 * row locked in this database transaction.
 */
export async function move(trx: Trx, t: Pick<TransactionRow, 'id' | 'status' | 'hold'>, to: TransactionStatus, patch: Updateable<TransactionRow> & { statusReason?: string | null }, now: Date): Promise<VersionedRow> {
  return (await moveRow(trx, t, to, patch, now, false))!;
}

/**
 * `move` of the row as it was known (`KnownTransactions`) without a lock: made only if the row is
 * still that version (`updateKnown`: by the statement before the commit when it can be, with the
 * step's messages and timers — a saga step of one round trip), else undefined and nothing written —
 * the caller decides again on the row locked (a saga step or request that finds the row
 * as it left it saves the locking read).
 */
export function moveIfUnchanged(trx: Trx, t: KnownRow, to: TransactionStatus, patch: Updateable<TransactionRow> & { statusReason?: string | null }, now: Date): Promise<VersionedRow | undefined> {
  return moveRow(trx, t, to, patch, now, true);
}

async function moveRow(trx: Trx, t: Pick<TransactionRow, 'id' | 'status' | 'hold'> & { version?: string }, to: TransactionStatus, patch: Updateable<TransactionRow> & { statusReason?: string | null }, now: Date, guarded: boolean): Promise<VersionedRow | undefined> {
  if (!canMove(t.status, to)) throw new Error(`transaction ${t.id}: no move from ${t.status} to ${to}`);
  const changes: Updateable<TransactionRow> = { statusReason: null, ...patch, status: to, updatedAt: now };
  const hold = patch.hold ?? t.hold;
  const returning = isTerminal(to) && (hold === 'requested' || hold === 'held');
  if (returning) changes.hold = 'returning';
  // The update first: a guarded one that finds the row moved on must leave nothing written.
  const next = guarded ? await updateKnown(trx, t as KnownRow, changes) : await updateRow(trx, t.id, changes);
  if (!next && !guarded) throw new Error(`transaction ${t.id} to move is gone`);
  if (!next) return undefined;
  if (returning) await enqueue(trx, walletSaga.returnHold, { transactionId: t.id }, { now });
  if (isTerminal(to)) await cancelTimer(trx, [TIMERS.offerExpiry, TIMERS.transactionExpiry, TIMERS.reviewWindow], t.id);
  await announce(trx, next, t.status, now);
  await recordOutcome(trx, next, now);
  return next;
}

/**
 * D15.2: the provider's trust counts a transaction that ends after its price was held — settled,
 * failed (its output never passed) or expired; one that failed before any hold (the consumer's funds)
 * or was cancelled says nothing about the provider.
 */
async function recordOutcome(trx: Trx, t: TransactionRow, now: Date): Promise<void> {
  if (t.fundsHeldAt === null || (t.status !== 'settled' && t.status !== 'failed' && t.status !== 'expired')) return;
  const late = t.deliveredAt !== null && t.deliveredAt.getTime() - t.fundsHeldAt.getTime() > t.sla.maxLatencyMs;
  // D15.2: a dispute the consumer won counts as lost by the provider.
  const outcome = t.status === 'failed' && t.statusReason === 'dispute_consumer_wins' ? 'dispute_lost' : t.status;
  await enqueue(trx, transactionOutcome, {
    transactionId: t.id, providerAgentId: t.providerAgentId, outcome, qualityScore: t.qualityScore, late, at: now.toISOString(),
  }, { now });
}

/** Writes `transaction.<status>` of the row as it now is. */
export async function announce(trx: Trx, t: TransactionRow, previousStatus: TransactionStatus | null, now: Date): Promise<void> {
  await enqueue(trx, transactionEvent(t.status), {
    transactionId: t.id,
    status: t.status,
    previousStatus,
    statusReason: t.statusReason,
    consumerAgentId: t.consumerAgentId,
    providerAgentId: t.providerAgentId,
    serviceId: t.serviceId,
    agreedPriceCents: t.agreedPriceCents,
    platformFeeCents: t.platformFeeCents,
  }, { now });
}

/** Asks the wallet to hold the agreed price (a new attempt each time: an accept refused for funds may come again). */
export async function requestHold(trx: Trx, t: TransactionRow, amountCents: number, now: Date): Promise<number> {
  const attempt = t.holdAttempt + 1;
  await enqueue(trx, walletSaga.holdFunds, { transactionId: t.id, consumerAgentId: t.consumerAgentId, amountCents, attempt }, { now });
  return attempt;
}

/** Asks the wallet to settle the held price: to the provider, minus the fee to the platform (D13.3). */
export async function requestSettlement(trx: Trx, t: TransactionRow, now: Date, refundCents = 0): Promise<void> {
  await enqueue(trx, walletSaga.settle, { transactionId: t.id, providerAgentId: t.providerAgentId, amountCents: t.agreedPriceCents!, feeCents: t.platformFeeCents ?? 0, ...(refundCents > 0 ? { refundCents } : {}) }, { now });
}

/** D11.4: the transaction is cancelled unless the offer of `round` is answered by `at`. */
export async function scheduleOfferExpiry(trx: Trx, id: string, round: number, at: Date): Promise<void> {
  await scheduleTimer(trx, { kind: TIMERS.offerExpiry, key: id, fireAt: at, payload: { round } });
}

/** The negotiation's latest message (every negotiation has its opening offer). */
/**
 * The changes that make a pending accept's price the agreed one (D11.2, with its fee, D9.11): when
 * its hold is placed, and when the transaction is cancelled while the hold was on its way (the
 * price held and returned is then the one the transaction shows).
 */
export const agreedPendingAccept = (pendingAcceptPriceCents: number): Updateable<TransactionRow> => ({
  agreedPriceCents: pendingAcceptPriceCents, platformFeeCents: platformFee(pendingAcceptPriceCents), pendingAcceptBy: null, pendingAcceptPriceCents: null, pendingAcceptMessage: null,
});

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

/** D9.5 / D9.7: the transaction expires `sla.timeoutMs` after its funds are held. */
export async function scheduleExpiry(trx: Trx, id: string, at: Date): Promise<void> {
  await scheduleTimer(trx, { kind: TIMERS.transactionExpiry, key: id, fireAt: at });
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
