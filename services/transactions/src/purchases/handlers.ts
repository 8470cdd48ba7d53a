import { randomUUID } from 'node:crypto';
import { AppError, isAppError, type ContractView, type Static, type transactionOps } from '@aex/contracts';
import { requireAgent, type HandlerContext, type OperationHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import { jsonDigest } from '../domain/digest.js';
import { isParty } from '../domain/purchase-access.js';
import type { Order } from '../domain/purchase.js';
import { isSessionParty } from '../domain/session.js';
import { delegationOf } from './delegations.js';
import { namedLike } from './names.js';
import { readTransaction, transactionsPage, type VersionedRow } from './repository.js';
import { transactionView } from './views.js';

type Ops = typeof transactionOps;
type CreateBody = Static<Ops['createTransaction']['input']>['body'];

/** The service's current contract; an unknown service is 404 naming the field. */
export async function contractFor(deps: TransactionDeps, serviceId: string, requestId: string): Promise<ContractView> {
  try {
    return await deps.contracts.current(serviceId, requestId);
  } catch (err) {
    if (isAppError(err) && err.status === 404) throw new AppError('NOT_FOUND', 'No such service.', { field: '/body/serviceId' });
    throw err;
  }
}

/**
 * POST /v1/transactions (D9.1–D9.6, D10, D11.4): the contract and the buyer's rules in force read
 * first (no lock is held across a call to another service), the input checked against the contract,
 * then a new purchase opened. 201 `funds_held` when the wallet holds the price within SAGA_WAIT_MS,
 * 402 when it refuses, 202 while the saga finishes or an approval is awaited (D9.9, D10.3).
 */
export const createTransaction = (deps: TransactionDeps): OperationHandler<Ops['createTransaction']> => async ({ body }, ctx) => {
  const caller = requireAgent(ctx);
  if (body.sessionId) return sessionCall(deps, body, ctx);
  if (!body.serviceId) throw new AppError('VALIDATION_ERROR', 'serviceId is required (or sessionId, for a call in a prepaid session).', { field: '/body/serviceId' });
  const [contract, delegation] = await Promise.all([contractFor(deps, body.serviceId, ctx.requestId), delegationOf(deps, caller.agentId, ctx.requestId)]);
  return open(deps, ctx, body, contract, { rules: delegation.rules, ownerAgentId: delegation.ownerAgentId });
};

/** A new purchase of `contract` as the body asks for it, its input checked against the contract first. */
function open(deps: TransactionDeps, ctx: HandlerContext, body: CreateBody, contract: ContractView, delegation: Order['delegation'], session?: Order['session']) {
  const checked = deps.contracts.check(contract, 'input', body.input, '/input');
  const id = randomUUID();
  return deps.purchases.request(ctx, id, {
    kind: 'open',
    caller: requireAgent(ctx),
    order: {
      id, contract, delegation, inputErrors: checked.ok ? [] : checked.errors, input: body.input, inputDigest: jsonDigest(body.input),
      units: body.units, maxUnits: body.maxUnits, maxPriceCents: body.maxPriceCents, metadata: body.metadata ?? {}, ...(session && { session }),
      queryId: body.queryId ?? session?.queryId ?? undefined,
    },
  });
}

/**
 * POST /v1/transactions with `sessionId` (D17.5): a call in the caller's open session, bought under
 * the contract revision the session was opened with; its price reserved from the budget in the step
 * that makes it — `funds_held` at once, with no saga. The session must be the caller's (anyone
 * else's does not exist for it) and of the service named, when one is.
 */
async function sessionCall(deps: TransactionDeps, body: CreateBody, ctx: HandlerContext) {
  const caller = requireAgent(ctx);
  const session = await deps.sessions.read(body.sessionId!);
  if (!session || !isSessionParty(session, caller.agentId)) throw new AppError('NOT_FOUND', 'No such session.', { field: '/body/sessionId' });
  if (session.consumerAgentId !== caller.agentId) throw new AppError('FORBIDDEN', 'Only the session\'s consumer makes calls in it.', { field: '/body/sessionId' });
  if (body.serviceId && body.serviceId !== session.serviceId) {
    throw new AppError('VALIDATION_ERROR', 'serviceId must be the session\'s service (or left out).', { field: '/body/serviceId', details: { sessionServiceId: session.serviceId } });
  }
  const contract = await deps.contracts.revision(session.serviceId, session.serviceRevision, ctx.requestId);
  return open(deps, ctx, body, contract, { rules: {}, ownerAgentId: caller.agentId }, { id: session.id, autoVerify: session.autoVerify, queryId: session.queryId });
}

/** D9.8: a transaction is visible to its two parties only; to anyone else it does not exist (404). */
export async function visibleTransaction(deps: TransactionDeps, agentId: string, id: string): Promise<VersionedRow> {
  const t = await readTransaction(deps.db, id);
  if (!t || !isParty(t, agentId)) throw new AppError('NOT_FOUND', 'No such transaction.');
  return t;
}

/** GET /v1/transactions/{id}: parties only (D9.8). */
export const getTransaction = (deps: TransactionDeps): OperationHandler<Ops['getTransaction']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  return { data: transactionView(await visibleTransaction(deps, caller.agentId, path.transactionId), caller.accountId) };
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
  if (query.q !== undefined) q = q.where(namedLike(query.q));
  return transactionsPage(q, query, caller.accountId);
};

/** POST /v1/transactions/{id}/start (EXT, D9.7): the provider says it is working on it. */
export const start = (deps: TransactionDeps): OperationHandler<Ops['start']> => async ({ path }, ctx) =>
  deps.purchases.request(ctx, path.transactionId, { kind: 'start', caller: requireAgent(ctx) });

/**
 * POST /v1/transactions/{id}/deliver (signed; D9.7): output checked against the contract revision
 * the transaction was created with. Invalid output still moves the status (`validation_failed`, or
 * `failed` with the hold returned once `1 + sla.maxRetries` attempts are spent) and answers 400
 * OUTPUT_VALIDATION_FAILED.
 */
export const deliver = (deps: TransactionDeps): OperationHandler<Ops['deliver']> => async ({ path, body }, ctx) =>
  deps.purchases.request(ctx, path.transactionId, { kind: 'deliver', caller: requireAgent(ctx), output: body.output, usage: body.usage });

/**
 * POST /v1/transactions/{id}/verify (D9.7, D9.12): the consumer accepts the output; the wallet
 * settles. 200 `settled` when the wallet confirms within SAGA_WAIT_MS, else 202 `delivered` (D9.9).
 */
export const verify = (deps: TransactionDeps): OperationHandler<Ops['verify']> => async ({ path, body }, ctx) =>
  deps.purchases.request(ctx, path.transactionId, { kind: 'verify', caller: requireAgent(ctx), qualityScore: body.qualityScore ?? null, notes: body.notes ?? null });

/**
 * POST /v1/transactions/{id}/cancel (D9.7): either party, before `executing`. Held funds go back to
 * the consumer; the answer waits (up to SAGA_WAIT_MS) for the wallet to confirm it, and shows
 * `cancelled` once it has (202 with the status as it still is otherwise).
 */
export const cancel = (deps: TransactionDeps): OperationHandler<Ops['cancel']> => async ({ path }, ctx) =>
  deps.purchases.request(ctx, path.transactionId, { kind: 'cancel', caller: requireAgent(ctx) });
