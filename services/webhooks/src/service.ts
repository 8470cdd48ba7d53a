import { webhooksOps } from '@aex/contracts';
import { OutboxRelay, Transactor, connectServiceDb, databaseCheck, retryDelays, serveOperations, type Bus, type Component, type ExchangeConfig, type Logger } from '@aex/platform';
import type { WebhookDeps } from './context.js';
import type { Database } from './db/schema.js';
import { database } from './db/migrations/index.js';
import { Dispatcher, type DispatcherOptions } from './deliveries/dispatcher.js';
import { startEndpointReplica } from './endpoints/endpoints.js';
import * as handlers from './deliveries/handlers.js';
import { startIntake } from './deliveries/intake.js';
import { WebhookSender } from './deliveries/sender.js';

export interface WebhookService extends Component {
  deps: WebhookDeps;
  dispatcher: Dispatcher;
}

/**
 * Starts the webhook dispatcher (D14): migrations, outbox relay, the replica of agents'
 * webhook URLs, the durable consumer turning transaction events into deliveries, the dispatcher that
 * attempts them on their schedule, and its operations.
 */
export async function startWebhookService(opts: { bus: Bus; databaseUrl: string; config: ExchangeConfig; logger: Logger; now?: () => Date; dispatcher?: DispatcherOptions }): Promise<WebhookService> {
  const logger = opts.logger.child({ service: 'webhooks' });
  const serviceDb = await connectServiceDb<Database>({ url: opts.databaseUrl, ...database, logger, preparedStatements: opts.config.DATABASE_PREPARED_STATEMENTS === 'true' });
  const { db, close } = serviceDb;
  const relay = new OutboxRelay(db, opts.bus, logger);
  const tx = new Transactor(db, relay);
  const sender = new WebhookSender({ timeoutMs: opts.config.WEBHOOK_TIMEOUT_MS, allowPrivateNetworks: opts.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS === 'true' });
  const wake = { kick: () => undefined as void };
  const deps: WebhookDeps = {
    db, bus: opts.bus, config: opts.config, logger, tx, sender,
    delays: retryDelays(opts.config),
    kick: () => wake.kick(),
    now: opts.now ?? (() => new Date()),
  };
  relay.start();
  const dispatcher = new Dispatcher(deps, opts.dispatcher);
  wake.kick = () => dispatcher.kick();
  const replica = await startEndpointReplica(deps);
  const intake = await startIntake(deps, dispatcher);
  const server = await serveOperations({
    bus: opts.bus,
    now: deps.now,
    service: 'webhooks',
    ops: webhooksOps,
    handlers: {
      getWebhook: handlers.getWebhook(deps),
      rotateWebhookSecret: handlers.rotateWebhookSecret(deps),
      listDeliveries: handlers.listDeliveries(deps),
      retryDelivery: handlers.retryDelivery(deps),
      testWebhook: handlers.testWebhook(deps),
      listDeadLetters: handlers.listDeadLetters(deps),
      retryDeadLetter: handlers.retryDeadLetter(deps),
    },
    logger,
    tx,
    claims: serviceDb.claims,
    config: opts.config,
  });
  dispatcher.kick();
  return {
    deps,
    dispatcher,
    checks: async () => [await databaseCheck(db)],
    async stop() {
      await server.stop();
      await intake.stop();
      await replica.stop();
      await dispatcher.stop();
      sender.close();
      await relay.stop();
      await close();
    },
  };
}
