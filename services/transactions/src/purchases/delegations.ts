import { identityOps } from '@aex/contracts';
import { accountTag, agentTag, callOrThrow, type ExchangeConfig } from '@aex/platform';
import type { KeptDelegation, TransactionDeps } from '../context.js';

/**
 * D10.1: the consumer's rules in force at every check. Identity owns them; this replica keeps what it
 * read in memory (the read was a ninth of a purchase's work) only while identity keeps that
 * memory true — it tells every replica in the registry of a change to an agent's rules (tag: the
 * agent, which also drops its children's, D6.8) or to an account's defaults (tag: the account) and
 * waits for each before it answers the change (docs/gateway-caches.md). A read that raced a change
 * is not kept.
 */
export async function delegationOf(deps: Pick<TransactionDeps, 'delegations' | 'bus' | 'config'>, agentId: string, requestId: string): Promise<KeptDelegation> {
  return deps.delegations.through(
    agentId,
    () => callOrThrow(deps.bus, identityOps.effectiveDelegation, { ctx: { requestId, principal: null }, input: { path: { agentId }, query: {}, body: {} } }, rpcTimeout(deps.config)),
    (f) => [agentTag(agentId), accountTag(f.accountId), ...(f.parentAgentId ? [agentTag(f.parentAgentId)] : [])],
  );
}

/** Calls this service makes while answering one of its own stay well inside the caller's bound. */
export const rpcTimeout = (config: Pick<ExchangeConfig, 'RPC_TIMEOUT_MS'>) => Math.max(100, Math.floor(config.RPC_TIMEOUT_MS / 2));
