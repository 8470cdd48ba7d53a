import type { Principal } from '@aex/contracts';

export interface AgentRef {
  id: string;
  accountId: string;
}

/** D2.3: full representation for agents of the caller's own account. */
export const seesFullAgent = (caller: Principal, agent: AgentRef) => caller.accountId === agent.accountId;

/** D2.2: PATCH profile — the agent itself or the account's owner agent. */
export const mayEditAgent = (caller: Principal, agent: AgentRef) =>
  caller.accountId === agent.accountId && (caller.agentId === agent.id || caller.isOwner);

/** D2.2: rotate a key — the agent itself, or the owner agent for another agent of the account. */
export const mayRotateKey = mayEditAgent;

/** D2.2: deactivate or set delegation of an agent — only the owner agent; nobody changes their own delegation unless owner. */
export const mayGovernAgent = (caller: Principal, agent: AgentRef) => caller.accountId === agent.accountId && caller.isOwner;

/** D2.2: PATCH account, PUT account delegation, create agents — the owner agent only. */
export const mayGovernAccount = (caller: Principal, accountId: string) => caller.accountId === accountId && caller.isOwner;
