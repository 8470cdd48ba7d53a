import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, expect } from 'vitest';
import { ExchangeClient, generateSigningKey, unwrap, type Outcome, type SigningKeyPair } from '@agent-exchange/client';
import type { CreateAccountBody, NewAccountView } from '@aex/contracts';
import { buildGateway } from '@aex/gateway';
import { database as catalogDatabase, startCatalogService, type CatalogService } from '@aex/catalog';
import { database as identityDatabase, startIdentityService, type IdentityService } from '@aex/identity';
import { database as walletDatabase, startWalletService, type WalletService } from '@aex/wallet';
import { database as transactionsDatabase, startTransactionService, type TransactionService } from '@aex/transactions';
import { database as webhooksDatabase, startWebhookService, type WebhookService } from '@aex/webhooks';
import { checksOf, connectServiceDb, loadConfig, type Bus, type ExchangeConfig, type Logger, type ServiceDbOptions } from '@aex/platform';
import { createTestBus, createTestDatabaseFrom, TestClock, testLogger, testNamespace, type TestDatabase } from '@aex/platform/testing';

export const ADMIN_TOKEN = 'e2e-admin-token-not-secret';

const SERVICE_DATABASES: Array<Pick<ServiceDbOptions, 'schema' | 'migrations' | 'extensions'>> = [identityDatabase, walletDatabase, transactionsDatabase, catalogDatabase, webhooksDatabase];
/** What the exchange's migrations are: their schemas, names and code (a change makes a new template). */
const MIGRATIONS_KEY = createHash('sha256')
  .update(JSON.stringify(SERVICE_DATABASES.map((d) => [d.schema, Object.entries(d.migrations).map(([name, m]) => [name, String(m.up)])])))
  .digest('hex')
  .slice(0, 16);

/**
 * A database of the test's own with every service's schema migrated: cloned from a template the
 * first file of a run builds (the migrations ran once), not migrated file by file.
 */
export function exchangeDatabase(): Promise<TestDatabase> {
  return createTestDatabaseFrom({
    key: `exchange_${MIGRATIONS_KEY}`,
    build: async (url) => {
      for (const d of SERVICE_DATABASES) await (await connectServiceDb({ url, ...d })).close();
    },
  });
}

/**
 * One isolated exchange per test file: its own database, its own NATS namespace (streams and KV
 * buckets), the real services and the gateway listening on a free port, driven through the client.
 */
export interface TestExchange {
  url: string;
  /** The services' clock: `advance` passes the deadlines they set (offers, expiry, review window, disputes). */
  clock: TestClock;
  config: ExchangeConfig;
  bus: Bus;
  databaseUrl: string;
  /** Anonymous client. */
  anon: ExchangeClient;
  /** Operator client (D15.3). */
  admin: ExchangeClient;
  gateway: FastifyInstance;
  identity: IdentityService;
  catalog: CatalogService;
  wallet: WalletService | null;
  transactions: TransactionService | null;
  webhooks: WebhookService | null;
  /** Stops and starts the webhook dispatcher (a crash mid-burst; its schedule is in its rows). */
  stopWebhooks(): Promise<void>;
  startWebhooks(): Promise<WebhookService>;
  /** Stops and starts the transaction service (a restart mid-saga; its timers and consumers are durable). */
  stopTransactions(): Promise<void>;
  startTransactions(): Promise<TransactionService>;
  startWallet(): Promise<WalletService>;
  stopWallet(): Promise<void>;
  /** Stops and starts identity, or the catalog (what answers while one is away); `identity` and `catalog` are the latest started. */
  stopIdentity(): Promise<void>;
  startIdentity(): Promise<IdentityService>;
  stopCatalog(): Promise<void>;
  /** Starts the catalog again, with settings of its own when given (a catalog restarted with a new configuration). */
  startCatalog(overrides?: Partial<Record<keyof ExchangeConfig, string>>): Promise<CatalogService>;
  signUp(over?: Partial<CreateAccountBody>): Promise<Member>;
  addAgent(owner: Member, over?: Record<string, unknown>): Promise<Member>;
  stop(): Promise<void>;
}

