import type { Kysely } from 'kysely';
import type { DelegationRules } from '@aex/contracts';
import type { Bus, ExchangeConfig, LocalCache, Logger, Transactor } from '@aex/platform';
import type { Database } from './db/schema.js';
import type { KnownTransactions } from './purchases/known-transactions.js';
import type { PinnedContracts } from './purchases/pinned-contracts.js';
import type { SagaSignals } from './purchases/saga-signals.js';

/**
 * An agent's rules in force with what they depend on (its account's defaults, its parent's rules),
 * and its account's owner agent, who approves what the rules do not (D10.3).
 */
export interface KeptDelegation {
  accountId: string;
  ownerAgentId: string;
  parentAgentId: string | null;
  rules: DelegationRules;
}

export interface TransactionDeps {
  db: Kysely<Database>;
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
  /** The service\'s transactions: each commits with its outbox rows, which its relay then publishes. */
  tx: Transactor<Database>;
  contracts: PinnedContracts;
  signals: SagaSignals;
  /** The latest versions of transactions this replica wrote or read. */
  known: KnownTransactions;
  /**
   * The delegation rules in force of the agents this replica checked (D10.1), by agent:
   * used only while identity keeps them true (docs/gateway-caches.md), else read from identity.
   */
  delegations: LocalCache<KeptDelegation>;
  now: () => Date;
}
