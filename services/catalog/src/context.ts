import type { Kysely } from 'kysely';
import type { ValidatorCache } from '@aex/schemas';
import type { Bus, ExchangeConfig, Logger, Transactor, ReplicaCaches } from '@aex/platform';
import type { Database } from './db/schema.js';
import type { Thesaurus } from './discovery/thesaurus.js';
import type { Meaning } from './discovery/meaning.js';

/** What every catalog handler works with; the clock comes in so rules stay testable. */
export interface CatalogDeps {
  db: Kysely<Database>;
  bus: Bus;
  config: ExchangeConfig;
  logger: Logger;
  /** The service\'s transactions: each commits with its outbox rows, which its relay then publishes. */
  tx: Transactor<Database>;
  /**
   * Tells the replicas that keep a service's current contract in memory (the transactions replicas,
   * to forget it, and waits for each, before a change is answered (docs/gateway-caches.md).
   */
  replicas: ReplicaCaches;
  /** Compiled validators by service id and contract revision (D7.2). */
  validators: ValidatorCache;
  /** WordNet, shared by indexing (expansions) and discovery (query analysis). */
  thesaurus: Thesaurus;
  /**
   * Sentence embeddings of services and needs (D8.2, D22.1): `meaning.encoder` of the model the
   * catalog serves (null when turned off or not available), the next model's while the catalog moves
   * to it, and the status readiness and discovery's warnings report.
   */
  meaning: Meaning;
  now: () => Date;
}
