import type { ColumnType, Generated } from 'kysely';
import type { PlatformTables } from '@aex/platform';
import type { Pricing, ServiceExample, ServiceStatus, Sla } from '@aex/contracts';

type Json<T> = ColumnType<T, string, string>;

export interface ProviderRow {
  agentId: string;
  accountId: string;
  name: string;
  status: string;
  trustScore: number;
  sourceAt: Date;
  trustAt: Date;
  writtenXid: Generated<string>;
}

export interface ServiceRow {
  id: string;
  agentId: string;
  name: string;
  description: string;
  version: string;
  category: string;
  subcategory: string | null;
  tags: string[];
  inputSchema: Json<Record<string, unknown>>;
  outputSchema: Json<Record<string, unknown>>;
  pricing: Json<Pricing>;
  sla: Json<Sla>;
  capabilities: Json<Record<string, unknown>[]>;
  examples: Json<ServiceExample[]>;
  metadata: Json<Record<string, unknown>>;
  /** D22.5: trimmed, at most 10. */
  sampleNeeds: string[];
  status: ServiceStatus;
  revision: number;
  priceCents: number;
  budgetFloorCents: number;
  maxLatencyMs: number;
  textA: string;
  textB: string;
  textC: string;
  textD: string;
  searchDoc: ColumnType<string, never, never>;
  textE: string;
  expansionDoc: ColumnType<string, never, never>;
  embedding: Buffer | null;
  embeddingModel: string | null;
  createdAt: Date;
  updatedAt: Date;
  writtenXid: Generated<string>;
}

export interface ContractRevisionRow {
  serviceId: string;
  revision: number;
  version: string;
  inputSchema: Json<Record<string, unknown>>;
  outputSchema: Json<Record<string, unknown>>;
  pricing: Json<Pricing>;
  sla: Json<Sla>;
  createdAt: Date;
}

export interface DiscoveryQueryRow {
  id: string;
  agentId: string;
  request: Json<Record<string, unknown>>;
  totalMatches: number;
  results: Json<{ serviceId: string; compatibilityScore: number }[]>;
  scorer: string;
  createdAt: Date;
}

export interface Database extends PlatformTables {
  providers: ProviderRow;
  services: ServiceRow;
  contractRevisions: ContractRevisionRow;
  vocabulary: { word: string };
  discoveryQueries: DiscoveryQueryRow;
}
