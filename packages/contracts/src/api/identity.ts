import { Type, type Static } from '@sinclair/typebox';
import { Empty, FreeObject, Metadata, NullableTimestamp, Strict, Timestamp, Uuid } from '../common.js';
import { WalletView } from './wallet.js';

export const AccountType = Type.Union([Type.Literal('individual'), Type.Literal('organization')]);
export const AgentType = Type.Union([Type.Literal('persistent'), Type.Literal('ephemeral'), Type.Literal('platform_managed')]);
export const AgentStatus = Type.Union([Type.Literal('active'), Type.Literal('deactivated'), Type.Literal('expired')]);
export type AgentStatus = Static<typeof AgentStatus>;

const CentsLimit = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const CategoryList = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 100, uniqueItems: true });

/** Spec "Delegation rules": every field optional. */
export const DelegationRules = Strict({
  maxTransactionCents: Type.Optional(CentsLimit),
  maxDailySpendCents: Type.Optional(CentsLimit),
  allowedCategories: Type.Optional(CategoryList),
  blockedCategories: Type.Optional(CategoryList),
  requireHumanApprovalAboveCents: Type.Optional(CentsLimit),
  autoApproveBelow: Type.Optional(CentsLimit),
});
export type DelegationRules = Static<typeof DelegationRules>;

/** The names of the delegation rules, in the order a change lists them. */
export const DELEGATION_RULES = ['maxTransactionCents', 'maxDailySpendCents', 'allowedCategories', 'blockedCategories', 'requireHumanApprovalAboveCents', 'autoApproveBelow'] as const;
export type DelegationRuleName = (typeof DELEGATION_RULES)[number];

/** A rule's new value or `null` (remove it), as one JSON Schema type: a bad value gets one error. */
const CentsLimitOrNull = Type.Unsafe<number | null>({ type: ['integer', 'null'], minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const CategoryListOrNull = Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string', minLength: 1, maxLength: 100 }, maxItems: 100, uniqueItems: true });

/**
 * D23.3: a partial change of delegation rules (PATCH). Each field given is set, `null` removes that
 * rule, the fields not given stay as they are; at least one field is named.
 */
export const DelegationPatch = Strict({
  maxTransactionCents: Type.Optional(CentsLimitOrNull),
  maxDailySpendCents: Type.Optional(CentsLimitOrNull),
  allowedCategories: Type.Optional(CategoryListOrNull),
  blockedCategories: Type.Optional(CategoryListOrNull),
  requireHumanApprovalAboveCents: Type.Optional(CentsLimitOrNull),
  autoApproveBelow: Type.Optional(CentsLimitOrNull),
}, { minProperties: 1 });
export type DelegationPatch = Static<typeof DelegationPatch>;

const RuleValue = Type.Union([CentsLimit, CategoryList, Type.Null()]);
/** One rule a PATCH changed: its value before and after (`null`: not set). */
export const DelegationChange = Type.Object({
  field: Type.Union(DELEGATION_RULES.map((name) => Type.Literal(name))),
  from: RuleValue,
  to: RuleValue,
});
export type DelegationChange = Static<typeof DelegationChange>;

/** D23.3: the rules after a PATCH, and the rules whose value it changed (none when it changed nothing). */
export const DelegationPatchView = Type.Object({
  rules: DelegationRules,
  changes: Type.Array(DelegationChange),
});
export type DelegationPatchView = Static<typeof DelegationPatchView>;

/**
 * D10.1, D6.8: an agent's own rules and the rules in force for it — what the exchange checks its
 * purchases against. `base` says what its own rules start from: the account's defaults, or (a child
 * spawned inheriting them) its parent's rules in force, which its own only tighten.
 */
export const DelegationInForceView = Type.Object({
  agentId: Uuid,
  own: DelegationRules,
  inForce: DelegationRules,
  base: Type.Union([Type.Literal('account'), Type.Literal('parent')]),
});
export type DelegationInForceView = Static<typeof DelegationInForceView>;

// D6.2: trimmed, exactly one "@", at most 320 characters.
export const Email = Type.String({ maxLength: 320, pattern: '^\\s*[^@\\s]+@[^@\\s]+\\s*$', description: 'Email address' });
// D24.6: plain text (validation.ts `plainText`), stored trimmed.
export const DisplayName = Type.String({ minLength: 1, maxLength: 200, plainText: true, description: 'Plain text, trimmed: bidirectional controls and invisible characters are refused' });
export const AgentName = Type.String({ minLength: 1, maxLength: 200, plainText: true, description: 'Plain text, trimmed: bidirectional controls and invisible characters are refused' });
export const Description = Type.String({ maxLength: 2000 });
export const Capabilities = Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 50 });
/** Base64 of a raw 32-byte Ed25519 public key (D3.2). */
export const SigningKeyPublic = Type.String({ pattern: '^[A-Za-z0-9+/]{43}=$', description: 'Ed25519 public key, base64 of the raw 32 bytes' });
/**
 * EXT proof of possession of a new signing key: base64 Ed25519 signature, by that key, of the text
 * `agent-exchange signing-key proof v1:{accountId}:{signingKeyPublic}`. Optional; verified whenever
 * given (D3.5), so a client can show it holds the key it registers (the client's `signingKeyProof` makes it).
 */
