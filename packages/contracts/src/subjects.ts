/**
 * NATS subject layout (docs/messaging.md). Every subject starts with a namespace (`aex` in a
 * deployment) so that tests sharing one NATS server never see each other's traffic.
 */
export type ServiceName = 'identity' | 'catalog' | 'transactions' | 'wallet' | 'webhooks' | 'gateway';

export const subjects = {
  rpc: (ns: string, service: ServiceName, operation: string) => `${ns}.rpc.${service}.${operation}`,
  rpcAll: (ns: string, service: ServiceName) => `${ns}.rpc.${service}.>`,
  event: (ns: string, type: string) => `${ns}.evt.${type}`,
  events: (ns: string) => `${ns}.evt.>`,
  command: (ns: string, type: string) => `${ns}.cmd.${type}`,
  commands: (ns: string) => `${ns}.cmd.>`,
  /** At-most-once notices between the replicas of one service (`Bus.notify`), e.g. a saga step done. */
  notice: (ns: string, service: ServiceName, topic: string, key: string) => `${ns}.notice.${service}.${topic}.${key}`,
  notices: (ns: string, service: ServiceName, topic: string) => `${ns}.notice.${service}.${topic}.*`,
};

/** Stream and bucket names derived from the namespace (upper-case, NATS-safe). */
export const names = {
  eventsStream: (ns: string) => `${ns.toUpperCase().replace(/[^A-Z0-9_-]/g, '_')}_EVENTS`,
  commandsStream: (ns: string) => `${ns.toUpperCase().replace(/[^A-Z0-9_-]/g, '_')}_COMMANDS`,
  bucket: (ns: string, purpose: string) => `${ns.replace(/[^A-Za-z0-9_-]/g, '_')}_${purpose}`,
};

/**
 * D5.6: which request first used each Idempotency-Key of a scope, shared by the gateways: a key
 * reused for another request is refused whichever service owns its route.
 */
export const IDEMPOTENCY_KEYS = {
  bucket: (ns: string) => names.bucket(ns, 'idempotency_keys'),
} as const;

/**
 * The gateway's API-key cache (D2.5): a KV bucket of key hash → principal JSON, filled by gateways
 * from identity, marked `stale` by identity whenever a key is revoked or its agent changes.
 */
export const AUTH_CACHE = {
  bucket: (ns: string) => names.bucket(ns, 'auth_keys'),
  ttlMs: 60_000,
  staleMarker: 'stale',
} as const;

/**
 * What every gateway replica keeps in its own memory — principals and agent views, answered without
 * a round trip (D2.5; docs/gateway-caches.md). A replica is listed in the `registry` KV
 * bucket while it lives and renews its entry every `heartbeatMs`; it uses its memory only within
 * `leaseMs` of a renewal the registry accepted. Identity tells every listed replica what changed on
 * `forgetSubject` and waits for each one's acknowledgement before it answers the change; a replica
 * that does not acknowledge within `ackTimeoutMs` is fenced (its entry deleted, so its next renewal
 * fails and it empties its memory) and identity waits out its lease. A replica that stops cleanly
 * marks its entry `left` after it has emptied its memory for good: identity neither fences it nor
 * waits for it (the entry expires with the registry's TTL).
 */
export const GATEWAY_CACHES = {
  registry: (ns: string) => names.bucket(ns, 'gateways'),
  forgetSubject: (ns: string, replicaId: string) => `${ns}.gateway.${replicaId}.forget`,
  heartbeatMs: 1_000,
  leaseMs: 3_000,
  /** An entry nobody renews (a replica that died) leaves the registry after this. */
  registryTtlMs: 30_000,
  /**
   * As long as a lease: a replica that is only slow (a loaded machine can stall an event loop for a
   * second) is waited for rather than fenced; one that is gone fails at once (NATS: no responders).
   */
  ackTimeoutMs: 3_000,
} as const;

/**
 * A replica's entry in the registry of replicas that keep other services' data in memory: gateways
 * (principals, profiles) and transactions replicas (rules in force, D10.1;
 * services' current contracts, D7.6).
 */
export interface GatewayRegistryEntry {
  replicaId: string;
  /** What kind of replica it is ('gateway', 'transactions'): for the reader; the owners tell them all alike. */
  role?: string;
  /** Set by the replica as it stops, once its memory is emptied and will not be used again. */
  left?: true;
}

/**
 * What identity (or the catalog) tells the replicas in the registry to forget: principals by API-key hash, cached
 * answers by agent, and (`accountIds`, when an account's default delegation changed) whatever was
 * cached for any agent of the account.
 */
export interface CacheInvalidation {
  keyHashes: string[];
  agentIds: string[];
  accountIds?: string[];
  /** Services whose current contract changed (the catalog tells this). */
  serviceIds?: string[];
}
