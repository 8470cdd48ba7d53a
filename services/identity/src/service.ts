import { hostname } from 'node:os';
import { AUTH_CACHE, identityOps, subjects } from '@aex/contracts';
import { OutboxRelay, SagaSignals, Transactor, ReplicaCaches, connectServiceDb, databaseCheck, once, serveOperations, startPeriodic, type Bus, type Component, type ExchangeConfig, type Logger } from '@aex/platform';
import type { IdentityDeps } from './context.js';
import type { Database } from './db/schema.js';
import { database } from './db/migrations/index.js';
import * as accounts from './accounts/handlers.js';
import * as agents from './agents/handlers.js';
import * as keys from './agents/keys.js';
import { recordWalletOpened, startWalletRedrive } from './agents/wallet-saga.js';
import { systemResolver } from './agents/dns-resolver.js';
import type { HostResolver } from './domain/webhook-url.js';
import { effectiveDelegation } from './agents/effective-delegation.js';
import { getTrust, recordTrustOutcomes } from './trust/outcomes.js';
import { collectOperatorActions, listOperatorActions } from './operator/audit.js';
import { expireDueChildren, recordChildFunding, spawnAgent } from './agents/children.js';
import { forgetReplayed } from './agents/key-cache.js';

export interface IdentityService extends Component {
  deps: IdentityDeps;
}

/** Starts identity: migrations, outbox relay, saga consumer, and its operations on the bus. */
export async function startIdentityService(opts: {
  bus: Bus;
  databaseUrl: string;
  config: ExchangeConfig;
  logger: Logger;
  now?: () => Date;
  /** Re-send openWallet for agents unconfirmed this long (default 30 s), checked every tenth of it. */
  walletRedriveAfterMs?: number;
  /** Host names to addresses for the webhook URL check (default: the system resolver). */
  resolveHost?: HostResolver;
  /** How often children past their lifetime are looked for (default 1 s; D6.8). */
  childExpiryEveryMs?: number;
}): Promise<IdentityService> {
  const logger = opts.logger.child({ service: 'identity' });
  const serviceDb = await connectServiceDb<Database>({ url: opts.databaseUrl, ...database, logger, preparedStatements: opts.config.DATABASE_PREPARED_STATEMENTS === 'true' });
  const { db, close } = serviceDb;
  const relay = new OutboxRelay(db, opts.bus, logger);
  const tx = new Transactor(db, relay);
  const authCache = await opts.bus.kv(AUTH_CACHE.bucket(opts.bus.namespace), { ttlMs: AUTH_CACHE.ttlMs });
  const webhookPolicy = { allowPrivateNetworks: opts.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS === 'true', resolve: opts.resolveHost ?? systemResolver(), ownHostNames: [hostname()] };
  const replicas = await ReplicaCaches.open(opts.bus, logger);
  // A wallet's answer applied by another replica's consumer reaches the request waiting here as a notice.
  const sagas = new SagaSignals<never>(1_000, (id) => opts.bus.notify(subjects.notice(opts.bus.namespace, 'identity', 'saga', id), null));
  const notices = await opts.bus.listen(subjects.notices(opts.bus.namespace, 'identity', 'saga'), (_, subject) => sagas.noticed(subject.slice(subject.lastIndexOf('.') + 1)));
  const deps: IdentityDeps = { db, bus: opts.bus, config: opts.config, logger, tx, sagas, authCache, replicas, webhookPolicy, now: opts.now ?? (() => new Date()) };
  relay.start();
  const walletOpened = await recordWalletOpened(deps);
  const trust = await recordTrustOutcomes(deps);
  const audit = await collectOperatorActions(deps);
  const children = await recordChildFunding(deps);
  const redriveAfter = opts.walletRedriveAfterMs ?? 30_000;
  const redrive = startWalletRedrive(deps, { afterMs: redriveAfter, everyMs: Math.max(100, redriveAfter / 10) });
  const expiry = startPeriodic(logger, 'child expiry', opts.childExpiryEveryMs ?? 1_000, () => expireDueChildren(deps));
  const server = await serveOperations({
    bus: opts.bus,
    now: deps.now,
    service: 'identity',
    ops: identityOps,
    handlers: operationHandlers(deps),
    // A write whose replica died between its commit and telling the caches: told again (D2.5).
    replayed: (_operation, input, log) => forgetReplayed(deps, input, log),
    logger,
    tx,
    claims: serviceDb.claims,
    config: opts.config,
  });
  return {
    deps,
    checks: async () => [await databaseCheck(db)],
    // Once (`once`): a test that stopped it early, then its teardown, stops it one time.
    stop: once(async () => {
      await server.stop();
      await redrive.stop();
      await expiry.stop();
      await walletOpened.stop();
      await children.stop();
      await trust.stop();
      await audit.stop();
      await notices.stop();
      await relay.stop();
      await close();
    }),
  };
}

/** Each operation identity answers on the bus (`identityOps`), by the feature that owns it. */
function operationHandlers(deps: IdentityDeps) {
  return {
    createAccount: accounts.createAccount(deps),
    getAccount: accounts.getAccount(deps),
    listAccountAgents: accounts.listAccountAgents(deps),
    updateAccount: accounts.updateAccount(deps),
    setAccountDelegation: accounts.setAccountDelegation(deps),
    patchAccountDelegation: accounts.patchAccountDelegation(deps),
    createAgent: agents.createAgent(deps),
    getAgent: agents.getAgent(deps),
    getTrust: getTrust(deps),
    listOperatorActions: listOperatorActions(deps),
    updateAgent: agents.updateAgent(deps),
    deactivateAgent: agents.deactivateAgent(deps),
    suspendAgent: agents.suspendAgent(deps),
    getAgentDelegation: agents.getAgentDelegation(deps),
    setAgentDelegation: agents.setAgentDelegation(deps),
    patchAgentDelegation: agents.patchAgentDelegation(deps),
    spawnAgent: spawnAgent(deps),
    rotateKey: keys.rotateKey(deps),
    authenticate: keys.authenticate(deps),
    getDidDocument: keys.getDidDocument(deps),
    effectiveDelegation: effectiveDelegation(deps),
  };
}
