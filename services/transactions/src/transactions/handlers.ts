import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { AppError, isAppError, OFFER_EXPIRY, pagination, type ContractView, type TransactionStatus, type transactionOps } from '@aex/contracts';
import type { Kysely, Transaction } from 'kysely';
import { cancelTimer, precompiled, requireActive, requireAgent, scheduleTimer, type OperationHandler, type Slots } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import type { Database, TransactionRow } from '../db/schema.js';
import { listPrice, platformFee } from '../domain/pricing.js';
import { assertAction, isAllowed } from '../domain/state-machine.js';
import type { KnownRow, VersionedRow } from '../known-transactions.js';
import { agentLockKeys, agentLocks, checkCreationLimits, delegationOf } from './rules.js';
import { agreedPendingAccept, announce, awaitRow, lockTransaction, move, moveIfUnchanged, partyTransaction, refuseAfterEffect, requestHold, requestSettlement, requireRole, scheduleOfferExpiry, TIMERS, updateKnown, updateRow, VERSION, visibleTransaction } from './repository.js';
import { rowReply, transactionView } from './views.js';

type Ops = typeof transactionOps;
type Trx = Transaction<Database>;

/** The service's current contract; an unknown service is 404 naming the field. */
async function contractFor(deps: TransactionDeps, serviceId: string, requestId: string): Promise<ContractView> {
  try {
    return await deps.contracts.current(serviceId, requestId);
  } catch (err) {
    if (isAppError(err) && err.status === 404) throw new AppError('NOT_FOUND', 'No such service.', { field: '/body/serviceId' });
    throw err;
  }
}

/** Every column of a transaction row, in the order the creation's insert lists them. */
const COLUMNS = [
  'id', 'consumerAgentId', 'providerAgentId', 'consumerAccountId', 'serviceId', 'serviceRevision', 'serviceVersion', 'category', 'pricing', 'sla',
  'status', 'statusReason', 'input', 'output', 'units', 'listPriceCents', 'maxPriceCents', 'agreedPriceCents', 'platformFeeCents', 'hold',
  'holdAttempt', 'pendingAcceptBy', 'pendingAcceptPriceCents', 'pendingAcceptMessage', 'initiatedAt', 'fundsHeldAt', 'expiresAt', 'deliveredAt',
  'settledAt', 'reviewEndsAt', 'disputeId', 'qualityScore', 'notes', 'deliveryAttempts', 'maxDeliveryAttempts', 'metadata', 'createdAt', 'updatedAt',
] as const satisfies ReadonlyArray<keyof TransactionRow>;

/**
 * The creation's insert, with the parties' locks taken in its statement (compiled once).
 * Every column is given, so the text is the same for every creation.
 */
const insertTransaction = precompiled((db: Kysely<Database>, $: Slots<Record<(typeof COLUMNS)[number], unknown> & { lockKeys: string[] }>) => db
  .insertInto('transactions')
  .values(Object.fromEntries(COLUMNS.map((c) => [c, $[c]])) as never)
  .returningAll()
  .returning([VERSION, agentLocks($.lockKeys).as('locks')]));

/**
 * POST /v1/transactions (D9.1–D9.6, D10, D11.4). Without negotiation the price is held through the
 * wallet saga: 201 `funds_held` when the wallet confirms within SAGA_WAIT_MS, 402 when it refuses
 * (the transaction is then `failed`, nothing held), else 202 `initiated` while the saga finishes.
 */
