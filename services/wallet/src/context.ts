import type { Kysely } from 'kysely';
import type { Bus, ExchangeConfig, GroupCommit, Logger, OutboxRelay } from '@aex/platform';
import type { Database } from './db/schema.js';
import type { PaymentProcessor } from './payments/processor.js';
import type { Funding } from './wallets/fundings.js';

export interface WalletDeps {
  db: Kysely<Database>;
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
  relay: OutboxRelay;
  payments: PaymentProcessor | null;
  /** Confirmed fundings without an Idempotency-Key, written by group commit (wallets/fundings.ts). */
  fundings: GroupCommit<Funding, number>;
  now: () => Date;
}