export const SigningKeyProof = Type.String({ pattern: '^[A-Za-z0-9+/_-]{86}(==)?$', description: 'Optional proof that the caller holds the new key: its Ed25519 signature (base64) of "agent-exchange signing-key proof v1:{accountId}:{signingKeyPublic}"; verified when present (docs/signing.md)' });
export const WebhookUrl = Type.String({ minLength: 1, maxLength: 2048, format: 'uri', description: 'http(s) URL that receives webhooks' });

export const InitialAgentInput = Strict({
  name: AgentName,
  description: Type.Optional(Description),
  agentType: Type.Optional(AgentType),
  capabilities: Type.Optional(Capabilities),
  webhookUrl: Type.Optional(WebhookUrl),
  metadata: Type.Optional(Metadata),
});

export const CreateAccountBody = Strict({
  accountType: AccountType,
  email: Email,
  displayName: DisplayName,
  metadata: Type.Optional(Metadata),
  agent: InitialAgentInput,
});
export type CreateAccountBody = Static<typeof CreateAccountBody>;

export const UpdateAccountBody = Strict({
  displayName: Type.Optional(DisplayName),
  email: Type.Optional(Email),
  metadata: Type.Optional(Metadata),
});
export type UpdateAccountBody = Static<typeof UpdateAccountBody>;

export const CreateAgentBody = Strict({
  name: AgentName,
  agentType: AgentType,
  description: Type.Optional(Description),
  capabilities: Type.Optional(Capabilities),
  signingKeyPublic: Type.Optional(SigningKeyPublic),
  signingKeyProof: Type.Optional(SigningKeyProof),
  webhookUrl: Type.Optional(WebhookUrl),
  delegation: Type.Optional(DelegationRules),
  metadata: Type.Optional(Metadata),
});
export type CreateAgentBody = Static<typeof CreateAgentBody>;

/** D6.8: a child's lifetime in hours and its budget's lower bound (spec "Limits"). */
export const CHILD_LIFETIME_HOURS = { default: 24, max: 168 } as const;
export const SPAWN_BUDGET_MIN_CENTS = 100;

/** POST /v1/agents/{id}/spawn (spec, D6.8). */
export const SpawnAgentBody = Strict({
  name: AgentName,
  description: Type.Optional(Description),
  inheritDelegation: Type.Optional(Type.Boolean()),
  delegation: Type.Optional(DelegationRules),
  maxLifetimeHours: Type.Optional(Type.Integer({ minimum: 1, maximum: CHILD_LIFETIME_HOURS.max })),
  budgetCents: Type.Optional(Type.Integer({ minimum: SPAWN_BUDGET_MIN_CENTS, maximum: 1_000_000_000 })),
});
export type SpawnAgentBody = Static<typeof SpawnAgentBody>;

export const UpdateAgentBody = Strict({
  name: Type.Optional(AgentName),
  description: Type.Optional(Description),
  capabilities: Type.Optional(Capabilities),
  signingKeyPublic: Type.Optional(Type.Union([SigningKeyPublic, Type.Null()])),
  signingKeyProof: Type.Optional(SigningKeyProof),
  webhookUrl: Type.Optional(Type.Union([WebhookUrl, Type.Null()])),
  metadata: Type.Optional(Metadata),
});
export type UpdateAgentBody = Static<typeof UpdateAgentBody>;

export const AccountPath = Strict({ accountId: Uuid });
export const AgentPath = Strict({ agentId: Uuid });

