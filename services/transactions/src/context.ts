import type { Kysely } from 'kysely';
import type { Bus, ExchangeConfig, Logger, OutboxRelay } from '@aex/platform';
import type { Database } from './db/schema.js';
import type { KnownTransactions } from './known-transactions.js';
import type { PinnedContracts } from './pinned-contracts.js';
import type { SagaSignals } from './saga-signals.js';

export interface TransactionDeps {
  db: Kysely<Database>;
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
  relay: OutboxRelay;
  contracts: PinnedContracts;
  signals: SagaSignals;
  /** The latest versions of transactions this replica wrote or read (issue 14). */
  known: KnownTransactions;
  now: () => Date;
}
