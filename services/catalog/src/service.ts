import { catalogOps } from '@aex/contracts';
import { ValidatorCache } from '@aex/schemas';
import { OutboxRelay, Transactor, ReplicaCaches, connectServiceDb, databaseCheck, once, serveOperations, type Bus, type Component, type ExchangeConfig, type HealthCheck, type Logger } from '@aex/platform';
import type { CatalogDeps } from './context.js';
import type { Database } from './db/schema.js';
import { database } from './db/migrations/index.js';
import * as services from './listings/handlers.js';
import { listServices } from './listings/listing.js';
import { applyAgentEvent, startProviderReplica } from './providers/replica.js';
import { startDiscovery, type Discovery } from './discovery/index.js';
import { startLiveness, type LivenessService } from './liveness/index.js';
import { WordNet } from './discovery/thesaurus.js';
import { Meaning } from './discovery/meaning.js';
import { ModelSwitch } from './discovery/model-switch.js';

export interface CatalogService extends Component {
  deps: CatalogDeps;
  discovery: Discovery;
  /** D22.3: which providers deliver; `sweep()` evaluates what time changed now (tests move a clock). */
  liveness: LivenessService;
}

/** Starts the catalog: migrations, outbox relay, the provider replica, the discovery index and its operations. */
export async function startCatalogService(opts: { bus: Bus; databaseUrl: string; config: ExchangeConfig; logger: Logger; now?: () => Date }): Promise<CatalogService> {
  const logger = opts.logger.child({ service: 'catalog' });
  const serviceDb = await connectServiceDb<Database>({ url: opts.databaseUrl, ...database, logger, preparedStatements: opts.config.DATABASE_PREPARED_STATEMENTS === 'true' });
  const { db, close } = serviceDb;
  const relay = new OutboxRelay(db, opts.bus, logger);
  const tx = new Transactor(db, relay);
  const thesaurus = new WordNet();
  const meaning = Meaning.configure(logger, opts.config);
  const replicas = await ReplicaCaches.open(opts.bus, logger);
  const deps: CatalogDeps = { db, bus: opts.bus, config: opts.config, logger, tx, replicas, validators: new ValidatorCache(), thesaurus, meaning, now: opts.now ?? (() => new Date()) };
  relay.start();
  const replica = await startProviderReplica(deps);
  // D22.1: the models the database names are built before the index loads their embeddings.
  const models = new ModelSwitch(db, meaning, logger);
  await models.start();
  const discovery = await startDiscovery(deps);
  const liveness = await startLiveness(deps);
  const server = await serveOperations({
    bus: opts.bus,
    now: deps.now,
    service: 'catalog',
    ops: catalogOps,
    handlers: {
      createService: services.createService(deps),
      getService: services.getService(deps),
      updateService: services.updateService(deps),
      deleteService: services.deleteService(deps),
      listServices: listServices(deps, discovery.index),
      discover: discovery.handler,
      getContract: services.getContract(deps),
      providerServices: services.providerServices(deps),
      applyAgentEvent: applyAgentEvent(deps),
    },
    logger,
    tx,
    claims: serviceDb.claims,
    config: opts.config,
  });
  return {
    deps,
    discovery,
    liveness,
    checks: async () => [await databaseCheck(db), meaningCheck(meaning)],
    // Once (`once`): a test that stopped it early, then its teardown, stops it one time.
    stop: once(async () => {
      await server.stop();
      await liveness.stop();
      await discovery.stop();
      await models.stop();
      await replica.stop();
      await relay.stop();
      await close();
      thesaurus.close();
      await meaning.close();
    }),
  };
}

/** Discovery by meaning works, or is deliberately off; a model that failed to load is not ready. */
function meaningCheck(meaning: Meaning): HealthCheck {
  const status = meaning.status;
  if (status.state === 'on') return { name: 'discovery-meaning', ok: true };
  if (status.state === 'off') return { name: 'discovery-meaning', ok: true, detail: 'turned off (DISCOVERY_MEANING=false)' };
  return { name: 'discovery-meaning', ok: false, detail: status.reason };
}
