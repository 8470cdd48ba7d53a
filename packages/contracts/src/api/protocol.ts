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

/** D9.11 platform fee tiers as published by GET /v1/protocol. */
export const PLATFORM_FEE_TIERS = [
  { upToCents: 1_000_000, feePercent: 5 },
  { upToCents: 10_000_000, feePercent: 3 },
  { aboveCents: 10_000_000, feePercent: 1.5 },
];
