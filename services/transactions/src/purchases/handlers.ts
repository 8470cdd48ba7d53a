import { randomUUID } from 'node:crypto';
import { AppError, isAppError, OFFER_EXPIRY, type ContractView, type transactionOps } from '@aex/contracts';
import type { Kysely } from 'kysely';
import { precompiled, requireActive, requireAgent, type OperationHandler, type Slots } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import type { Database, TransactionRow } from '../db/schema.js';
import { listPrice } from '../domain/pricing.js';
import { openPurchase } from '../domain/purchase.js';
import { assertAction } from '../domain/state-machine.js';
import type { VersionedRow } from './known-transactions.js';
import { agentLockKeys, agentLocks, approverOf, checkCreationLimits, delegationOf } from './limits.js';
import { applyEffects, awaitRow, transactionsPage, partyTransaction, purchaseStep, refuseAfterEffect, requireRole, VERSION, visibleTransaction } from './repository.js';
import { rowReply, transactionView } from './views.js';

type Ops = typeof transactionOps;

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
  'id', 'consumerAgentId', 'providerAgentId', 'consumerAccountId', 'providerAccountId', 'serviceId', 'serviceRevision', 'serviceVersion', 'category', 'pricing', 'sla',
  'status', 'statusReason', 'input', 'output', 'units', 'listPriceCents', 'maxPriceCents', 'agreedPriceCents', 'platformFeeCents', 'hold',
  'holdAttempt', 'pendingAcceptBy', 'pendingAcceptPriceCents', 'pendingAcceptMessage', 'initiatedAt', 'fundsHeldAt', 'expiresAt', 'deliveredAt',
  'settledAt', 'reviewEndsAt', 'disputeId', 'approval', 'qualityScore', 'notes', 'deliveryAttempts', 'maxDeliveryAttempts', 'metadata', 'createdAt', 'updatedAt',
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
  const [contract, delegation] = await Promise.all([contractFor(deps, body.serviceId, ctx.requestId), delegationOf(deps, caller.agentId, ctx.requestId)]);
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
  const opened = openPurchase({
    id,
    consumerAgentId: caller.agentId,
    providerAgentId: contract.agentId,
    consumerAccountId: caller.accountId,
    providerAccountId: contract.providerAccountId,
    serviceId: contract.serviceId,
    serviceRevision: contract.revision,
    serviceVersion: contract.version,
    category: contract.category,
    pricing: contract.pricing,
    sla: contract.sla,
    units,
    listPriceCents: price.cents,
    maxPriceCents: body.maxPriceCents ?? null,
    offer: negotiating ? { priceCents: offered, expiresAt: new Date(now.getTime() + OFFER_EXPIRY.defaultSeconds * 1000) } : null,
    approver: approverOf(deps, delegation),
  }, now);
  // Listening before the commit: the wallet's answer may come before this request looks for it.
  const holding = opened.state.hold === 'requested';
  const watch = holding ? deps.signals.watch(id) : undefined;
  const created = await ctx.effect(deps.tx, async (trx, work) => {
    const [{ locks: _locks, ...inserted }] = (await insertTransaction(trx, {
      ...opened.state,
      pricing: JSON.stringify(contract.pricing) as never,
      sla: JSON.stringify(contract.sla) as never,
      approval: (opened.state.approval ? JSON.stringify(opened.state.approval) : null) as never,
      input: JSON.stringify(body.input) as never,
      output: null,
      metadata: JSON.stringify(body.metadata ?? {}) as never,
      lockKeys: agentLockKeys([caller.agentId, contract.agentId]),
    })).rows as [VersionedRow & { locks: number }];
    const t: VersionedRow = inserted;
    await applyEffects(trx, work, t, opened.effects, now);
    // The limits last, just before the commit: the parties' locks (taken in one order, D9.6/D10.2,
    // by the insert's statement) are then held only until the commit, usually made by the next
    // statement (`checkCreationLimits`), so a provider many consumers buy from at once does not make
    // them queue behind each other's writes.
    await checkCreationLimits(trx, work, delegation.rules, { consumerAgentId: caller.agentId, providerAgentId: contract.agentId, category: contract.category, priceCents: offered, now, excluding: id, activeLimit: deps.config.MAX_ACTIVE_TRANSACTIONS_PER_AGENT });
    // The saga's answer finds the row as it was written (`holdPlaced`): no locking read.
    deps.known.remember(t);
    return { status: 202, data: transactionView(t, caller.accountId) };
  }).catch((err: unknown) => {
    watch?.close();
    throw err;
  });
  // D10.3: a purchase awaiting its owner's approval answers 202, with no hold placed yet.
  if (!holding) return { ...created, status: negotiating ? 201 : 202 };
  const t = await awaitRow(deps.db, deps.signals, id, deps.config.SAGA_WAIT_MS, (r) => r.hold !== 'requested', watch);
  if (t.hold === 'refused') {
    return refuseAfterEffect(ctx, deps.db, new AppError('INSUFFICIENT_FUNDS', `The available balance is too low to hold ${price.cents} cents for this transaction.`, { details: { transactionId: t.id, requiredCents: price.cents } }));
  }
  return { ...created, status: t.hold === 'held' ? 201 : 202, data: transactionView(t, caller.accountId) };
};

