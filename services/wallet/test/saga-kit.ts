import { randomUUID } from 'node:crypto';
import { childSaga, commands, subjects, walletOps, type MessageDef, type MessageEnvelope, type Principal, type Static } from '@aex/contracts';
import { ack, callOrThrow, loadConfig, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, eventually, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startWalletService, type WalletService } from '../src/index.js';

/** An answer of the wallet to the transaction saga (`wallet.hold.*`). */
export type HoldAnswer = MessageEnvelope<{ transactionId: string; attempt?: number; reason?: string; amountCents?: number; feeCents?: number; refundCents?: number }>;
/** An answer of the wallet to the child saga (`wallet.child.*`). */
export type ChildAnswer = MessageEnvelope<{ childAgentId: string; reason?: string; availableCents?: number; budgetCents?: number }>;

/**
 * The wallet service alone on real Postgres and JetStream, driven by the saga's commands as the
 * transaction and identity services send them, with every answer it publishes kept.
 */
export interface SagaKit {
  wallet: WalletService;
  bus: Bus;
  answers: HoldAnswer[];
  childAnswers: ChildAnswer[];
  stop(): Promise<void>;
}

export async function startSagaKit(): Promise<SagaKit> {
  const database: TestDatabase = await createTestDatabase();
  const { bus, dispose } = await createTestBus('jetstream');
  const config = loadConfig({}, { BUS_NAMESPACE: bus.namespace, PAYMENTS_PROVIDER: 'sandbox' });
  const wallet = await startWalletService({ bus, databaseUrl: database.url, config, logger: testLogger() });
  const answers: HoldAnswer[] = [];
  const childAnswers: ChildAnswer[] = [];
  await bus.consume({ stream: 'events', durable: 'observer', filter: `${bus.namespace}.evt.wallet.hold.>`, handler: async (m) => (answers.push(m.data as HoldAnswer), ack()) });
  await bus.consume({ stream: 'events', durable: 'child-observer', filter: `${bus.namespace}.evt.wallet.child.>`, handler: async (m) => (childAnswers.push(m.data as ChildAnswer), ack()) });
  return { wallet, bus, answers, childAnswers, stop: async () => (await wallet.stop(), await dispose(), await database.drop()) };
}

/** Sends a saga command, as its service would. */
export async function send<M extends MessageDef>(kit: SagaKit, def: M, data: Static<M['data']>): Promise<void> {
  const id = randomUUID();
  await kit.bus.publish(subjects.command(kit.bus.namespace, def.type), { id, type: def.type, occurredAt: new Date().toISOString(), data }, { msgId: id });
}

/** Funds an agent's wallet through the wallet's own operation (sandbox payments). */
export async function fundAgent(kit: SagaKit, agentId: string, cents: number): Promise<void> {
  const { accountId } = await kit.wallet.deps.db.selectFrom('wallets').select('accountId').where('agentId', '=', agentId).executeTakeFirstOrThrow();
  const principal: Principal = { agentId, accountId: accountId!, isOwner: true, status: 'active', parentAgentId: null, signingKeyPublic: null };
  await callOrThrow(kit.bus, walletOps.fund, { ctx: { requestId: randomUUID(), principal }, input: { path: { agentId }, query: {}, body: { amountCents: cents } } }, 5000);
}

/** An agent with an open wallet holding `cents`. */
export async function agentWith(kit: SagaKit, cents: number): Promise<string> {
  const agentId = randomUUID();
  await send(kit, commands.openWallet, { operationId: agentId, agentId, accountId: randomUUID() });
  await eventually(async () => (await kit.wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', agentId).executeTakeFirst()) ?? null);
  if (cents > 0) await fundAgent(kit, agentId, cents);
  return agentId;
}

export const balances = async (kit: SagaKit, agentId: string) => kit.wallet.deps.db.selectFrom('wallets').select(['balanceCents', 'heldCents']).where('agentId', '=', agentId).executeTakeFirstOrThrow();
export const walletOf = async (kit: SagaKit, agentId: string) => (await kit.wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', agentId).executeTakeFirstOrThrow()).id;

/** The wallet's answers about a transaction's hold of one type, once there are `n`. */
export const answered = (kit: SagaKit, transactionId: string, type: string, n = 1) => eventually(async () => {
  const found = kit.answers.filter((a) => a.data.transactionId === transactionId && a.type === type);
  return found.length >= n ? found : null;
});

/** The wallet's answers about a child's spawn of one type, once there are `n`. */
export const childAnswered = (kit: SagaKit, childAgentId: string, type: string, n = 1) => eventually(async () => {
  const found = kit.childAnswers.filter((a) => a.data.childAgentId === childAgentId && a.type === type);
  return found.length >= n ? found : null;
});

/** A child of `parent` spawned with `budgetCents` (not awaited). */
export async function spawn(kit: SagaKit, parent: string, budgetCents: number, accountId: string = randomUUID()): Promise<string> {
  const child = randomUUID();
  await send(kit, childSaga.allocate, { childAgentId: child, parentAgentId: parent, accountId, budgetCents });
  return child;
}

/** Every entry of the agent's wallet, in order, carries the balances its movement left (D13.2), and the last ones are the wallet's. */
export async function entriesChained(kit: SagaKit, agentId: string): Promise<boolean> {
  const walletId = await walletOf(kit, agentId);
  const entries = await kit.wallet.deps.db.selectFrom('ledgerEntries').select(['txType', 'amountCents', 'balanceAfterCents', 'availableAfterCents']).where('walletId', '=', walletId).orderBy('seq').execute();
  let balance = 0;
  let available = 0;
  for (const e of entries) {
    if (!['fund_hold', 'fund_return', 'fund_release'].includes(e.txType)) balance += e.amountCents;
    available += e.amountCents;
    if (e.balanceAfterCents !== balance || e.availableAfterCents !== available) return false;
  }
  const w = await balances(kit, agentId);
  return w.balanceCents === balance && w.balanceCents - w.heldCents === available;
}
