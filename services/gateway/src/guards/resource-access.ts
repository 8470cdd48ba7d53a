import { AppError, catalogOps, identityOps, transactionOps, type Operation, type Principal } from '@aex/contracts';
import { callOperation, type Bus, type ExchangeConfig } from '@aex/platform';
import { UUID } from '../http/input-hygiene.js';
import type { RouteSpec } from '../http/routes.js';

/** The read that says whether a caller may see the resource a path parameter names. */
const READS: Record<string, Operation> = {
  accountId: identityOps.getAccount,
  agentId: identityOps.getAgent,
  serviceId: catalogOps.getService,
  transactionId: transactionOps.getTransaction,
  sessionId: transactionOps.getSession,
  disputeId: transactionOps.getDispute,
};

/** Routes whose resource another account may see (a public agent profile, D2.3; a service, D7.5) but not change. */
const VISIBLE = new Set(['/v1/agents/:agentId', '/v1/agents/:agentId/spawn', '/v1/agents/:agentId/trust', '/v1/services/:serviceId']);

/**
 * D24.5: authorization is decided before the body is validated, so the answer never depends on the
 * body. The owning services decide who may act on a resource, after the gateway has validated the
 * request; so when a request's body is invalid, the gateway first reads, as the caller, the resource
 * its path names (the first parameter: `/v1/agents/{agentId}/webhook/…` is the agent's) and throws
 * what the route would have answered with any body: 404 when the caller may not see it (another
 * account's wallet, purchase, session, webhook…, or nothing there), 403 when it may see it but not
 * change it (another account's agent profile, another provider's service). It returns when the
 * caller may act on it: the body's 400 is then the answer.
 *
 * Only invalid requests pay the read; a valid request is authorized by its service as before.
 */
export async function refuseUnseenResource(spec: RouteSpec, params: Record<string, unknown>, principal: Principal, requestId: string, bus: Bus, config: ExchangeConfig): Promise<void> {
  const name = /:([A-Za-z]+)/.exec(spec.url)?.[1];
  const read = name === undefined ? undefined : READS[name];
  const id = name === undefined ? undefined : params[name];
  if (!read || typeof id !== 'string' || !UUID.test(id)) return;
  const reply = await callOperation(bus, read, { ctx: { requestId, principal, admin: false }, input: { path: { [name!]: id }, query: {}, body: {} } }, { timeoutMs: config.RPC_TIMEOUT_MS });
  if (!reply.ok) {
    if (reply.status === 404) throw AppError.many(reply.errors);
    return; // anything else (the service unavailable…) is not an answer about access: the 400 stands
  }
  const visible = VISIBLE.has(spec.url);
  if (name === 'agentId') {
    const ofCallersAccount = (reply.data as { accountId?: string }).accountId === principal.accountId;
    if (ofCallersAccount || (visible && spec.method === 'GET')) return;
    throw visible ? new AppError('FORBIDDEN', `You may not ${spec.method === 'POST' ? 'spawn from' : spec.method === 'DELETE' ? 'deactivate' : 'change'} this agent.`) : new AppError('NOT_FOUND', 'No such agent.');
  }
  if (name === 'serviceId' && spec.method !== 'GET' && (reply.data as { agentId: string }).agentId !== principal.agentId) {
    throw new AppError('FORBIDDEN', `Only the provider may ${spec.method === 'DELETE' ? 'delete' : 'change'} this service.`);
  }
}
