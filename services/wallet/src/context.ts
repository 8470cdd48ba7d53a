import type { Kysely } from 'kysely';
import type { Bus, ExchangeConfig, GroupCommit, Logger, Transactor, RecentMap } from '@aex/platform';
import type { Database } from './db/schema.js';
import type { PaymentProcessor } from './payments/processor.js';
import type { Funding } from './wallets/fundings.js';
import type { WalletAccess } from './wallets/handlers.js';

export interface WalletDeps {
  db: Kysely<Database>;
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
  /** The service\'s transactions: each commits with its outbox rows, which its relay then publishes. */
  tx: Transactor<Database>;
  payments: PaymentProcessor | null;
  /** Confirmed fundings without an Idempotency-Key, written by group commit (wallets/fundings.ts). */
  fundings: GroupCommit<Funding, number | null>;
  /** Who may fund each wallet this replica has funded, by agent (never changes: handlers.ts). */
  access: RecentMap<string, WalletAccess>;
  now: () => Date;
}
