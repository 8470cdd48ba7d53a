import { Type, type Static } from '@sinclair/typebox';
import { FreeObject, FreeObjectOf, INT4_MAX, Metadata, Strict, Timestamp, Uuid } from '../common.js';

// Semantic Versioning 2.0.0, the regular expression semver.org publishes.
const SEMVER = '^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-((?:0|[1-9]\\d*|\\d*[a-zA-Z-][a-zA-Z0-9-]*)(?:\\.(?:0|[1-9]\\d*|\\d*[a-zA-Z-][a-zA-Z0-9-]*))*))?(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$';

/** D7.3 ceilings shared by the contract and the listing filters. */
export const SERVICE_LIMITS = {
  maxPriceCents: 1_000_000,
  maxLatencyMs: 86_400_000,
  maxTimeoutMs: 7 * 86_400_000,
  maxListItems: 20,
} as const;

export const ServiceStatus = Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('inactive')]);
export type ServiceStatus = Static<typeof ServiceStatus>;
export const PricingModel = Type.Union(['fixed', 'per_unit', 'tiered', 'negotiable'].map((m) => Type.Literal(m)));

const PriceCents = Type.Integer({ minimum: 1, maximum: SERVICE_LIMITS.maxPriceCents });
const Label = Type.String({ minLength: 1, maxLength: 100, pattern: '^\\S(.*\\S)?$', description: 'No leading or trailing spaces' });
const Tag = Type.String({ minLength: 1, maxLength: 50, pattern: '^[^,\\s](.*[^,\\s])?$', description: 'No commas, no leading or trailing spaces' });

/** Spec "Pricing model" with D7.3 bounds; the cross-field rules (minimum ≤ base ≤ maximum) are the catalog's. */
export const Pricing = Strict({
  model: PricingModel,
  currency: Type.Optional(Type.Literal('USD', { default: 'USD' })),
  basePriceCents: PriceCents,
  unit: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
  minimumCents: Type.Optional(PriceCents),
  maximumCents: Type.Optional(PriceCents),
  /**
   * EXT (D9.3): graduated unit prices of the `tiered` model — each tier prices the units up to its
   * `upToUnits` (ascending; the last one `null`, for every unit beyond).
   */
  tiers: Type.Optional(Type.Array(Strict({
    upToUnits: Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000 }), Type.Null()]),
    unitPriceCents: PriceCents,
  }), { minItems: 1, maxItems: SERVICE_LIMITS.maxListItems })),
});
export type Pricing = Static<typeof Pricing>;

/** Spec "SLA" with D7.3 bounds; `timeoutMs ≥ maxLatencyMs` is checked by the catalog. */
export const Sla = Strict({
  maxLatencyMs: Type.Integer({ minimum: 1, maximum: SERVICE_LIMITS.maxLatencyMs }),
  timeoutMs: Type.Integer({ minimum: 1, maximum: SERVICE_LIMITS.maxTimeoutMs }),
  availability: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  maxRetries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, default: 2 })),
});
export type Sla = Static<typeof Sla>;

/** D7.4 (EXT): an example must pass the service's schemas. */
export const ServiceExample = Strict({
  input: Type.Unknown(),
  output: Type.Unknown(),
  description: Type.Optional(Type.String({ maxLength: 1000 })),
});
export type ServiceExample = { input: unknown; output: unknown; description?: string };

const Tags = Type.Array(Tag, { maxItems: SERVICE_LIMITS.maxListItems, uniqueItems: true });
// EXT bounds: with both schemas (64 KiB each, D7.2) a whole contract stays under half a MiB.
const Capabilities = Type.Array(FreeObjectOf(4 * 1024, 'Capability descriptor, at most 4 KiB as JSON'), { maxItems: SERVICE_LIMITS.maxListItems, maxJsonBytes: 64 * 1024 });
const Examples = Type.Array(ServiceExample, { maxItems: SERVICE_LIMITS.maxListItems, maxJsonBytes: 256 * 1024 });
/**
 * EXT (D22.5): short phrases of needs the provider says the service answers, matched like its
 * description. The request schema bounds the count and each string; the catalog checks the rest
 * (3–200 characters once trimmed, no control or invisible characters, no repeats ignoring case).
 */
