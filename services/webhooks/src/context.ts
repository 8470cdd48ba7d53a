import type { Kysely } from 'kysely';
import type { Bus, ExchangeConfig, Logger, Transactor } from '@aex/platform';
import type { Database } from './db/schema.js';
import type { WebhookSender } from './deliveries/sender.js';

export interface WebhookDeps {
  db: Kysely<Database>;
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
  /** The service\'s transactions: each commits with its outbox rows, which its relay then publishes. */
  tx: Transactor<Database>;
  sender: WebhookSender;
  /** D14.4 delays before each attempt, from `WEBHOOK_RETRY_DELAYS_MS`. */
  delays: number[];
  /** Wakes the dispatcher: a delivery is due now. */
  kick: () => void;
  now: () => Date;
}