export const createTransaction = (deps: TransactionDeps): OperationHandler<Ops['createTransaction']> => async ({ body }, ctx) => {
  const caller = requireAgent(ctx);
  requireActive(caller);
  // Both reads at once, before any database transaction (no lock is held across a network call).
  const [contract, rules] = await Promise.all([contractFor(deps, body.serviceId, ctx.requestId), delegationOf(deps, caller.agentId, ctx.requestId)]);
  if (contract.agentId === caller.agentId) throw new AppError('VALIDATION_ERROR', 'An agent may not buy its own service.', { field: '/body/serviceId' });
  if (contract.status !== 'active' || contract.providerStatus !== 'active') {
    throw new AppError('SERVICE_NOT_ACTIVE', 'The service or its provider is not active.', { details: { serviceStatus: contract.status, providerStatus: contract.providerStatus } });
  }
  const checked = deps.contracts.check(contract, 'input', body.input, '/input');
  if (!checked.ok) throw AppError.many(checked.errors.slice(0, 20));
  const units = body.units ?? 1;
  const price = listPrice(contract.pricing, units, deps.config.MAX_TRANSACTION_CENTS);
  if (!price.ok) throw new AppError('VALIDATION_ERROR', price.message, { field: '/body/units' });
  // D9.4: negotiation when the service is negotiable or the consumer names another price.
  const negotiating = contract.pricing.model === 'negotiable' || (body.maxPriceCents !== undefined && body.maxPriceCents !== price.cents);
  const offered = negotiating ? body.maxPriceCents ?? price.cents : price.cents;
  if (offered > deps.config.MAX_TRANSACTION_CENTS) {
    throw new AppError('VALIDATION_ERROR', `No transaction on this exchange may exceed ${deps.config.MAX_TRANSACTION_CENTS} cents.`, { field: '/body/maxPriceCents', details: { limit: deps.config.MAX_TRANSACTION_CENTS } });
  }
  const { minimumCents, maximumCents } = contract.pricing;
  if (negotiating && ((minimumCents !== undefined && offered < minimumCents) || (maximumCents !== undefined && offered > maximumCents))) {
    throw new AppError('VALIDATION_ERROR', `The service negotiates between ${minimumCents ?? 1} and ${maximumCents ?? price.cents} cents.`, { field: '/body/maxPriceCents', details: { minimumCents, maximumCents } });
  }
  const id = randomUUID();
  const now = deps.now();
  // Listening before the commit: the wallet's answer may come before this request looks for it.
  const watch = negotiating ? undefined : deps.signals.watch(id);
  const created = await ctx.effect(deps.db, async (trx) => {
    const [{ locks: _locks, ...inserted }] = (await insertTransaction(trx, {
      lockKeys: agentLockKeys([caller.agentId, contract.agentId]),
      id,
      consumerAgentId: caller.agentId,
      providerAgentId: contract.agentId,
      consumerAccountId: caller.accountId,
      serviceId: contract.serviceId,
      serviceRevision: contract.revision,
      serviceVersion: contract.version,
      category: contract.category,
      pricing: JSON.stringify(contract.pricing) as never,
      sla: JSON.stringify(contract.sla) as never,
      status: 'initiated',
      statusReason: null,
      input: JSON.stringify(body.input) as never,
      output: null,
      units,
      listPriceCents: price.cents,
      maxPriceCents: body.maxPriceCents ?? null,
      agreedPriceCents: negotiating ? null : price.cents,
      platformFeeCents: negotiating ? null : platformFee(price.cents),
      hold: negotiating ? 'none' : 'requested',
      holdAttempt: negotiating ? 0 : 1,
      pendingAcceptBy: null,
      pendingAcceptPriceCents: null,
      pendingAcceptMessage: null,
      initiatedAt: now,
      fundsHeldAt: null,
      expiresAt: null,
      deliveredAt: null,
      settledAt: null,
      reviewEndsAt: null,
      disputeId: null,
      qualityScore: null,
      notes: null,
      deliveryAttempts: 0,
      maxDeliveryAttempts: 1 + (contract.sla.maxRetries ?? 2),
      metadata: JSON.stringify(body.metadata ?? {}) as never,
      createdAt: now,
      updatedAt: now,
    })).rows as [VersionedRow & { locks: number }];
    let t: VersionedRow = inserted;
    await announce(trx, t, null, now);
    if (negotiating) {
      // D9.4: creation records the consumer's opening offer itself (round 1, 300 s).
      const expiresAt = new Date(now.getTime() + OFFER_EXPIRY.defaultSeconds * 1000);
      await trx.insertInto('negotiationMessages').values({ id: randomUUID(), transactionId: id, fromAgentId: caller.agentId, messageType: 'initial_offer', round: 1, terms: JSON.stringify({ priceCents: offered }) as never, message: null, expiresAt, createdAt: now }).execute();
      await scheduleOfferExpiry(trx, id, 1, expiresAt);
      // Says why the purchase negotiates: a consumer naming a maxPriceCents other than the list price
      // opens a negotiation at that price instead of buying (D9.4), which surprises if unexplained.
      t = await move(trx, t, 'negotiating', { statusReason: contract.pricing.model === 'negotiable' ? 'negotiable_pricing' : 'max_price_differs_from_list_price' }, now);
    } else {
      await requestHold(trx, { ...t, holdAttempt: 0 }, price.cents, now);
    }
    // The limits last, just before the commit: the parties' locks (taken in one order, D9.6/D10.2,
    // by the insert's statement) are then held only until the commit, usually made by the next
    // statement (`checkCreationLimits`), so a provider many consumers buy from at once does not make
    // them queue behind each other's writes.
    await checkCreationLimits(trx, rules, { consumerAgentId: caller.agentId, providerAgentId: contract.agentId, category: contract.category, priceCents: offered, now, excluding: id, activeLimit: deps.config.MAX_ACTIVE_TRANSACTIONS_PER_AGENT });
    // The saga's answer finds the row as it was written (`holdPlaced`): no locking read.
    deps.known.remember(t);
    return { status: 202, data: transactionView(t) };
  }).catch((err: unknown) => {
    watch?.close();
    throw err;
  });
  deps.relay.kick();
  if (negotiating) return { ...created, status: 201 };
  const t = await awaitRow(deps.db, deps.signals, id, deps.config.SAGA_WAIT_MS, (r) => r.hold !== 'requested', watch);
  if (t.hold === 'refused') {
    return refuseAfterEffect(ctx, deps.db, new AppError('INSUFFICIENT_FUNDS', `The available balance is too low to hold ${price.cents} cents for this transaction.`, { details: { transactionId: t.id, requiredCents: price.cents } }));
  }
  return { ...created, status: t.hold === 'held' ? 201 : 202, data: transactionView(t) };
};

