import { randomUUID } from 'node:crypto';
import { AppError, type transactionOps } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import { isSessionParty } from '../domain/session.js';
import { delegationOf } from '../purchases/delegations.js';
import { contractFor } from '../purchases/handlers.js';
import { sessionExpiresAt, sessionsOf, sessionsPage, sessionView } from './aggregate.js';

type Ops = typeof transactionOps;

/**
 * POST /v1/sessions (signed; D17.4): the contract and the buyer's rules read first, then the session
 * opened and its budget held. 201 `open` once the wallet holds it within SAGA_WAIT_MS, 402 when it
 * refuses, 202 while it is on its way or the owner's approval is awaited.
 */
export const openSession = (deps: TransactionDeps): OperationHandler<Ops['openSession']> => async ({ body }, ctx) => {
  const caller = requireAgent(ctx);
  const [contract, delegation] = await Promise.all([contractFor(deps, body.serviceId, ctx.requestId), delegationOf(deps, caller.agentId, ctx.requestId)]);
  const id = randomUUID();
  return deps.sessions.request(ctx, id, {
    kind: 'open',
    caller,
    order: { id, contract, delegation: { rules: delegation.rules, ownerAgentId: delegation.ownerAgentId }, budgetCents: body.budgetCents, expiresAt: sessionExpiresAt(deps.now(), body.expiresInSeconds), autoVerify: body.autoVerify ?? true, queryId: body.queryId },
  });
};

/** GET /v1/sessions/{id}: parties only; to anyone else it does not exist. */
export const getSession = (deps: TransactionDeps): OperationHandler<Ops['getSession']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const s = await deps.sessions.read(path.sessionId);
  if (!s || !isSessionParty(s, caller.agentId)) throw new AppError('NOT_FOUND', 'No such session.');
  return { data: sessionView(s) };
};

/** GET /v1/sessions: the caller's, as consumer or provider, newest first. */
export const listSessions = (deps: TransactionDeps): OperationHandler<Ops['listSessions']> => async ({ query }, ctx) => {
  const caller = requireAgent(ctx);
  let q = sessionsOf(deps.db, caller.agentId, query.role);
  if (query.status) q = q.where('status', '=', query.status);
  return sessionsPage(q, query);
};

/** POST /v1/sessions/{id}/close (either party; D17.6): no new calls; the rest returns once every call has ended. */
export const closeSession = (deps: TransactionDeps): OperationHandler<Ops['closeSession']> => async ({ path }, ctx) =>
  deps.sessions.request(ctx, path.sessionId, { kind: 'close', caller: requireAgent(ctx) });

/** D10.3 for a session's budget: the consumer's account owner agent approves it (then it is held) or denies it. */
export const approveSession = (deps: TransactionDeps): OperationHandler<Ops['approveSession']> => async ({ path }, ctx) =>
  deps.sessions.request(ctx, path.sessionId, { kind: 'approve', caller: requireAgent(ctx) });

export const denySession = (deps: TransactionDeps): OperationHandler<Ops['denySession']> => async ({ path, body }, ctx) =>
  deps.sessions.request(ctx, path.sessionId, { kind: 'deny', caller: requireAgent(ctx), reason: body.reason ?? null });
