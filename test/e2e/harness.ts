import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ExchangeClient, generateSigningKey, unwrap, type SigningKeyPair } from '@aex/client';
import type { CreateAccountBody, NewAccountView } from '@aex/contracts';
import { buildGateway } from '@aex/gateway';
import { startIdentityService, type IdentityService } from '@aex/identity';
import { startWalletService, type WalletService } from '@aex/wallet';
import { loadConfig, type Bus, type ExchangeConfig } from '@aex/platform';
import { createTestBus, createTestDatabase, testLogger } from '@aex/platform/testing';

export const ADMIN_TOKEN = 'e2e-admin-token-not-secret';

/**
 * One isolated exchange per test file: its own database, its own NATS namespace (streams and KV
 * buckets), the real services and the gateway listening on a free port, driven through the client.
 */
export interface TestExchange {
  url: string;
  config: ExchangeConfig;
  bus: Bus;
  databaseUrl: string;
  /** Anonymous client. */
  anon: ExchangeClient;
  /** Operator client (D15.3). */
  admin: ExchangeClient;
  gateway: FastifyInstance;
  identity: IdentityService;
  wallet: WalletService | null;
  startWallet(): Promise<WalletService>;
  stopWallet(): Promise<void>;
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

export async function startTestExchange(overrides: Partial<Record<keyof ExchangeConfig, string>> = {}): Promise<TestExchange> {
  const db = await createTestDatabase();
  const { bus, dispose } = await createTestBus('jetstream');
  const config = loadConfig(
    {},
    {
      PAYMENTS_PROVIDER: 'sandbox',
      ADMIN_TOKEN,
      RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP: '100000',
      PUBLIC_BASE_URL: 'http://exchange.test:8080',
      BUS_NAMESPACE: bus.namespace,
      ...overrides,
    },
  );
  const logger = testLogger();
  const deps = { bus, databaseUrl: db.url, config, logger };
  const identity = await startIdentityService(deps);
  let wallet: WalletService | null = await startWalletService(deps);
  const gateway = await buildGateway(deps);
  const url = await gateway.listen({ host: '127.0.0.1', port: 0 });
  const anon = new ExchangeClient({ baseUrl: url });

  const ex: TestExchange = {
    url,
    config,
    bus,
    databaseUrl: db.url,
    anon,
    admin: anon.as({ adminToken: ADMIN_TOKEN }),
    gateway,
    identity,
    get wallet() {
      return wallet;
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
      await wallet?.stop();
      await identity.stop();
      await dispose();
      await db.drop();
    },
  };
  return ex;
}