/** GET /v1/transactions/{id}: parties only (D9.8). */
export const getTransaction = (deps: TransactionDeps): OperationHandler<Ops['getTransaction']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  return { data: transactionView(await visibleTransaction(deps.db, caller, path.transactionId), caller.accountId) };
};

/** GET /v1/transactions: the caller's, as consumer or provider, newest first (D9.13). */
export const listTransactions = (deps: TransactionDeps): OperationHandler<Ops['listTransactions']> => async ({ query }, ctx) => {
  const caller = requireAgent(ctx);
  const me = caller.agentId;
  let q = deps.db.selectFrom('transactions').where((eb) =>
    query.role === 'consumer' ? eb('consumerAgentId', '=', me)
      : query.role === 'provider' ? eb('providerAgentId', '=', me)
        : eb.or([eb('consumerAgentId', '=', me), eb('providerAgentId', '=', me)]));
  if (query.status) q = q.where('status', '=', query.status);
  return transactionsPage(q, query, caller.accountId);
};

/** POST /v1/transactions/{id}/start (EXT, D9.7): the provider says it is working on it. */
export const start = (deps: TransactionDeps): OperationHandler<Ops['start']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const seen = await visibleTransaction(deps.db, caller, path.transactionId);
  requireRole(seen, caller, 'provider', 'start');
  return ctx.effect(deps.tx, async (trx, work) => ({ data: transactionView((await purchaseStep(deps, trx, work, seen.id, { kind: 'start' }))!.state, caller.accountId) }));
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
  const command = { kind: 'deliver', valid: checked.ok, output: body.output, reviewWindowMs: deps.config.REVIEW_WINDOW_SECONDS * 1000 } as const;
  let delivered: VersionedRow | undefined;
  const reply = await ctx.effect(deps.tx, async (trx, work) => {
    delivered = (await purchaseStep(deps, trx, work, seen.row.id, command, { remembered: seen.row }))!.state;
    return rowReply(delivered, caller.accountId);
  });
  // Once committed: a row written at commit has its new version only now.
  deps.known.remember(delivered!);
  if (checked.ok) return reply;
  const left = reply.data.maxDeliveryAttempts - reply.data.deliveryAttempts;
  const errors = checked.errors.slice(0, 20).map((e, i) => (i === 0 ? { ...e, details: { ...e.details, status: reply.data.status, attemptsLeft: left } } : e));
  return refuseAfterEffect(ctx, deps.db, AppError.many(errors));
};

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
  const watch = deps.signals.watch(seen.row.id);
  let settling: VersionedRow | undefined;
  const asked = await ctx.effect(deps.tx, async (trx, work) => {
    // D9.14: of concurrent verifies (or a verify and the review window's end) exactly one asks for the settlement.
    settling = (await purchaseStep(deps, trx, work, seen.row.id, { kind: 'verify', qualityScore: body.qualityScore ?? null, notes: body.notes ?? null }, { remembered: seen.row }))!.state;
    return rowReply(settling, caller.accountId, 202);
  }).catch((err: unknown) => {
    watch.close();
    throw err;
  });
  // Once committed: a row written at commit has its new version only now.
  if (settling) deps.known.remember(settling);
  const t = await awaitRow(deps.db, deps.signals, seen.row.id, deps.config.SAGA_WAIT_MS, (r) => r.hold !== 'settling', watch);
  return { ...asked, status: t.status === 'settled' ? 200 : 202, data: transactionView(t, caller.accountId) };
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
  const reply = await ctx.effect(deps.tx, async (trx, work) => ({ data: transactionView((await purchaseStep(deps, trx, work, seen.id, { kind: 'cancel', by: role }))!.state, caller.accountId) }));
  const t = await awaitRow(deps.db, deps.signals, seen.id, deps.config.SAGA_WAIT_MS, (r) => r.hold !== 'returning');
  return { ...reply, data: transactionView(t, caller.accountId) };
};
