import { catalogOps } from '@aex/contracts';
import { ValidatorCache } from '@aex/schemas';
import { OutboxRelay, connectServiceDb, serveOperations, type Bus, type Component, type ExchangeConfig, type Logger } from '@aex/platform';
import type { CatalogDeps } from './context.js';
import type { Database } from './db/schema.js';
import { migrations } from './db/migrations/index.js';
import * as services from './services/handlers.js';
import { listServices } from './services/listing.js';
import { startProviderReplica } from './providers/replica.js';
import { startDiscovery, type Discovery } from './discovery/index.js';
import { WordNet } from './discovery/thesaurus.js';
import { loadEncoder } from './discovery/sentence-encoder.js';

export interface CatalogService extends Component {
  deps: CatalogDeps;
  discovery: Discovery;
}

/** Starts the catalog: migrations, outbox relay, the provider replica, the discovery index and its operations. */
export async function startCatalogService(opts: { bus: Bus; databaseUrl: string; config: ExchangeConfig; logger: Logger; now?: () => Date }): Promise<CatalogService> {
  const logger = opts.logger.child({ service: 'catalog' });
  const serviceDb = await connectServiceDb<Database>({ url: opts.databaseUrl, schema: 'catalog', migrations, logger, extensions: ['pg_trgm'] });
  const { db, close } = serviceDb;
  const relay = new OutboxRelay(db, opts.bus, logger);
  const thesaurus = new WordNet();
  const encoder = await loadEncoder(logger);
  const deps: CatalogDeps = { db, bus: opts.bus, config: opts.config, logger, relay, validators: new ValidatorCache(), thesaurus, encoder, now: opts.now ?? (() => new Date()) };
  relay.start();
  const replica = await startProviderReplica(deps);
  const discovery = await startDiscovery(deps);
  const server = await serveOperations({
    bus: opts.bus,
    service: 'catalog',
    ops: catalogOps,
    handlers: {
      createService: services.createService(deps),
      getService: services.getService(deps),
      updateService: services.updateService(deps),
      deleteService: services.deleteService(deps),
      listServices: listServices(deps),
      discover: discovery.handler,
      getContract: services.getContract(deps),
    },
    logger,
    db: serviceDb,
    config: opts.config,
  });
  return {
    deps,
    discovery,
    async stop() {
      await server.stop();
      await discovery.stop();
      await replica.stop();
      await relay.stop();
      await close();
      thesaurus.close();
      await encoder?.close();
    },
  };
}