/** An agent with its credentials and a client acting as it. */
export interface Member {
  accountId: string;
  agentId: string;
  apiKey: string;
  client: ExchangeClient;
  keys?: SigningKeyPair;
}

export const uniqueEmail = () => `agent-${randomBytes(6).toString('hex')}@example.com`;

export interface TestExchangeOptions {
  /** A database of the test's own (e.g. an embedded Postgres it can stop); else a fresh test database. */
  databaseUrl?: string;
  /** Identity's DNS for webhook URLs (D14.5); else the system resolver. */
  resolveHost?: (host: string) => Promise<string[]>;
  /** How often the transaction service looks for due timers (default 250 ms). */
  timerPollMs?: number;
  /** The gateway's port (default: any free one). */
  port?: number;
  /** Where the services log (default: silent, or TEST_LOG_LEVEL). */
  logger?: Logger;
}

export async function startTestExchange(overrides: Partial<Record<keyof ExchangeConfig, string>> = {}, opts: TestExchangeOptions = {}): Promise<TestExchange> {
  const db = opts.databaseUrl ? { url: opts.databaseUrl, drop: async () => undefined } : await exchangeDatabase();
  const { bus, dispose } = await createTestBus('jetstream');
  const configOverrides = {
    PAYMENTS_PROVIDER: 'sandbox',
    ADMIN_TOKEN,
    RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP: '100000',
    // Every client of a test file is 127.0.0.1: the keys a test refuses on purpose must not close
    // that address to the others (D24.1). The tests of the limit set their own, with addresses of their own.
    RATE_LIMIT_AUTH_FAILURES_PER_MIN_PER_IP: '100000',
    PUBLIC_BASE_URL: 'http://exchange.test:8080',
    BUS_NAMESPACE: bus.namespace,
    RECEIPT_SIGNING_KEY: randomBytes(32).toString('base64'),
    ...overrides,
  };
  const config = loadConfig({}, configOverrides);
  const logger = opts.logger ?? testLogger();
  // The services' one clock: a test moves it past a deadline (offers, expiry, review window, disputes)
  // instead of sleeping. Shared, so no service's timestamps run ahead of another's.
  const clock = new TestClock();
  const deps = { bus, databaseUrl: db.url, config, logger, now: clock.now };
  const identityDeps = { ...deps, ...(opts.resolveHost ? { resolveHost: opts.resolveHost } : {}) };
  let identity = await startIdentityService(identityDeps);
  let identityRunning = true;
  let wallet: WalletService | null = await startWalletService(deps);
  let catalog = await startCatalogService(deps);
  let catalogRunning = true;
  const txOpts = { ...deps, ...(opts.timerPollMs ? { timerPollMs: opts.timerPollMs } : {}) };
  let transactions: TransactionService | null = await startTransactionService(txOpts);
  let webhooks: WebhookService | null = await startWebhookService(deps);
  // Readiness over the services as the one-process stack has it (the wallet may be stopped by a test).
  const gateway = await buildGateway({ ...deps, checks: () => checksOf({ identity, wallet, catalog, transactions, webhooks })() });
  const url = await gateway.listen({ host: '127.0.0.1', port: opts.port ?? 0 });
  const anon = new ExchangeClient({ baseUrl: url });

  const ex: TestExchange = {
    url,
    clock,
    config,
    bus,
    databaseUrl: db.url,
    anon,
    admin: anon.as({ adminToken: ADMIN_TOKEN }),
    gateway,
    get identity() {
      return identity;
    },
    get catalog() {
      return catalog;
    },
    async stopIdentity() {
      if (identityRunning) await identity.stop();
      identityRunning = false;
    },
    async startIdentity() {
      identity = await startIdentityService(identityDeps);
      identityRunning = true;
      return identity;
    },
    async stopCatalog() {
      if (catalogRunning) await catalog.stop();
      catalogRunning = false;
    },
    async startCatalog(over = {}) {
      catalog = await startCatalogService({ ...deps, config: loadConfig({}, { ...configOverrides, ...over }) });
      catalogRunning = true;
      return catalog;
    },
    get transactions() {
      return transactions;
    },
    async stopTransactions() {
      await transactions?.stop();
      transactions = null;
    },
    async startTransactions() {
      transactions = await startTransactionService(txOpts);
      return transactions;
    },
    get wallet() {
      return wallet;
    },
    get webhooks() {
      return webhooks;
    },
    async stopWebhooks() {
      await webhooks?.stop();
      webhooks = null;
    },
    async startWebhooks() {
      webhooks = await startWebhookService(deps);
      return webhooks;
    },
    async startWallet() {
      wallet = await startWalletService(deps);
      return wallet;
    },
    async stopWallet() {
      await wallet?.stop();
      wallet = null;
    },
    async signUp(over = {}) {
      const body: CreateAccountBody = { accountType: 'individual', email: uniqueEmail(), displayName: 'Test account', agent: { name: 'owner' }, ...over };
      const created: NewAccountView = unwrap(await anon.createAccount(body));
      return { accountId: created.id, agentId: created.agent.id, apiKey: created.apiKey, client: anon.as({ apiKey: created.apiKey }) };
    },
    async addAgent(owner, over = {}) {
      const keys = generateSigningKey();
      const agent = unwrap(await owner.client.createAgent({ name: 'worker', agentType: 'persistent', signingKeyPublic: keys.publicKey, ...over }));
      return { accountId: owner.accountId, agentId: agent.id, apiKey: agent.apiKey, keys, client: anon.as({ apiKey: agent.apiKey, signingSecretKey: keys.secretKey }) };
    },
    async stop() {
      await gateway.close();
      await webhooks?.stop();
      await transactions?.stop();
      if (catalogRunning) await catalog.stop();
      await wallet?.stop();
      if (identityRunning) await identity.stop();
      await dispose();
      await db.drop();
    },
  };
  return ex;
}

