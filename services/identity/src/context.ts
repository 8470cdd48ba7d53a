import type { Kysely } from 'kysely';
import type { Bus, ExchangeConfig, KvStore, Logger, ReplicaCaches, SagaSignals, Transactor } from '@aex/platform';
import type { Database } from './db/schema.js';
import type { WebhookUrlPolicy } from './domain/webhook-url.js';

/** What every identity handler works with; the clock comes in so rules stay testable. */
export interface IdentityDeps {
  db: Kysely<Database>;
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
  /** The service's transactions: each commits with its outbox rows, which its relay then publishes. */
  tx: Transactor<Database>;
  /**
   * Where a request waiting on an agent's wallet saga (sign-up, a new agent, a spawn's budget, D9.9
   * applied to them) hears of its steps, by agent id: the way every request waits for a saga.
   */
  sagas: SagaSignals<never>;
  authCache: KvStore;
  /** The gateways' and transactions replicas' own memory of principals, agents and rules, told of every change (docs/gateway-caches.md). */
  replicas: ReplicaCaches;
  /** D14.5 registration check of webhook URLs. */
  webhookPolicy: WebhookUrlPolicy;
  now: () => Date;
}

