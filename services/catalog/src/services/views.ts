import type { Pricing, ServiceExample, ServiceListItem, ServiceStatus, ServiceView, Sla } from '@aex/contracts';

/** A service as the handlers work with it: the stored columns, JSON decoded. */
export interface StoredService {
  id: string;
  agentId: string;
  name: string;
  description: string;
  version: string;
  category: string;
  subcategory: string | null;
  tags: string[];
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
  pricing: Pricing;
  sla: Sla;
  capabilities: Record<string, unknown>[];
  examples: ServiceExample[];
  metadata: Record<string, unknown>;
  status: ServiceStatus;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

/** The full contract (GET /v1/services/{id}, create, update, delete). */
export function serviceView(s: StoredService): ServiceView {
  return {
    id: s.id,
    agentId: s.agentId,
    name: s.name,
    description: s.description,
    version: s.version,
    category: s.category,
    subcategory: s.subcategory,
    tags: s.tags,
    inputSchema: s.inputSchema,
    outputSchema: s.outputSchema,
    pricing: s.pricing,
    sla: s.sla,
    capabilities: s.capabilities,
    examples: s.examples,
    metadata: s.metadata,
    status: s.status,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}

/** D7.5 list item: no schemas or examples; the provider's trust score and name. */
export function listItemView(s: Omit<ServiceListItem, 'createdAt' | 'updatedAt'> & { createdAt: Date; updatedAt: Date }): ServiceListItem {
  return {
    id: s.id,
    agentId: s.agentId,
    name: s.name,
    description: s.description,
    version: s.version,
    category: s.category,
    subcategory: s.subcategory,
    tags: s.tags,
    pricing: s.pricing,
    sla: s.sla,
    capabilities: s.capabilities,
    metadata: s.metadata,
    status: s.status,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
    trustScore: s.trustScore,
    providerName: s.providerName,
  };
}