/** GET /v1/transactions/{id}: parties only (D9.8). */
export const getTransaction = (deps: TransactionDeps): OperationHandler<Ops['getTransaction']> => async ({ path }, ctx) => ({
  data: transactionView(await visibleTransaction(deps.db, requireAgent(ctx), path.transactionId)),
});

/** GET /v1/transactions: the caller's, as consumer or provider, newest first (D9.13). */
export const listTransactions = (deps: TransactionDeps): OperationHandler<Ops['listTransactions']> => async ({ query }, ctx) => {
  const me = requireAgent(ctx).agentId;
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  let q = deps.db.selectFrom('transactions').where((eb) =>
    query.role === 'consumer' ? eb('consumerAgentId', '=', me)
      : query.role === 'provider' ? eb('providerAgentId', '=', me)
        : eb.or([eb('consumerAgentId', '=', me), eb('providerAgentId', '=', me)]));
  if (query.status) q = q.where('status', '=', query.status);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('createdAt', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    q.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { data: rows.map(transactionView), pagination: pagination(count.n, limit, offset) };
};

/** POST /v1/transactions/{id}/start (EXT, D9.7): the provider says it is working on it. */
export const start = (deps: TransactionDeps): OperationHandler<Ops['start']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const seen = await visibleTransaction(deps.db, caller, path.transactionId);
  requireRole(seen, caller, 'provider', 'start');
  return ctx.effect(deps.db, async (trx) => {
    const t = (await lockTransaction(trx, seen.id))!;
    assertAction('start', t.status);
    return { data: transactionView(await move(trx, t, 'executing', {}, deps.now())) };
  }).finally(() => deps.relay.kick());
};

/**
 * POST /v1/transactions/{id}/deliver (signed; D9.7): output checked against the
 * contract revision the transaction was created with. Invalid output still moves the status
 * (`validation_failed`, or `failed` with the hold returned once `1 + sla.maxRetries` attempts are
 * spent) and answers 400 OUTPUT_VALIDATION_FAILED.
 */
export const deliver = (deps: TransactionDeps): OperationHandler<Ops['deliver']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  const seen = await partyTransaction(deps.db, deps.known, caller, path.transactionId);
  requireRole(seen.row, caller, 'provider', 'deliver');
  if (seen.fresh) assertAction('deliver', seen.row.status);
  const contract = await deps.contracts.revision(seen.row.serviceId, seen.row.serviceRevision, ctx.requestId);
  const checked = deps.contracts.check(contract, 'output', body.output, '/output');
  const now = deps.now();
  /** The delivery made on `t`; `guarded`: only if `t` is still the row's version (undefined if not). */
  const deliverOn = async (trx: Trx, t: KnownRow, guarded: boolean) => {
    const attempts = t.deliveryAttempts + 1;
    const to = checked.ok ? 'delivered' : attempts >= t.maxDeliveryAttempts ? 'failed' : 'validation_failed';
    // D9.7: settled by itself when the review window ends with neither verify nor dispute.
    const reviewEndsAt = new Date(now.getTime() + deps.config.REVIEW_WINDOW_SECONDS * 1000);
    const patch = checked.ok
      ? { output: JSON.stringify(body.output) as never, deliveredAt: now, deliveryAttempts: attempts, reviewEndsAt }
      : { deliveryAttempts: attempts, statusReason: 'output_validation_failed' };
    const moved = guarded ? await moveIfUnchanged(trx, t, to, patch, now) : await move(trx, t, to, patch, now);
    if (moved && checked.ok) await scheduleTimer(trx, { kind: TIMERS.reviewWindow, key: t.id, fireAt: reviewEndsAt });
    return moved;
  };
  let delivered: VersionedRow | undefined;
  const reply = await ctx.effect(deps.db, async (trx) => {
    // The row as last seen, if it is still that version and may be delivered (no locking read).
    let moved = canDeliver(seen.row.status) ? await deliverOn(trx, seen.row, true) : undefined;
    if (!moved) {
      const t = (await lockTransaction(trx, seen.row.id))!;
      assertAction('deliver', t.status);
      moved = (await deliverOn(trx, t, false))!;
    }
    delivered = moved;
    return rowReply(moved);
  });
  // Once committed: a row written at commit has its new version only now.
  deps.known.remember(delivered!);
  deps.relay.kick();
  if (checked.ok) return reply;
  const left = reply.data.maxDeliveryAttempts - reply.data.deliveryAttempts;
  const errors = checked.errors.slice(0, 20).map((e, i) => (i === 0 ? { ...e, details: { ...e.details, status: reply.data.status, attemptsLeft: left } } : e));
  return refuseAfterEffect(ctx, deps.db, AppError.many(errors));
};

