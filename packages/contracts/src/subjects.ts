/**
 * NATS subject layout (ARCHITECTURE "Messaging"). Every subject starts with a namespace (`aex` in a
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
};

/** Stream and bucket names derived from the namespace (upper-case, NATS-safe). */
export const names = {
  eventsStream: (ns: string) => `${ns.toUpperCase().replace(/[^A-Z0-9_-]/g, '_')}_EVENTS`,
  commandsStream: (ns: string) => `${ns.toUpperCase().replace(/[^A-Z0-9_-]/g, '_')}_COMMANDS`,
  bucket: (ns: string, purpose: string) => `${ns.replace(/[^A-Za-z0-9_-]/g, '_')}_${purpose}`,
};

/**
 * The gateway's API-key cache (D2.5): a KV bucket of key hash → principal JSON, filled by gateways
 * from identity, marked `stale` by identity whenever a key is revoked or its agent changes.
 */
export const AUTH_CACHE = {
  bucket: (ns: string) => names.bucket(ns, 'auth_keys'),
  ttlMs: 60_000,
  staleMarker: 'stale',
} as const;