/**
 * Signs up an account whose owner agent creates one agent with an Ed25519 signing key, through any
 * exchange's gateway: the party that may call the signed routes (D3.3).
 */
export async function signingMember(anon: ExchangeClient, name = 'worker'): Promise<{ id: string; apiKey: string; secretKey: string; client: ExchangeClient; accountId: string; ownerAgentId: string; ownerApiKey: string }> {
  const acc = unwrap(await anon.createAccount({ accountType: 'individual', email: uniqueEmail(), displayName: name, agent: { name: 'owner' } }));
  const keys = generateSigningKey();
  const agent = unwrap(await anon.as({ apiKey: acc.apiKey }).createAgent({ name, agentType: 'persistent', signingKeyPublic: keys.publicKey }));
  return { id: agent.id, apiKey: agent.apiKey, secretKey: keys.secretKey, client: anon.as({ apiKey: agent.apiKey, signingSecretKey: keys.secretKey }), accountId: acc.id, ownerAgentId: acc.agent.id, ownerApiKey: acc.apiKey };
}

/** Asserts a failed call with this status and D1.4 code, answered in the envelope with a request id. */
export function expectError(r: Outcome<unknown>, status: number, code: string): void {
  expect(r.ok, `expected ${status} ${code}`).toBe(false);
  if (r.ok) return;
  expect([r.status, r.error.code]).toEqual([status, code]);
  expect(r.error.requestId).toMatch(/^[0-9a-f-]{36}$/);
}

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The node flags of the `start` script in package.json: `exec node <flags> services/stack/src/main.ts`. */
function nodeFlagsOfStart(): string[] {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = pkg.scripts.start.split(/\s+/);
  return words.slice(words.indexOf('node') + 1, -1);
}

export interface SpawnedProcess {
  child: ChildProcess;
  /** What the process printed so far (stdout and stderr). */
  output(): string;
  /** The match of `ready` in the output. */
  match: RegExpExecArray;
}

