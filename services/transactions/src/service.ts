import { subjects, transactionOps } from '@aex/contracts';
import type { ContractView } from '@aex/contracts';
import { AggregateRunner, CacheMembership, LocalCache, OutboxRelay, SagaSignals, TimerRunner, Transactor, connectServiceDb, databaseCheck, serveOperations, type Bus, type Component, type Stoppable, type ExchangeConfig, type Logger } from '@aex/platform';
import type { KeptDelegation, TransactionDeps } from './context.js';
import type { Database } from './db/schema.js';
import { database } from './db/migrations/index.js';
import { disputeAggregate } from './disputes/aggregate.js';
import { purchaseAggregate, purchasePolicy, type PurchaseTypes } from './purchases/aggregate.js';
import { NameBackfill } from './purchases/names.js';
import { PinnedContracts } from './purchases/pinned-contracts.js';
import * as approvals from './purchases/approvals.js';
import * as account from './purchases/account.js';
import * as disputes from './disputes/handlers.js';
import * as transactions from './purchases/handlers.js';
import * as negotiation from './purchases/negotiation.js';
import { rpcTimeout } from './purchases/delegations.js';
import { serveSaga } from './purchases/saga.js';
import { purchaseTimers } from './purchases/timers.js';
import { ReceiptKeyRing } from './receipts/key-ring.js';
import * as receiptHandlers from './receipts/handlers.js';
import { sessionAggregate, type SessionTypes } from './sessions/aggregate.js';
import * as sessionHandlers from './sessions/handlers.js';
import { sessionTimers } from './sessions/timers.js';
import * as x402 from './x402/handlers.js';

/** Rules in force and current contracts kept per replica: as long and as many as the gateway keeps profiles (docs/gateway-caches.md). */
const KEPT = { ttlMs: 30_000, maxEntries: 50_000 };

export interface TransactionService extends Component {
  deps: TransactionDeps;
  /** Fires every timer due by the service's clock now, instead of at the runner's next poll; how many fired. */
  fireDueTimers(): Promise<number>;
  /** D23.1: names the purchases made without names now, instead of at the backfill's next pass; how many it named. */
  nameOlderPurchases(): Promise<number>;
}

/**
 * Starts the transaction-and-negotiation service: migrations, outbox relay, the purchases' and
 * disputes' runners, the saga's consumers of the wallet's answers, the durable timers, and its
 * operations.
 */
export async function startTransactionService(opts: { bus: Bus; databaseUrl: string; config: ExchangeConfig; logger: Logger; now?: () => Date; timerPollMs?: number }): Promise<TransactionService> {
  const logger = opts.logger.child({ service: 'transactions' });
  const serviceDb = await connectServiceDb<Database>({ url: opts.databaseUrl, ...database, logger, preparedStatements: opts.config.DATABASE_PREPARED_STATEMENTS === 'true' });
  const { db, close } = serviceDb;
  const relay = new OutboxRelay(db, opts.bus, logger);
  const tx = new Transactor(db, relay);
  const now = opts.now ?? (() => new Date());
  // A saga step done here for a request waiting on another replica reaches it as a notice.
  const [signals, notices] = await sagaSignals<PurchaseTypes['state']>(opts.bus, 'saga');
  const [sessionSignals, sessionNotices] = await sagaSignals<SessionTypes['state']>(opts.bus, 'session');
  // Listed with the gateways among the replicas identity and the catalog tell of every change (docs/gateway-caches.md).
  const membership = await CacheMembership.start(opts.bus, logger, undefined, 'transactions');
  const delegations = new LocalCache<KeptDelegation>(membership, KEPT);
  const contracts = new PinnedContracts(opts.bus, rpcTimeout(opts.config), new LocalCache<ContractView>(membership, KEPT));
  const runnerOptions = { tx, now, sagaWaitMs: opts.config.SAGA_WAIT_MS };
  const keyRing = await ReceiptKeyRing.start(db, { seed: opts.config.RECEIPT_SIGNING_KEY, publicBaseUrl: opts.config.PUBLIC_BASE_URL, logger });
  const receipts = keyRing.issuer(opts.config.PUBLIC_BASE_URL);
  const sessions = new AggregateRunner(sessionAggregate({ config: opts.config, delegations, bus: opts.bus, now }), { ...runnerOptions, signals: sessionSignals });
  const purchases = new AggregateRunner(purchaseAggregate({ config: opts.config, contracts, delegations, bus: opts.bus, now, receipts, sessions }), { ...runnerOptions, signals });
  const disputeRunner = new AggregateRunner(disputeAggregate({ purchases, policy: purchasePolicy(opts.config), sagaWaitMs: opts.config.SAGA_WAIT_MS }), runnerOptions);
  const deps: TransactionDeps = { db, tx, bus: opts.bus, config: opts.config, logger, contracts, delegations, purchases, disputes: disputeRunner, sessions, keyRing, receipts, now };
  relay.start();
  const saga = await serveSaga(deps);
  // Durable timers (docs/messaging.md "Durable timers"): rows claimed with SKIP LOCKED and fired in the database
  // transaction that deletes them, within a poll (250 ms) of being due, after any restart, once.
  const timers = new TimerRunner<Database>(tx, { ...purchaseTimers(deps), ...disputes.disputeTimers(deps), ...sessionTimers(deps) }, logger, { pollMs: opts.timerPollMs ?? 250, now });
  timers.start();
  const names = new NameBackfill(deps);
  names.start();
  const server = await serveOperations({
    bus: opts.bus,
    now,
    service: 'transactions',
    ops: transactionOps,
    handlers: operationHandlers(deps),
    logger,
    tx,
    claims: serviceDb.claims,
    config: opts.config,
  });
  return {
    deps,
    fireDueTimers: () => timers.fireDue(now()),
    nameOlderPurchases: () => names.run(),
    checks: async () => [await databaseCheck(db)],
    async stop() {
      await server.stop();
      await membership.stop();
      await timers.stop();
      await names.stop();
      await saga.stop();
      await notices.stop();
      await sessionNotices.stop();
      await relay.stop();
      await close();
    },
  };
}

