import type { ColumnType, Generated } from 'kysely';
import type { PlatformTables } from '@aex/platform';
import type { LivenessState, Pricing, ServiceExample, ServiceStatus, Sla } from '@aex/contracts';

type Json<T> = ColumnType<T, string, string>;

export interface ProviderRow {
  agentId: string;
  accountId: string;
  name: string;
  status: string;
  trustScore: number;
  sourceAt: Date;
  trustAt: Date;
  /** D22.3: whether its recent purchases were delivered (domain/liveness.ts), kept by liveness/. */
  liveness: Generated<number>;
  livenessState: Generated<LivenessState>;
  recentDelivered: Generated<number>;
  recentUndelivered: Generated<number>;
  writtenXid: Generated<string>;
}

/** D22.3: a purchase a provider was paid to deliver, as the transactions service's events tell it. */
export interface ProviderPurchaseRow {
  transactionId: string;
  providerAgentId: string;
  serviceId: string;
  heldAt: Date | null;
  dueAt: Date | null;
  deliveredAt: Date | null;
  endedAt: Date | null;
  endedAs: 'failed' | 'expired' | 'cancelled' | null;
  countedAt: ColumnType<Date | null, never, never>;
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
  /** No longer read (D22.1: service_embeddings); kept for catalogs of the previous version during an upgrade. */
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

/** D22.1: a service's sentence embedding by one model (float32 bytes of a unit vector). */
export interface ServiceEmbeddingRow {
  serviceId: string;
  model: string;
  embedding: Buffer;
  createdAt: Generated<Date>;
}

/** D22.1 (one row): the model whose embeddings discovery compares, and the one the catalog is re-embedding for. */
export interface EmbeddingModelsRow {
  id: Generated<boolean>;
  serving: string | null;
  servingEndpoint: string | null;
  next: string | null;
  nextEndpoint: string | null;
  leaseOwner: string | null;
  leaseUntil: Date | null;
  changedAt: Generated<Date>;
}

/** D22.2: a purchase that came from a discover and ended, as discovery learns from it. */
export interface LearningEvidenceRow {
  transactionId: string;
  serviceId: string;
  consumerAgentId: string;
  buyerAccountId: string;
  queryId: string;
  need: string;
  outcome: string;
  qualityScore: number | null;
  endedAt: Date;
  /** Why the purchase teaches nothing (`judgePurchase`), or null when it is evidence. */
  ignoredReason: string | null;
  needEmbedding: Buffer | null;
  embeddingModel: string | null;
  writtenXid: Generated<string>;
}

export interface Database extends PlatformTables {
  providers: ProviderRow;
  services: ServiceRow;
  contractRevisions: ContractRevisionRow;
  vocabulary: { word: string };
  discoveryQueries: DiscoveryQueryRow;
  providerPurchases: ProviderPurchaseRow;
  serviceEmbeddings: ServiceEmbeddingRow;
  embeddingModels: EmbeddingModelsRow;
  learningEvidence: LearningEvidenceRow;
}