const SampleNeeds = Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 10, description: 'At most 10 phrases of 3–200 characters, e.g. "is this a palindrome"' });
// Schemas are free objects here (D1.5); their own rules (D7.2) answer INVALID_SCHEMA.
const ContractSchema = Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema 2020-12' });

export const CreateServiceBody = Strict({
  // D24.6: plain text (validation.ts `plainText`), stored trimmed; the description may hold any text.
  name: Type.String({ minLength: 1, maxLength: 200, plainText: true, description: 'Plain text, trimmed: bidirectional controls and invisible characters are refused' }),
  description: Type.String({ minLength: 10, maxLength: 5000 }),
  version: Type.String({ maxLength: 256, pattern: SEMVER, description: 'Semantic version 2.0' }),
  category: Label,
  subcategory: Type.Optional(Label),
  tags: Type.Optional(Tags),
  inputSchema: ContractSchema,
  outputSchema: ContractSchema,
  pricing: Pricing,
  sla: Sla,
  capabilities: Type.Optional(Capabilities),
  examples: Type.Optional(Examples),
  metadata: Type.Optional(Metadata),
  sampleNeeds: Type.Optional(SampleNeeds),
});
export type CreateServiceBody = Static<typeof CreateServiceBody>;

/** Spec PATCH fields, plus `examples` and `capabilities` (EXT: a schema change may need new examples) and `sampleNeeds` (EXT, D22.5). */
export const UpdateServiceBody = Strict({
  description: Type.Optional(Type.String({ minLength: 10, maxLength: 5000 })),
  version: Type.Optional(Type.String({ maxLength: 256, pattern: SEMVER })),
  tags: Type.Optional(Tags),
  inputSchema: Type.Optional(ContractSchema),
  outputSchema: Type.Optional(ContractSchema),
  pricing: Type.Optional(Pricing),
  sla: Type.Optional(Sla),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('paused')])),
  metadata: Type.Optional(Metadata),
  capabilities: Type.Optional(Capabilities),
  examples: Type.Optional(Examples),
  sampleNeeds: Type.Optional(SampleNeeds),
});
export type UpdateServiceBody = Static<typeof UpdateServiceBody>;

export const ServicePath = Strict({ serviceId: Uuid });

