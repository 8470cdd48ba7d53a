import { Type, type Static } from '@sinclair/typebox';

export const ProtocolView = Type.Object({
  name: Type.Literal('agent-exchange'),
  version: Type.String(),
  features: Type.Array(Type.String()),
  limits: Type.Object({
    maxTransactionCents: Type.Integer(),
    maxNegotiationRounds: Type.Integer(),
    maxServicesPerAgent: Type.Integer(),
    maxAgentsPerAccount: Type.Integer(),
    maxActiveTransactionsPerAgent: Type.Integer(),
    idempotencyKeyTtlHours: Type.Integer(),
  }),
  platformFees: Type.Object({
    tiers: Type.Array(
      Type.Union([
        Type.Object({ upToCents: Type.Integer(), feePercent: Type.Number() }),
        Type.Object({ aboveCents: Type.Integer(), feePercent: Type.Number() }),
      ]),
    ),
  }),
});
export type ProtocolView = Static<typeof ProtocolView>;

/** D15.1 feature list. */
export const FEATURES = [
  'transactions', 'negotiations', 'fund_holds', 'schema_validation', 'webhooks', 'trust_scoring',
  'disputes', 'discovery', 'child_agents', 'did_web', 'idempotency', 'request_signatures',
] as const;

/** D11.3 / spec "Limits": the most messages one negotiation may have; the 10th, unless an accept, ends it. */
export const NEGOTIATION_MAX_MESSAGES = 10;

/**
 * D9.11 platform fee tiers, marginal: as GET /v1/protocol publishes them and as the fee is computed
 * (services/transactions domain/pricing.ts derives its integer rates from these).
 */
export const PLATFORM_FEE_TIERS: readonly ({ upToCents: number; feePercent: number } | { aboveCents: number; feePercent: number })[] = [
  { upToCents: 1_000_000, feePercent: 5 },
  { upToCents: 10_000_000, feePercent: 3 },
  { aboveCents: 10_000_000, feePercent: 1.5 },
];
