import { Type, type Static, validator } from '@aex/contracts';
import { discoveryEncoderProblem, DiscoveryEncoderSettings } from './config-discovery-encoder.js';

const Int = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) => Type.Integer({ default: def, minimum: min, maximum: max });
const Bool = (def: boolean) => Type.Union([Type.Literal('true'), Type.Literal('false')], { default: String(def) });

/**
 * D16: every variable a deployment can set. Read and checked once at start; a bad value stops the
 * process with a message naming the variable. The all-in-one stack and each service's main.ts read
 * the same names.
 */
export const ConfigSchema = Type.Object({
  PORT: Int(8080, 0, 65535),
  HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
  /** A service run on its own serves `/healthz` and `/readyz` on this port (on HOST); absent: not served. */
  HEALTH_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  PUBLIC_BASE_URL: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://' })),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  /** One NATS server or several, comma-separated (`nats://a:4222,nats://b:4222`): the client fails over between them. */
  NATS_URL: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * How many copies JetStream keeps of every stream and KV bucket of the exchange: 1 for one server,
   * 3 for a three-node cluster (any one node can then be lost).
   */
  NATS_REPLICAS: Int(1, 1, 5),
  /** Prefix of every subject, stream and bucket name (tests use their own). */
  BUS_NAMESPACE: Type.String({ default: 'aex', pattern: '^[a-z][a-z0-9_]{0,30}$' }),
  /** D13.7: `none`, `sandbox` (confirms at once: never for real money) or `stripe` (Checkout in, Connect transfers out). */
  PAYMENTS_PROVIDER: Type.Union([Type.Literal('none'), Type.Literal('sandbox'), Type.Literal('stripe')], { default: 'none' }),
  /** D13.7 secrets (never logged, never answered): Stripe's secret or restricted key, and the webhook endpoint's signing secret. */
  STRIPE_API_KEY: Type.Optional(Type.String({ pattern: '^(sk|rk)_(test|live)_[A-Za-z0-9]+$' })),
  STRIPE_WEBHOOK_SECRET: Type.Optional(Type.String({ pattern: '^whsec_[A-Za-z0-9+/=]+$' })),
  /** Another address for Stripe's API (a local stand-in or stripe-mock); unset: Stripe's own. */
  STRIPE_API_URL: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://' })),
  ADMIN_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  /**
   * D18.1: the seed of the exchange's Ed25519 receipt key (base64 of 32 bytes; secret). Unset: each
   * transactions process makes one of its own at start (receipts still verify, but the key changes
   * with every start), so deployments set it; `pnpm start` keeps one in its data directory.
   */
  RECEIPT_SIGNING_KEY: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9+/]{43}=$' })),
  /** When set, `/metrics` (gateway and health ports) answers only `Authorization: Bearer <token>`; unset, it is open. */
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  /**
   * D3.5: `plain` — an authenticated PATCH replaces an agent's signing key, as the spec says;
   * `signed` — replacing a registered key also needs an X-AE-Signature by the current key, or the
   * account's owner agent (so a stolen API key alone cannot swap the key).
   */
  SIGNING_KEY_REPLACEMENT: Type.Union([Type.Literal('plain'), Type.Literal('signed')], { default: 'plain' }),
  /** The gateway serves HTTPS with this PEM certificate chain and key (both or neither); else plain HTTP. */
  TLS_CERT_FILE: Type.Optional(Type.String({ minLength: 1 })),
  TLS_KEY_FILE: Type.Optional(Type.String({ minLength: 1 })),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: Bool(false),
  WEBHOOK_RETRY_DELAYS_MS: Type.String({ default: '0,5000,300000,1800000,7200000,18000000,36000000,36000000', pattern: '^\\d+(,\\d+)*$' }),
  WEBHOOK_TIMEOUT_MS: Int(15000, 1),
  RATE_LIMIT_READ_PER_MIN: Int(100, 1),
  RATE_LIMIT_WRITE_PER_MIN: Int(30, 1),
  RATE_LIMIT_DISCOVERY_PER_MIN: Int(50, 1),
  RATE_LIMIT_KEY_ROTATION_PER_MIN: Int(10, 1),
  RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP: Int(10, 1),
  RATE_LIMIT_PUBLIC_PER_MIN_PER_IP: Int(100, 1),
  /** Lookups of API keys no gateway has cached, per client IP: bounds key guessing (the valid ones are given back). */
  RATE_LIMIT_AUTH_FAILURES_PER_MIN_PER_IP: Int(30, 1),
  REVIEW_WINDOW_SECONDS: Int(259200, 1),
  DISPUTE_RESPONSE_SECONDS: Int(432000, 1),
  /** D10.3: how long a purchase waits for its owner's approval before it is cancelled (`approval_expired`). */
  APPROVAL_TTL_SECONDS: Int(86400, 1),
  MAX_AGENTS_PER_ACCOUNT: Int(20, 1),
  MAX_SERVICES_PER_AGENT: Int(50, 1),
  MAX_ACTIVE_TRANSACTIONS_PER_AGENT: Int(100, 1),
  MAX_TRANSACTION_CENTS: Int(1_000_000, 1),
  IDEMPOTENCY_TTL_HOURS: Int(48, 1),
  BODY_LIMIT_BYTES: Int(1_048_576, 1024),
  /**
   * Behind a load balancer or ingress, `true` takes the client IP (per-IP limits, D4.2) from
   * X-Forwarded-For; otherwise every client would share the proxy's bucket. Never `true` when
   * clients can reach the gateway directly: they could then choose their own IP.
   */
  TRUST_PROXY: Bool(false),
  /** How long a gateway waits for a service reply, and a saga step for its outcome, before 503/202. */
  RPC_TIMEOUT_MS: Int(10_000, 100),
  SAGA_WAIT_MS: Int(5_000, 0),
  /**
   * Discovery by meaning (the catalog's sentence encoder). `false` turns it off deliberately:
   * ranking is then lexical, and discover answers say so in `warnings`.
   */
  DISCOVERY_MEANING: Bool(true),
  ...DiscoveryEncoderSettings,
  /** D22.2: discovery learns from purchases that carried a queryId. `false` ranks without what it learned. */
  DISCOVERY_LEARNING: Bool(true),
  /**
   * Statements prepared once per connection. `false` for a connection pooler that cannot
   * keep them, such as PgBouncer before 1.21 in transaction mode.
   */
  DATABASE_PREPARED_STATEMENTS: Bool(true),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }),
  /** `auto`: human-readable when the output is a terminal, JSON lines otherwise. */
  LOG_FORMAT: Type.Union([Type.Literal('auto'), Type.Literal('json'), Type.Literal('pretty')], { default: 'auto' }),
  EXCHANGE_VERSION: Type.String({ default: '0.1.0' }),
});
export type ExchangeConfig = Static<typeof ConfigSchema> & { PUBLIC_BASE_URL: string };