export const ServiceView = Type.Object({
  id: Uuid,
  agentId: Uuid,
  name: Type.String(),
  description: Type.String(),
  version: Type.String(),
  category: Type.String(),
  subcategory: Type.Union([Type.String(), Type.Null()]),
  tags: Type.Array(Type.String()),
  inputSchema: FreeObject,
  outputSchema: FreeObject,
  pricing: Pricing,
  sla: Sla,
  capabilities: Type.Array(FreeObject),
  examples: Type.Array(Type.Unknown()),
  metadata: FreeObject,
  /** EXT (D22.5). */
  sampleNeeds: Type.Array(Type.String(), { description: 'Phrases of needs the provider says the service answers, as stored (trimmed)' }),
  status: ServiceStatus,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type ServiceView = Static<typeof ServiceView>;

export const LIVENESS_STATES = ['delivering', 'unproven', 'stalled'] as const;
export type LivenessState = (typeof LIVENESS_STATES)[number];
/** EXT (D22.3): how a provider stands on delivering what it is paid for (docs/discovery.md "Liveness"). */
export const ProviderLiveness = Type.Object({
  state: Type.Union(LIVENESS_STATES.map((s) => Type.Literal(s)), { description: 'delivering; unproven (nothing recent counts, not penalised); stalled (recent purchases undelivered)' }),
  score: Type.Number({ minimum: 0, maximum: 1, description: 'What ranking is scaled by: 1 with nothing against the provider' }),
  recentDelivered: Type.Integer({ minimum: 0, description: 'Recent purchases delivered' }),
  recentUndelivered: Type.Integer({ minimum: 0, description: 'Recent purchases expired, failed, cancelled past the SLA, or in progress past it' }),
}, { description: 'EXT (D22.3): whether the provider delivers, from its last 20 purchases of the last 24 hours that count' });
export type ProviderLiveness = Static<typeof ProviderLiveness>;

/** D7.5 list item: the Service without schemas and examples, plus the provider's trust, name and liveness (D22.3). */
export const ServiceListItem = Type.Composite([
  Type.Omit(ServiceView, ['inputSchema', 'outputSchema', 'examples']),
  Type.Object({ trustScore: Type.Integer(), providerName: Type.String(), liveness: ProviderLiveness }),
]);
export type ServiceListItem = Static<typeof ServiceListItem>;

export const ServiceSort = Type.Union(['composite_rank', 'price_asc', 'price_desc', 'trust_score', 'created_at'].map((s) => Type.Literal(s)));
export type ServiceSort = 'composite_rank' | 'price_asc' | 'price_desc' | 'trust_score' | 'created_at';

export const ListServicesQuery = Strict({
  category: Type.Optional(Label),
  tags: Type.Optional(Type.String({ minLength: 1, maxLength: 1100, description: 'Comma-separated; a service must have all of them' })),
  maxPriceCents: Type.Optional(Type.Integer({ minimum: 0, maximum: INT4_MAX })),
  minTrustScore: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
  maxLatencyMs: Type.Optional(Type.Integer({ minimum: 0, maximum: INT4_MAX })),
  sortBy: Type.Optional(ServiceSort),
  agentId: Type.Optional(Uuid),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
});
export type ListServicesQuery = Static<typeof ListServicesQuery>;

export const Urgency = Type.Union([Type.Literal('low'), Type.Literal('normal'), Type.Literal('high')]);
export type Urgency = 'low' | 'normal' | 'high';

/** Spec "POST /v1/services/discover": every field optional (D8.1). */
export const DiscoverBody = Strict({
  need: Type.Optional(Type.String({ maxLength: 2000 })),
  inputAvailable: Type.Optional(FreeObjectOf(64 * 1024)),
  outputRequired: Type.Optional(FreeObjectOf(64 * 1024)),
  category: Type.Optional(Label),
  maxBudgetCents: Type.Optional(Type.Integer({ minimum: 0, maximum: INT4_MAX })),
  minTrustScore: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
  urgency: Type.Optional(Urgency),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })),
});
export type DiscoverBody = Static<typeof DiscoverBody>;

export const DiscoveryMatch = Type.Object({
  serviceId: Uuid,
  agentId: Uuid,
  agentName: Type.String(),
  serviceName: Type.String(),
  compatibilityScore: Type.Number({ minimum: 0, maximum: 1 }),
  trustScore: Type.Integer(),
  priceCents: Type.Integer(),
  estimatedLatencyMs: Type.Integer(),
  inputSchema: FreeObject,
  outputSchema: FreeObject,
  sla: Sla,
  /** EXT (D22.3): whether the provider delivers; a stalled one ranks lower. */
  liveness: ProviderLiveness,
  /** EXT (D22.4). */
  lowConfidence: Type.Optional(Type.Literal(true, { description: 'Present when the service relates only weakly to the need: shown because nothing closer was found, not because it is known to answer it' })),
});
export type DiscoveryMatch = Static<typeof DiscoveryMatch>;

/** Filters of a discover, as `NO_MATCH` names what each removed (D22.4). */
export const DiscoverFilter = Type.Union(['category', 'maxBudgetCents', 'minTrustScore', 'inputAvailable', 'outputRequired'].map((f) => Type.Literal(f)));
export type DiscoverFilter = 'category' | 'maxBudgetCents' | 'minTrustScore' | 'inputAvailable' | 'outputRequired';

