import type { Kysely } from 'kysely';
import type { Bus, ExchangeConfig, Logger, OutboxRelay } from '@aex/platform';
import type { Database } from './db/schema.js';
import type { PaymentProcessor } from './payments/processor.js';

export interface WalletDeps {
  db: Kysely<Database>;
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
  relay: OutboxRelay;
  payments: PaymentProcessor | null;
  now: () => Date;
}
