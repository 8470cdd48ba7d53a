import { walletOps } from '@aex/contracts';
import { sql, type Kysely } from 'kysely';
import { OutboxRelay, Transactor, RecentMap, connectServiceDb, databaseCheck, exchangeMetrics, metrics, serveOperations, type Bus, type Component, type Collector, type ExchangeConfig, type Logger } from '@aex/platform';
import type { WalletDeps } from './context.js';
import type { Database } from './db/schema.js';
import { database } from './db/migrations/index.js';
import { processorFor } from './payments/processor.js';
import { reconcilePayments, stripeWebhook } from './payments/handlers.js';
import { StripeProcessor } from './payments/stripe.js';
import { startStripeReconciliation } from './payments/stripe-events.js';
import { fundingWriter } from './wallets/fundings.js';
import * as wallets from './wallets/handlers.js';
import { checkLedger } from './wallets/check.js';
import { serveOpenWallet } from './wallets/open-wallet.js';
import { serveHolds } from './wallets/holds.js';
import { serveCaptures } from './wallets/captures.js';
import { serveChildren } from './wallets/children.js';

export interface WalletService extends Component {
  deps: WalletDeps;
}

/** Starts the wallet service: migrations, outbox relay, the openWallet saga step and its operations. */
export async function startWalletService(opts: { bus: Bus; databaseUrl: string; config: ExchangeConfig; logger: Logger; now?: () => Date }): Promise<WalletService> {
  const logger = opts.logger.child({ service: 'wallet' });
  const serviceDb = await connectServiceDb<Database>({ url: opts.databaseUrl, ...database, logger, preparedStatements: opts.config.DATABASE_PREPARED_STATEMENTS === 'true' });
  const { db, close } = serviceDb;
  const relay = new OutboxRelay(db, opts.bus, logger);
  const tx = new Transactor(db, relay);
  const now = opts.now ?? (() => new Date());
  const deps: WalletDeps = { db, bus: opts.bus, config: opts.config, logger, tx, payments: processorFor(opts.config), fundings: fundingWriter(tx, now), access: new RecentMap(100_000), now };
  relay.start();
  const openWallet = await serveOpenWallet(deps);
  const holds = await serveHolds(deps);
  const captures = await serveCaptures(deps);
  const children = await serveChildren(deps);
  // D13.7: a Stripe funding whose webhook was lost is credited all the same.
  const reconciliation = deps.payments instanceof StripeProcessor ? startStripeReconciliation(deps, deps.payments) : undefined;
  const uncollect = metrics.collect(moneyFigures(db));
  const server = await serveOperations({
    bus: opts.bus,
    now: deps.now,
    service: 'wallet',
    ops: walletOps,
    handlers: {
      getWallet: wallets.getWallet(deps),
      fund: wallets.fund(deps),
      withdraw: wallets.withdraw(deps),
      listLedger: wallets.listLedger(deps),
      checkLedger: checkLedger(deps),
      getCheckout: wallets.getCheckout(deps),
      listFundings: wallets.listFundings(deps),
      linkPayoutAccount: wallets.linkPayoutAccount(deps),
      listPayouts: wallets.listPayouts(deps),
      reconcilePayments: reconcilePayments(deps),
      stripeWebhook: stripeWebhook(deps),
    },
    logger,
    tx,
    claims: serviceDb.claims,
    config: opts.config,
  });
  return {
    deps,
    checks: async () => [await databaseCheck(db)],
    async stop() {
      uncollect();
      await server.stop();
      await openWallet.stop();
      await holds.stop();
      await captures.stop();
      await children.stop();
      await reconciliation?.stop();
      await relay.stop();
      await close();
    },
  };
}

/** How long one reading of the money figures serves scrapes: each reads every wallet. */
const MONEY_READ_EVERY_MS = 10_000;

/**
 * The exchange's money as metrics (docs/metrics.md), read from the wallets when scraped — the same
 * on every replica, as the ledger is one: held in escrow, settled to providers, fees earned.
 */
function moneyFigures(db: Kysely<Database>): Collector {
  const [held, settled, fees] = [exchangeMetrics.moneyHeld(), exchangeMetrics.moneySettled(), exchangeMetrics.platformFees()];
  let readAt = 0;
  return async () => {
    if (Date.now() - readAt < MONEY_READ_EVERY_MS) return;
    const { rows: [r] } = await sql<{ held: string; settled: string; fees: string }>`
      select coalesce(sum(held_cents) filter (where kind = 'agent'), 0) as held,
             coalesce(sum(lifetime_earned_cents) filter (where kind = 'agent'), 0) as settled,
             coalesce(sum(balance_cents) filter (where kind = 'platform'), 0) as fees
      from wallets`.execute(db);
    readAt = Date.now();
    held.set({}, Number(r!.held));
    settled.setTotal({}, Number(r!.settled));
    fees.setTotal({}, Number(r!.fees));
  };
}
