import { FEATURES, NEGOTIATION_MAX_MESSAGES, PLATFORM_FEE_TIERS, type ProtocolView } from '@aex/contracts';
import type { ExchangeConfig } from '@aex/platform';

/** D15.1: GET /v1/protocol, limits from configuration (D4.5). */
export function protocolView(cfg: ExchangeConfig): ProtocolView {
  return {
    name: 'agent-exchange',
    version: cfg.EXCHANGE_VERSION,
    features: [...FEATURES],
    limits: {
      maxTransactionCents: cfg.MAX_TRANSACTION_CENTS,
      maxNegotiationRounds: NEGOTIATION_MAX_MESSAGES,
      maxServicesPerAgent: cfg.MAX_SERVICES_PER_AGENT,
      maxAgentsPerAccount: cfg.MAX_AGENTS_PER_ACCOUNT,
      maxActiveTransactionsPerAgent: cfg.MAX_ACTIVE_TRANSACTIONS_PER_AGENT,
      idempotencyKeyTtlHours: cfg.IDEMPOTENCY_TTL_HOURS,
    },
    platformFees: { tiers: [...PLATFORM_FEE_TIERS] },
  };
}