/**
 * Where requests waiting on an aggregate (`name`) hear of its saga's steps: directly in this replica,
 * by a notice over NATS core from another.
 */
async function sagaSignals<S>(bus: Bus, name: string): Promise<[SagaSignals<S>, Stoppable]> {
  const signals = new SagaSignals<S>(1_000, (id) => bus.notify(subjects.notice(bus.namespace, 'transactions', name, id), null));
  const listening = await bus.listen(subjects.notices(bus.namespace, 'transactions', name), (_, subject) => signals.noticed(subject.slice(subject.lastIndexOf('.') + 1)));
  return [signals, listening];
}

/** The service's operations (`transactionOps`), each its handler. */
function operationHandlers(deps: TransactionDeps) {
  return {
    createTransaction: transactions.createTransaction(deps),
    getTransaction: transactions.getTransaction(deps),
    listTransactions: transactions.listTransactions(deps),
    negotiate: negotiation.negotiate(deps),
    listNegotiations: negotiation.listNegotiations(deps),
    start: transactions.start(deps),
    deliver: transactions.deliver(deps),
    verify: transactions.verify(deps),
    cancel: transactions.cancel(deps),
    approve: approvals.approve(deps),
    deny: approvals.deny(deps),
    listApprovals: approvals.listApprovals(deps),
    listAccountTransactions: account.listAccountTransactions(deps),
    getAccountTransaction: account.getAccountTransaction(deps),
    spending: account.spending(deps),
    figures: account.figures(deps),
    openDispute: disputes.openDispute(deps),
    getTransactionDispute: disputes.getTransactionDispute(deps),
    getDispute: disputes.getDispute(deps),
    respondDispute: disputes.respondDispute(deps),
    decideDispute: disputes.decideDispute(deps),
    withdrawDispute: disputes.withdrawDispute(deps),
    resolveDispute: disputes.resolveDispute(deps),
    listDisputes: disputes.listDisputes(deps),
    openSession: sessionHandlers.openSession(deps),
    getSession: sessionHandlers.getSession(deps),
    listAccountSessions: account.listAccountSessions(deps),
    listSessions: sessionHandlers.listSessions(deps),
    closeSession: sessionHandlers.closeSession(deps),
    approveSession: sessionHandlers.approveSession(deps),
    denySession: sessionHandlers.denySession(deps),
    getReceipt: receiptHandlers.getReceipt(deps),
    receiptKeys: receiptHandlers.receiptKeys(deps),
    exchangeDidDocument: receiptHandlers.exchangeDidDocument(deps),
    rotateReceiptKey: receiptHandlers.rotateReceiptKey(deps),
    x402Supported: x402.x402Supported(deps),
    x402Verify: x402.x402Verify(deps),
    x402Settle: x402.x402Settle(deps),
    signAgentCard: receiptHandlers.signAgentCard(deps),
  };
}