/**
 * Starts a main from the repository root with the flags `pnpm start` uses (the TypeScript loader and
 * the telemetry bootstrap, so that what runs here is what ships) and waits until its output matches `ready`
 * (within `timeoutMs`).
 */
export function spawnMain(main: string, env: Record<string, string>, ready: RegExp, timeoutMs = 60_000): Promise<SpawnedProcess> {
  const child = spawn(process.execPath, [...nodeFlagsOfStart(), main], { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let started = false;
  return new Promise((resolve, reject) => {
    // One that does not start in time is killed: nothing of a failed start outlives the test.
    const timer = setTimeout(() => (child.kill('SIGKILL'), reject(new Error(`${main} did not start within ${timeoutMs} ms:\n${out}`))), timeoutMs);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      // Matched once: a long-running process's output is only kept from then on (searching all of it
      // again for every chunk made a busy process's pipe cost the test runner more than the process).
      if (started) return;
      const match = ready.exec(out);
      if (match) {
        started = true;
        clearTimeout(timer);
        resolve({ child, output: () => out, match });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${main} exited with ${code}:\n${out}`));
    });
  });
}

/** Whether a process of this pid is running (signal 0 checks without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends `signal` (SIGTERM by default) and resolves with the exit code (null when killed by the signal). */
export function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill(signal);
  });
}

/** A whole exchange running as its own process (the `pnpm start` main), to be killed and restarted. */
export interface ExchangeProcess {
  db: TestDatabase;
  /** Its NATS namespace (BUS_NAMESPACE). */
  namespace: string;
  /** Starts the process and resolves with its URL once it listens. */
  start(): Promise<string>;
  /** The running process, if any. */
  readonly child: ChildProcess | undefined;
  /** SIGKILL: no shutdown of any kind. */
  kill(): Promise<void>;
  /** Kills it and removes its database and NATS namespace. */
  dispose(): Promise<void>;
  /** What every run of the process printed, each run headed by its start: what a failing test shows. */
  log(): string;
}

/**
 * Prints what the exchange process said, every run of it, when a test of the enclosing block fails
 * (E2E_LOG_LEVEL=info for the request log too): a crash test's failure is read from both sides.
 */
export function showLogOnFailure(proc: () => ExchangeProcess | undefined): void {
  beforeEach((ctx) => {
    ctx.onTestFailed(() => {
      const p = proc();
      if (p) process.stderr.write(`the exchange's log:\n${p.log()}\n`);
    });
  });
}

/** An exchange process on the test's own database and NATS namespace, with sandbox payments. */
export async function exchangeProcess(extra: Record<string, string> = {}): Promise<ExchangeProcess> {
  const db = await exchangeDatabase();
  const namespace = testNamespace();
  const env = {
    DATABASE_URL: db.url,
    NATS_URL: process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222',
    BUS_NAMESPACE: namespace,
    PORT: '0',
    ADMIN_TOKEN,
    PAYMENTS_PROVIDER: 'sandbox',
    // Its clients are all 127.0.0.1, as startTestExchange's (D24.1).
    RATE_LIMIT_AUTH_FAILURES_PER_MIN_PER_IP: '100000',
    // E2E_LOG_LEVEL: more of the process's log when a failure has to be understood.
    LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'warn',
    ...extra,
  };
  let running: ChildProcess | undefined;
  const runs: Array<() => string> = [];
  const kill = async () => {
    if (running) await stopProcess(running, 'SIGKILL');
    running = undefined;
  };
  return {
    db,
    namespace,
    async start() {
      const p = await spawnMain('services/stack/src/main.ts', env, /listening on (http:\/\/\S+)/);
      running = p.child;
      const head = `--- run ${runs.length + 1}, started ${new Date().toISOString()} ---`;
      runs.push(() => `${head}\n${p.output()}`);
      return p.match[1]!;
    },
    log: () => runs.map((run) => run()).join('\n'),
    get child() {
      return running;
    },
    kill,
    async dispose() {
      await kill();
      const { dispose } = await createTestBus('jetstream', namespace);
      await dispose();
      await db.drop();
    },
  };
}
