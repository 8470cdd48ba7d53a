import type { Kysely } from 'kysely';
import type { DelegationRules } from '@aex/contracts';
import type { AggregateRunner, Bus, ExchangeConfig, LocalCache, Logger, Transactor } from '@aex/platform';
import type { Database } from './db/schema.js';
import type { DisputeTypes } from './disputes/aggregate.js';
import type { PurchaseTypes } from './purchases/aggregate.js';
import type { SessionTypes } from './sessions/aggregate.js';
import type { PinnedContracts } from './purchases/pinned-contracts.js';
import type { ReceiptIssuer } from './purchases/repository.js';
import type { ReceiptKeyRing } from './receipts/key-ring.js';

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
  /** The service's transactions: each commits with its outbox rows, which its relay then publishes. */
  tx: Transactor<Database>;
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
  contracts: PinnedContracts;
  /**
   * The delegation rules in force of the agents this replica checked (D10.1), by agent:
   * used only while identity keeps them true (docs/gateway-caches.md), else read from identity.
   */
  delegations: LocalCache<KeptDelegation>;
  /** The purchases' steps (`purchases/aggregate.ts`), with what this replica remembers of them. */
  purchases: AggregateRunner<PurchaseTypes>;
  /** The disputes' steps (`disputes/aggregate.ts`). */
  disputes: AggregateRunner<DisputeTypes>;
  /** D17.4–D17.7: prepaid sessions' steps (`sessions/aggregate.ts`). */
  sessions: AggregateRunner<SessionTypes>;
  /** D18: the exchange's receipt keys, and what signs a receipt with them. */
  keyRing: ReceiptKeyRing;
  receipts: ReceiptIssuer;
  now: () => Date;
}