const canDeliver = (status: TransactionStatus) => isAllowed('deliver', status);

/**
 * POST /v1/transactions/{id}/verify (D9.7, D9.12): the consumer accepts the output; the wallet
 * settles (price out of the hold, to the provider minus the fee). 200 `settled` when the wallet
 * confirms within SAGA_WAIT_MS, else 202 `delivered` while the settlement finishes (D9.9).
 */
export const verify = (deps: TransactionDeps): OperationHandler<Ops['verify']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  const seen = await partyTransaction(deps.db, deps.known, caller, path.transactionId);
  requireRole(seen.row, caller, 'consumer', 'verify');
  if (seen.fresh) assertAction('verify', seen.row.status);
  const now = deps.now();
  const watch = deps.signals.watch(seen.row.id);
  /** The settlement asked for on `t` (delivered, hold held); `guarded`: only if `t` is still the row's version. */
  const settleOn = async (trx: Trx, t: KnownRow, guarded: boolean) => {
    const changes = { hold: 'settling' as const, qualityScore: body.qualityScore ?? null, notes: body.notes ?? null, updatedAt: now };
    const next = guarded ? await updateKnown(trx, t, changes) : await updateRow(trx, t.id, changes);
    if (!next) return undefined;
    await requestSettlement(trx, next, now);
    await cancelTimer(trx, TIMERS.reviewWindow, t.id);
    return next;
  };
  let settling: VersionedRow | undefined;
  const asked = await ctx.effect(deps.db, async (trx) => {
    settling = undefined;
    // The row as last seen, if it is still that version (no locking read).
    const fast = seen.row.status === 'delivered' && seen.row.hold === 'held' ? await settleOn(trx, seen.row, true) : undefined;
    if (fast) {
      settling = fast;
      return rowReply(fast, 202);
    }
    const t = (await lockTransaction(trx, seen.row.id))!;
    assertAction('verify', t.status);
    if (t.hold !== 'settling') {
      if (t.hold !== 'held') throw new Error(`transaction ${t.id} delivered with hold ${t.hold}`);
      settling = (await settleOn(trx, t, false))!;
      return { status: 202, data: transactionView(settling) };
    }
    // D9.14: already settling — another verify, or the review window's end (D9.7), made the move
    // first. Exactly one request makes it; this one is refused as a move from `settled` would be.
    throw new AppError('INVALID_STATE', 'This transaction is already being settled: another verify or the end of its review window came first.', { details: { status: t.status, settlement: 'in_progress' } });
  }).catch((err: unknown) => {
    watch.close();
    throw err;
  });
  // Once committed: a row written at commit has its new version only now.
  if (settling) deps.known.remember(settling);
  deps.relay.kick();
  const t = await awaitRow(deps.db, deps.signals, seen.row.id, deps.config.SAGA_WAIT_MS, (r) => r.hold !== 'settling', watch);
  return { ...asked, status: t.status === 'settled' ? 200 : 202, data: transactionView(t) };
};

/**
 * POST /v1/transactions/{id}/cancel (D9.7): either party, before `executing`. Held funds go back to
 * the consumer; the answer waits (up to SAGA_WAIT_MS) for the wallet to confirm it.
 */
export const cancel = (deps: TransactionDeps): OperationHandler<Ops['cancel']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const seen = await visibleTransaction(deps.db, caller, path.transactionId);
  assertAction('cancel', seen.status);
  const role = seen.consumerAgentId === caller.agentId ? 'consumer' : 'provider';
  const reply = await ctx.effect(deps.db, async (trx) => {
    const t = (await lockTransaction(trx, seen.id))!;
    assertAction('cancel', t.status);
    // Cancelled while an accept waited for its hold: the price both parties agreed to is the one held
    // and returned, so the transaction says so, as its ledger entries do.
    const agreed = t.pendingAcceptBy && t.pendingAcceptPriceCents !== null ? agreedPendingAccept(t.pendingAcceptPriceCents) : {};
    return { data: transactionView(await move(trx, t, 'cancelled', { statusReason: `cancelled_by_${role}`, ...agreed }, deps.now())) };
  });
  deps.relay.kick();
  const t = await awaitRow(deps.db, deps.signals, seen.id, deps.config.SAGA_WAIT_MS, (r) => r.hold !== 'returning');
  return { ...reply, data: transactionView(t) };
};