export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`Invalid configuration: ${variable} ${message}`);
    this.name = 'ConfigError';
  }
}

const check = validator(ConfigSchema, { coerce: true });

/** Reads the D16 variables from `env` (only the names the schema knows; everything else is ignored). */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Record<keyof ExchangeConfig, string>> = {}): ExchangeConfig {
  const raw: Record<string, unknown> = {};
  for (const name of Object.keys(ConfigSchema.properties)) {
    const value = overrides[name as keyof ExchangeConfig] ?? env[name];
    if (value !== undefined && value !== '') raw[name] = value;
  }
  const result = check.check(raw);
  if (!result.ok) {
    const first = result.errors[0]!;
    const variable = (first.field ?? '').split('/').filter(Boolean)[0] ?? 'configuration';
    throw new ConfigError(variable, `is invalid: ${first.message}`);
  }
  const cfg = result.value;
  if ((cfg.TLS_CERT_FILE === undefined) !== (cfg.TLS_KEY_FILE === undefined)) {
    throw new ConfigError(cfg.TLS_CERT_FILE === undefined ? 'TLS_CERT_FILE' : 'TLS_KEY_FILE', 'must be set together with the other of TLS_CERT_FILE and TLS_KEY_FILE.');
  }
  const encoder = discoveryEncoderProblem(cfg);
  if (encoder) throw new ConfigError(encoder.variable, encoder.message);
  const publicBase = (cfg.PUBLIC_BASE_URL ?? `${cfg.TLS_CERT_FILE ? 'https' : 'http'}://${cfg.HOST}:${cfg.PORT}`).replace(/\/+$/, '');
  return { ...cfg, PUBLIC_BASE_URL: publicBase };
}

export function retryDelays(cfg: Pick<ExchangeConfig, 'WEBHOOK_RETRY_DELAYS_MS'>): number[] {
  return cfg.WEBHOOK_RETRY_DELAYS_MS.split(',').map(Number);
}
