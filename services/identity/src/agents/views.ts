import type { FullAgentView, PublicAgentView } from '@aex/contracts';
import type { AgentRow } from '../db/schema.js';
import { didWebFor } from '../domain/did.js';

export interface AgentRecord extends AgentRow {
  trustScore: number;
  keyPrefix: string | null;
}

/** D2.3 public profile. */
export function publicAgentView(a: AgentRecord, publicBaseUrl: string): PublicAgentView {
  return {
    id: a.id,
    name: a.name,
    agentType: a.agentType,
    status: a.status,
    description: a.description,
    capabilities: a.capabilities,
    didWeb: didWebFor(publicBaseUrl, a.id),
    signingKeyPublic: a.signingKeyPublic,
    trustScore: a.trustScore,
    createdAt: a.createdAt.toISOString(),
  };
}

/** D2.3 full representation. */
export function fullAgentView(a: AgentRecord, publicBaseUrl: string): FullAgentView {
  return {
    ...publicAgentView(a, publicBaseUrl),
    accountId: a.accountId,
    webhookUrl: a.webhookUrl,
    delegation: a.delegation,
    metadata: a.metadata,
    parentAgentId: a.parentAgentId,
    expiresAt: a.expiresAt?.toISOString() ?? null,
    keyPrefix: a.keyPrefix ?? '',
    updatedAt: a.updatedAt.toISOString(),
  };
}