/** EXT: one warning of a discover; `details` carries what a program acts on, by code. */
export const DiscoverWarning = Type.Object({
  code: Type.Union(['SEMANTIC_RANKING_OFF', 'SEMANTIC_RANKING_UNAVAILABLE', 'NO_CONFIDENT_MATCH', 'SPELLING_SUGGESTION', 'NO_MATCH'].map((c) => Type.Literal(c))),
  message: Type.String(),
  details: Type.Optional(Type.Object({
    suggestedNeed: Type.Optional(Type.String({ description: 'SPELLING_SUGGESTION: the need with the words that look misspelled replaced ("did you mean …")' })),
    corrections: Type.Optional(Type.Array(Type.Object({ word: Type.String(), suggestion: Type.String() }), { description: 'SPELLING_SUGGESTION: each word that looks misspelled and the catalog\'s word it was read as' })),
    activeServices: Type.Optional(Type.Integer({ minimum: 0, description: 'NO_MATCH: active services of active providers on the exchange' })),
    candidates: Type.Optional(Type.Integer({ minimum: 0, description: 'NO_MATCH: services related to the need before the filters (without a need, every active one)' })),
    removedBy: Type.Optional(Type.Array(Type.Object({
      filter: DiscoverFilter,
      services: Type.Integer({ minimum: 1 }),
      cheapestCents: Type.Optional(Type.Integer({ description: 'maxBudgetCents: the lowest price among the services it removed' })),
      highestTrustScore: Type.Optional(Type.Integer({ description: 'minTrustScore: the highest trust score among the services it removed' })),
      categories: Type.Optional(Type.Array(Type.String(), { description: 'category: the categories of the services it removed, most services first (at most 5)' })),
    }), { description: 'NO_MATCH: what each filter removed, in the order they apply (a service is counted by the first filter that removes it)' })),
  })),
});
export type DiscoverWarning = Static<typeof DiscoverWarning>;

export const DiscoverView = Type.Object({
  matches: Type.Array(DiscoveryMatch),
  totalMatches: Type.Integer({ minimum: 0 }),
  queryId: Uuid,
  /**
   * EXT: true when fewer matches than `limit` are returned because, with their schemas, more would
   * exceed what one answer carries (about 1 MiB); a narrower need or category, or a lower limit, helps.
   */
  truncated: Type.Boolean(),
  /**
   * EXT: what made this ranking less than the exchange's best, empty when nothing did — meaning left
   * out because it is turned off (`SEMANTIC_RANKING_OFF`) or because the sentence encoder is not
   * working (`SEMANTIC_RANKING_UNAVAILABLE`): services are then matched by their words alone.
   * D22.4 adds why an answer is empty or weak: `NO_CONFIDENT_MATCH` (the matches relate only weakly
   * to the need), `SPELLING_SUGGESTION` (a word of the need looks misspelled) and `NO_MATCH` (nothing
   * matches, and what removed the candidates).
   */
  warnings: Type.Array(DiscoverWarning),
});
export type DiscoverView = Static<typeof DiscoverView>;

/** Internal: one revision of a contract, as the transaction service keeps it (D7.6). */
export const ContractPath = Strict({ serviceId: Uuid });
export const ContractQuery = Strict({ revision: Type.Optional(Type.Integer({ minimum: 1, maximum: INT4_MAX })) });
export const ContractView = Type.Object({
  serviceId: Uuid,
  agentId: Uuid,
  /** The provider's account: its owner agent sees the sales and acts in their disputes. */
  providerAccountId: Uuid,
  /** D23.1: the service's name and its provider's, kept on each purchase so that people read names, not ids. */
  name: Type.String(),
  providerName: Type.String(),
  revision: Type.Integer({ minimum: 1 }),
  version: Type.String(),
  category: Type.String(),
  status: ServiceStatus,
  providerStatus: Type.String(),
  inputSchema: FreeObject,
  outputSchema: FreeObject,
  pricing: Pricing,
  sla: Sla,
});
export type ContractView = Static<typeof ContractView>;

/** Internal: an agent as a provider, with its active services' full contracts (its A2A agent card). */
export const ProviderPath = Strict({ agentId: Uuid });
export const ProviderServicesView = Type.Object({
  provider: Type.Union([Type.Object({ agentId: Uuid, name: Type.String(), status: Type.String(), trustScore: Type.Integer() }), Type.Null()]),
  services: Type.Array(ServiceView),
});
export type ProviderServicesView = Static<typeof ProviderServicesView>;
