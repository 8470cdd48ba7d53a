import type { Pricing, ServiceExample, ServiceListItem, ServiceStatus, ServiceView, Sla } from '@aex/contracts';
import { livenessView, type StoredLiveness } from '../liveness/provider-liveness.js';

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
  sampleNeeds: string[];
  status: ServiceStatus;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

type Listed = Omit<ServiceListItem, 'createdAt' | 'updatedAt' | 'trustScore' | 'providerName' | 'liveness'> & { createdAt: Date; updatedAt: Date };

/** The fields a list item shares with the full contract. */
function listedFields(s: Listed): Omit<ServiceListItem, 'trustScore' | 'providerName' | 'liveness'> {
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
    sampleNeeds: s.sampleNeeds,
    status: s.status,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}

/** The full contract (GET /v1/services/{id}, create, update, delete). */
export function serviceView(s: StoredService): ServiceView {
  return { ...listedFields(s), inputSchema: s.inputSchema, outputSchema: s.outputSchema, examples: s.examples };
}

/** D7.5 list item: no schemas or examples; the provider's trust score, name and liveness (D22.3). */
export function listItemView(s: Listed & { trustScore: number; providerName: string } & StoredLiveness): ServiceListItem {
  return { ...listedFields(s), trustScore: s.trustScore, providerName: s.providerName, liveness: livenessView(s) };
}