/** D6.3 account representation. */
export const AccountView = Type.Object({
  id: Uuid,
  accountType: AccountType,
  displayName: Type.String(),
  verificationStatus: Type.String(),
  defaultDelegation: DelegationRules,
  metadata: FreeObject,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type AccountView = Static<typeof AccountView>;

/** D2.3 public profile of an agent. */
export const PublicAgentView = Type.Object({
  id: Uuid,
  name: Type.String(),
  agentType: AgentType,
  status: AgentStatus,
  description: Type.String(),
  capabilities: Type.Array(Type.String()),
  didWeb: Type.String(),
  signingKeyPublic: Type.Union([Type.String(), Type.Null()]),
  trustScore: Type.Integer({ minimum: 0, maximum: 100 }),
  createdAt: Timestamp,
});
export type PublicAgentView = Static<typeof PublicAgentView>;

/**
 * EXT (D15.2): how an agent's trust score was reached — the outcomes of the transactions it provided
 * that it counts, any caller may read it (the score itself is on the public profile).
 */
export const TrustView = Type.Object({
  agentId: Uuid,
  trustScore: Type.Integer({ minimum: 0, maximum: 100 }),
  prior: Type.Object({ value: Type.Number(), weight: Type.Number() }),
  counts: Type.Object({
    settled: Type.Integer(),
    failed: Type.Integer(),
    expired: Type.Integer(),
    disputesLost: Type.Integer(),
    /** Of all of the above, delivered later than `sla.maxLatencyMs`: counted with half the weight. */
    late: Type.Integer(),
  }),
  /** Mean `qualityScore` of the settled transactions a consumer scored; null when none was. */
  averageQualityScore: Type.Union([Type.Number(), Type.Null()]),
  /** When the score last changed; null while it is the starting 50. */
  lastChangedAt: Type.Union([Timestamp, Type.Null()]),
});
export type TrustView = Static<typeof TrustView>;

/** D15.3 (EXT): one entry of the operator's audit log, newest first. */
export const OperatorActionView = Type.Object({
  id: Uuid,
  action: Type.String(),
  service: Type.String(),
  target: Type.Union([Type.Object({ type: Type.String(), id: Type.Union([Type.String(), Type.Null()]) }), Type.Null()]),
  requestId: Type.String(),
  details: Type.Record(Type.String(), Type.Unknown()),
  at: Timestamp,
});
export type OperatorActionView = Static<typeof OperatorActionView>;

/** D2.3 full representation (agents of the caller's own account). */
export const FullAgentView = Type.Composite([
  PublicAgentView,
  Type.Object({
    accountId: Uuid,
    webhookUrl: Type.Union([Type.String(), Type.Null()]),
    delegation: DelegationRules,
    metadata: FreeObject,
    parentAgentId: Type.Union([Uuid, Type.Null()]),
    expiresAt: NullableTimestamp,
    keyPrefix: Type.String(),
    updatedAt: Timestamp,
  }),
]);
export type FullAgentView = Static<typeof FullAgentView>;

export const AgentView = Type.Union([FullAgentView, PublicAgentView]);
export const NewAgentView = Type.Composite([FullAgentView, Type.Object({ apiKey: Type.String() })]);
export type NewAgentView = Static<typeof NewAgentView>;
/**
 * D6.8 spawn answer: the child's full representation with its key, and its wallet holding the
 * budget (null in a 202 answer, while the budget is still being moved).
 */
export const SpawnedAgentView = Type.Composite([NewAgentView, Type.Object({ wallet: Type.Union([WalletView, Type.Null()]) })]);
export type SpawnedAgentView = Static<typeof SpawnedAgentView>;

/** D6.1: the spec's fields plus the initial agent. */
export const NewAccountView = Type.Object({
  id: Uuid,
  accountType: AccountType,
  displayName: Type.String(),
  verificationStatus: Type.String(),
  createdAt: Timestamp,
  apiKey: Type.String(),
  agent: FullAgentView,
});
export type NewAccountView = Static<typeof NewAccountView>;

export const RotatedKeyView = Type.Object({
  apiKey: Type.String(),
  keyPrefix: Type.String(),
  expiresAt: Type.Null(),
});
export type RotatedKeyView = Static<typeof RotatedKeyView>;

/** D6.7 DID document. */
export const DidDocument = Type.Object({
  '@context': Type.Array(Type.String()),
  id: Type.String(),
  controller: Type.String(),
  verificationMethod: Type.Array(
    Type.Object({
      id: Type.String(),
      type: Type.Literal('Multikey'),
      controller: Type.String(),
      publicKeyMultibase: Type.String(),
      revoked: Type.Optional(Timestamp),
    }),
  ),
  authentication: Type.Array(Type.String()),
  assertionMethod: Type.Array(Type.String()),
  service: Type.Array(Type.Object({ id: Type.String(), type: Type.String(), serviceEndpoint: Type.String() })),
});
export type DidDocument = Static<typeof DidDocument>;

export { Empty };
