import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childSaga, commands, subjects, walletOps, walletSaga, type MessageDef, type MessageEnvelope, type Principal, type Static } from '@aex/contracts';
import { ack, callOperation, callOrThrow, inTransaction, loadConfig, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, eventually, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startWalletService, type WalletService } from '../src/index.js';
import { checkLedgerInvariants } from '../src/wallets/check.js';
import { applyMovements, moveAtCommit, type Movement } from '../src/wallets/movements.js';

// The wallet's saga steps of a transaction (D13.2, D13.3) on real Postgres and JetStream:
// hold, return and settle keyed by the transaction id, in every order and repeated, each answered
// with the hold's state; the ledger check after all of it.

let database: TestDatabase;
let bus: Bus;
let dispose: () => Promise<void>;
let wallet: WalletService;
const answers: MessageEnvelope<{ transactionId: string; attempt?: number; reason?: string; amountCents?: number; feeCents?: number }>[] = [];
const childAnswers: MessageEnvelope<{ childAgentId: string; reason?: string; availableCents?: number; budgetCents?: number }>[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  ({ bus, dispose } = await createTestBus('jetstream'));
  const config = loadConfig({}, { BUS_NAMESPACE: bus.namespace, PAYMENTS_PROVIDER: 'sandbox' });
  wallet = await startWalletService({ bus, databaseUrl: database.url, config, logger: testLogger() });
  await bus.consume({ stream: 'events', durable: 'observer', filter: `${bus.namespace}.evt.wallet.hold.>`, handler: async (m) => (answers.push(m.data as (typeof answers)[number]), ack()) });
  await bus.consume({ stream: 'events', durable: 'child-observer', filter: `${bus.namespace}.evt.wallet.child.>`, handler: async (m) => (childAnswers.push(m.data as (typeof childAnswers)[number]), ack()) });
});
afterAll(async () => {
  await wallet?.stop();
  await dispose?.();
  await database?.drop();
});

async function send<M extends MessageDef>(def: M, data: Static<M['data']>): Promise<void> {
  const id = randomUUID();
  await bus.publish(subjects.command(bus.namespace, def.type), { id, type: def.type, occurredAt: new Date().toISOString(), data }, { msgId: id });
}

/** Funds an agent's wallet through the wallet's own operation (sandbox payments). */
async function fundAgent(agentId: string, cents: number): Promise<void> {
  const { accountId } = await wallet.deps.db.selectFrom('wallets').select('accountId').where('agentId', '=', agentId).executeTakeFirstOrThrow();
  const principal: Principal = { agentId, accountId: accountId!, isOwner: true, status: 'active', parentAgentId: null, signingKeyPublic: null };
  await callOrThrow(bus, walletOps.fund, { ctx: { requestId: randomUUID(), principal }, input: { path: { agentId }, query: {}, body: { amountCents: cents } } }, 5000);
}

/** An agent with an open wallet holding `cents`. */
async function agentWith(cents: number): Promise<string> {
  const agentId = randomUUID();
  await send(commands.openWallet, { operationId: agentId, agentId, accountId: randomUUID() });
  await eventually(async () => (await wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', agentId).executeTakeFirst()) ?? null);
  if (cents > 0) await fundAgent(agentId, cents);
  return agentId;
}

const balances = async (agentId: string) => wallet.deps.db.selectFrom('wallets').select(['balanceCents', 'heldCents']).where('agentId', '=', agentId).executeTakeFirstOrThrow();
const answered = (transactionId: string, type: string, n = 1) => eventually(async () => {
  const found = answers.filter((a) => a.data.transactionId === transactionId && a.type === type);
  return found.length >= n ? found : null;
});

describe('hold, return and settle', () => {
  it('holds once however often asked, then settles once: the provider paid minus the fee, the fee to the platform', async () => {
    const [consumer, provider] = [await agentWith(5000), await agentWith(0)];
    const tx = randomUUID();
    await send(walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 1000, attempt: 1 });
    await send(walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 1000, attempt: 1 });
    await answered(tx, walletSaga.holdPlaced.type, 2);
    expect(await balances(consumer)).toEqual({ balanceCents: 5000, heldCents: 1000 });
    await send(walletSaga.settle, { transactionId: tx, providerAgentId: provider, amountCents: 1000, feeCents: 50 });
    await send(walletSaga.settle, { transactionId: tx, providerAgentId: provider, amountCents: 1000, feeCents: 50 });
    await answered(tx, walletSaga.holdSettled.type, 2);
    // A return after the settlement changes nothing and says so.
    await send(walletSaga.returnHold, { transactionId: tx });
    await answered(tx, walletSaga.holdSettled.type, 3);
    expect(await balances(consumer)).toEqual({ balanceCents: 4000, heldCents: 0 });
    expect(await balances(provider)).toEqual({ balanceCents: 950, heldCents: 0 });
    const platform = await wallet.deps.db.selectFrom('wallets').select('balanceCents').where('kind', '=', 'platform').executeTakeFirstOrThrow();
    expect(platform.balanceCents).toBeGreaterThanOrEqual(50);
  });

  it('settles in part (D12.8): the refund back to the consumer, the rest paid with the fee on it, once', async () => {
    const [consumer, provider] = [await agentWith(5000), await agentWith(0)];
    const tx = randomUUID();
    await send(walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 1000, attempt: 1 });
    await answered(tx, walletSaga.holdPlaced.type);
    // 300 refunded, 700 paid, the fee on the 700.
    for (let i = 0; i < 2; i++) await send(walletSaga.settle, { transactionId: tx, providerAgentId: provider, amountCents: 1000, feeCents: 35, refundCents: 300 });
    const [answer] = await answered(tx, walletSaga.holdSettled.type, 2);
    expect(answer!.data).toMatchObject({ amountCents: 1000, feeCents: 35, refundCents: 300 });
    expect(await balances(consumer)).toEqual({ balanceCents: 4300, heldCents: 0 });
    expect(await balances(provider)).toEqual({ balanceCents: 665, heldCents: 0 });
    const entries = await wallet.deps.db.selectFrom('ledgerEntries').select(['txType', 'amountCents']).where('transactionId', '=', tx).orderBy('seq').execute();
    expect(entries.map((e) => [e.txType, e.amountCents])).toEqual([
      ['fund_hold', -1000], ['fund_return', 300], ['fund_release', 700], ['settlement_out', -700], ['settlement_in', 700], ['platform_fee', -35], ['platform_fee', 35],
    ]);
    expect((await checkLedgerInvariants(wallet.deps)).violations).toEqual([]);
  });

  it('refuses a hold beyond the available balance; the same attempt stays refused, a later one is placed once funded', async () => {
    const consumer = await agentWith(500);
    const tx = randomUUID();
    await send(walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 800, attempt: 1 });
    const [refused] = await answered(tx, walletSaga.holdRefused.type);
    expect(refused!.data).toMatchObject({ reason: 'insufficient_funds', attempt: 1, availableCents: 500, requiredCents: 800 });
    await fundAgent(consumer, 500);
    await send(walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 800, attempt: 1 });
    await answered(tx, walletSaga.holdRefused.type, 2);
    expect(await balances(consumer)).toEqual({ balanceCents: 1000, heldCents: 0 });
    await send(walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 800, attempt: 2 });
    const [placed] = await answered(tx, walletSaga.holdPlaced.type);
    expect(placed!.data).toMatchObject({ attempt: 2, amountCents: 800 });
    expect(await balances(consumer)).toEqual({ balanceCents: 1000, heldCents: 800 });
  });

  it('returns a hold once, and a return that comes first closes the hold for good', async () => {
    const consumer = await agentWith(3000);
    const first = randomUUID();
    await send(walletSaga.holdFunds, { transactionId: first, consumerAgentId: consumer, amountCents: 700, attempt: 1 });
    await answered(first, walletSaga.holdPlaced.type);
    await send(walletSaga.returnHold, { transactionId: first });
    await send(walletSaga.returnHold, { transactionId: first });
    await answered(first, walletSaga.holdReturned.type, 2);
    expect(await balances(consumer)).toEqual({ balanceCents: 3000, heldCents: 0 });

    const early = randomUUID();
    await send(walletSaga.returnHold, { transactionId: early });
    await answered(early, walletSaga.holdRefused.type);
    await send(walletSaga.holdFunds, { transactionId: early, consumerAgentId: consumer, amountCents: 700, attempt: 1 });
    const refusals = await answered(early, walletSaga.holdRefused.type, 2);
    expect(refusals.map((r) => r.data.reason)).toEqual(['closed', 'closed']);
    expect(await balances(consumer)).toEqual({ balanceCents: 3000, heldCents: 0 });
  });

  it('settles nothing of a hold it placed that was returned since (what the replica remembers of it is stale)', async () => {
    const [consumer, provider] = [await agentWith(3000), await agentWith(0)];
    // Two holds: once the first is returned, the wallet still holds enough for the stale settlement
    // to look possible, so only the condition on the hold's row stops it.
    const [tx, other] = [randomUUID(), randomUUID()];
    for (const id of [tx, other]) {
      await send(walletSaga.holdFunds, { transactionId: id, consumerAgentId: consumer, amountCents: 700, attempt: 1 });
      await answered(id, walletSaga.holdPlaced.type);
    }
    // Returned by another replica, as it would: this replica's memory of the hold still says placed.
    await inTransaction(wallet.deps.db, async (trx) => {
      const now = new Date();
      await applyMovements(trx, `return:${tx}`, [{ walletId: (await wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', consumer).executeTakeFirstOrThrow()).id, txType: 'fund_return', amountCents: 700, transactionId: tx, description: 'returned elsewhere' }], now, { onceByCaller: true });
      await trx.updateTable('holds').set({ status: 'returned', closedAt: now }).where('transactionId', '=', tx).execute();
    });
    await send(walletSaga.settle, { transactionId: tx, providerAgentId: provider, amountCents: 700, feeCents: 35 });
    const answers = await answered(tx, walletSaga.holdReturned.type);
    expect(answers[0]!.data).toMatchObject({ amountCents: 700 });
    expect(await balances(consumer)).toEqual({ balanceCents: 3000, heldCents: 700 });
    expect(await balances(provider)).toEqual({ balanceCents: 0, heldCents: 0 });
    // The other hold settles as usual.
    await send(walletSaga.settle, { transactionId: other, providerAgentId: provider, amountCents: 700, feeCents: 35 });
    await answered(other, walletSaga.holdSettled.type);
    expect(await balances(consumer)).toEqual({ balanceCents: 2300, heldCents: 0 });
    expect(await balances(provider)).toEqual({ balanceCents: 665, heldCents: 0 });
  });

  it('never places a refused hold after its return, even for a newer attempt (a cancel racing a second accept)', async () => {
    const consumer = await agentWith(500);
    const tx = randomUUID();
    await send(walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 900, attempt: 1 });
    await answered(tx, walletSaga.holdRefused.type);
    await send(walletSaga.returnHold, { transactionId: tx });
    await answered(tx, walletSaga.holdRefused.type, 2);
    await fundAgent(consumer, 1000);
    await send(walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 900, attempt: 2 });
    const refusals = await answered(tx, walletSaga.holdRefused.type, 3);
    expect(refusals.at(-1)!.data.reason).toBe('closed');
    expect(await balances(consumer)).toEqual({ balanceCents: 1500, heldCents: 0 });
  });

  it('decides a transaction’s first hold and a return sent at once in one order or the other: held then returned, or closed', async () => {
    const consumer = await agentWith(10_000);
    const txs = Array.from({ length: 12 }, () => randomUUID());
    await Promise.all(txs.flatMap((tx) => [
      send(walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 300, attempt: 1 }),
      send(walletSaga.returnHold, { transactionId: tx }),
    ]));
    for (const tx of txs) {
      // One answer to each command; the hold ends returned or closed, never held.
      const last = await eventually(async () => {
        const mine = answers.filter((a) => a.data.transactionId === tx);
        return mine.length >= 2 ? mine : null;
      });
      expect(last.map((a) => a.type).sort()).toSatisfy((types: string[]) =>
        JSON.stringify(types) === JSON.stringify([walletSaga.holdPlaced.type, walletSaga.holdReturned.type].sort())
        || JSON.stringify(types) === JSON.stringify([walletSaga.holdRefused.type, walletSaga.holdRefused.type]));
      const hold = await wallet.deps.db.selectFrom('holds').select(['status', 'refusal']).where('transactionId', '=', tx).executeTakeFirstOrThrow();
      expect(['returned', 'refused:closed']).toContain(hold.status === 'refused' ? `refused:${hold.refusal}` : hold.status);
    }
    expect(await balances(consumer)).toEqual({ balanceCents: 10_000, heldCents: 0 });
  });

  it('leaves every invariant of the ledger holding, holds included', async () => {
    const report = await checkLedgerInvariants(wallet.deps);
    expect(report.violations).toEqual([]);
  });
});

describe('a child’s wallet (D6.8, D13.2)', () => {
  const childAnswered = (childAgentId: string, type: string, n = 1) => eventually(async () => {
    const found = childAnswers.filter((a) => a.data.childAgentId === childAgentId && a.type === type);
    return found.length >= n ? found : null;
  });
  const spawn = async (parent: string, budgetCents: number) => {
    const child = randomUUID();
    await send(childSaga.allocate, { childAgentId: child, parentAgentId: parent, accountId: randomUUID(), budgetCents });
    return child;
  };

  it('moves the budget once however often asked, and keeps a refusal even once the parent could pay', async () => {
    const parent = await agentWith(1000);
    const child = await spawn(parent, 600);
    await send(childSaga.allocate, { childAgentId: child, parentAgentId: parent, accountId: randomUUID(), budgetCents: 600 });
    const funded = await childAnswered(child, childSaga.funded.type, 2);
    expect(funded.map((a) => a.data.budgetCents)).toEqual([600, 600]);
    expect(await balances(parent)).toEqual({ balanceCents: 400, heldCents: 0 });
    expect(await balances(child)).toEqual({ balanceCents: 600, heldCents: 0 });

    const refused = await spawn(parent, 401);
    expect((await childAnswered(refused, childSaga.refused.type))[0]!.data).toEqual({ childAgentId: refused, reason: 'insufficient_funds', availableCents: 400, requiredCents: 401 });
    await fundAgent(parent, 1000);
    await send(childSaga.allocate, { childAgentId: refused, parentAgentId: parent, accountId: randomUUID(), budgetCents: 401 });
    expect((await childAnswered(refused, childSaga.refused.type, 2)).map((a) => a.data.reason)).toEqual(['insufficient_funds', 'insufficient_funds']);
    expect(await wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', refused).executeTakeFirst()).toBeUndefined();
    expect(await balances(parent)).toEqual({ balanceCents: 1400, heldCents: 0 });

    const orphan = await spawn(randomUUID(), 100);
    expect((await childAnswered(orphan, childSaga.refused.type))[0]!.data.reason).toBe('no_wallet');
  });

  it('closes once: the available balance returns, and so does everything that reaches the closed wallet later', async () => {
    const [parent, seller] = [await agentWith(3000), await agentWith(2000)];
    const child = await spawn(parent, 2000);
    await childAnswered(child, childSaga.funded.type);
    // The child buys twice and sells once before it expires.
    const [bought, returned, sold] = [randomUUID(), randomUUID(), randomUUID()];
    await send(walletSaga.holdFunds, { transactionId: bought, consumerAgentId: child, amountCents: 500, attempt: 1 });
    await send(walletSaga.holdFunds, { transactionId: returned, consumerAgentId: child, amountCents: 300, attempt: 1 });
    await send(walletSaga.holdFunds, { transactionId: sold, consumerAgentId: seller, amountCents: 400, attempt: 1 });
    for (const t of [bought, returned, sold]) await answered(t, walletSaga.holdPlaced.type);
    await send(childSaga.close, { childAgentId: child });
    await send(childSaga.close, { childAgentId: child });
    await eventually(async () => (await balances(parent)).balanceCents === 2200 || null);
    expect(await balances(child)).toEqual({ balanceCents: 800, heldCents: 800 });
    // A settlement pays the seller; a return and a sale to the expired child go on to the parent.
    await send(walletSaga.settle, { transactionId: bought, providerAgentId: seller, amountCents: 500, feeCents: 25 });
    await send(walletSaga.returnHold, { transactionId: returned });
    await send(walletSaga.settle, { transactionId: sold, providerAgentId: child, amountCents: 400, feeCents: 20 });
    for (const [t, type] of [[bought, walletSaga.holdSettled.type], [returned, walletSaga.holdReturned.type], [sold, walletSaga.holdSettled.type]] as const) await answered(t, type);
    expect(await balances(child)).toEqual({ balanceCents: 0, heldCents: 0 });
    expect(await balances(parent)).toEqual({ balanceCents: 2200 + 300 + 380, heldCents: 0 });
    const kinds = await wallet.deps.db.selectFrom('ledgerEntries as e').innerJoin('wallets as w', 'w.id', 'e.walletId')
      .select(['e.txType', 'e.amountCents']).where('w.agentId', '=', parent).where('e.txType', 'in', ['parent_allocation', 'parent_return']).orderBy('e.seq').execute();
    // The allocation and the return at closing, then the two late returns in whichever order they came.
    const moved = kinds.map((k) => [k.txType, k.amountCents] as const);
    expect(moved.slice(0, 2)).toEqual([['parent_allocation', -2000], ['parent_return', 1200]]);
    expect(moved.slice(2).map(([, n]) => n).sort()).toEqual([300, 380]);
    const report = await checkLedgerInvariants(wallet.deps);
    expect(report.violations).toEqual([]);
  });
});

describe('holds and settlements on wallets the replica knows, without reading them first', () => {
  const walletOf = async (agentId: string) => (await wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', agentId).executeTakeFirstOrThrow()).id;
  /** Every entry of the wallet, in order, carries the balances its movement left (D13.2). */
  const expectEntriesChained = async (agentId: string) => {
    const walletId = await walletOf(agentId);
    const entries = await wallet.deps.db.selectFrom('ledgerEntries').select(['txType', 'amountCents', 'balanceAfterCents', 'availableAfterCents']).where('walletId', '=', walletId).orderBy('seq').execute();
    let balance = 0;
    let available = 0;
    for (const e of entries) {
      if (!['fund_hold', 'fund_return', 'fund_release'].includes(e.txType)) balance += e.amountCents;
      available += e.amountCents;
      expect([e.txType, e.balanceAfterCents, e.availableAfterCents]).toEqual([e.txType, balance, available]);
    }
    const w = await balances(agentId);
    expect([w.balanceCents, w.balanceCents - w.heldCents]).toEqual([balance, available]);
  };

  it('writes the movements with the step’s own row at commit, each entry with the balances it left', async () => {
    const consumer = await agentWith(2000);
    const walletId = await walletOf(consumer);
    const tx = randomUUID();
    const movements: Movement[] = [{ walletId, txType: 'fund_hold', amountCents: -700, transactionId: tx, description: 'held' }];
    let attempts = 0;
    await inTransaction(wallet.deps.db, async (trx, work) => {
      attempts++;
      const now = new Date();
      const row = trx.insertInto('holds').values({ transactionId: tx, walletId, amountCents: 700, attempt: 1, status: 'held', refusal: null, providerWalletId: null, feeCents: null, refundCents: 0, createdAt: now, closedAt: null }).returning('transactionId');
      expect(moveAtCommit(work, `hold:${tx}`, movements, now, row)).toBe(true);
    });
    expect(attempts).toBe(1);
    expect(await balances(consumer)).toEqual({ balanceCents: 2000, heldCents: 700 });
    await expectEntriesChained(consumer);
  });

  it('writes nothing when a wallet has too little, or the step’s row is not written; the step then runs again the ordinary way', async () => {
    const consumer = await agentWith(500);
    const walletId = await walletOf(consumer);
    const entriesBefore = await wallet.deps.db.selectFrom('ledgerEntries').select('id').where('walletId', '=', walletId).execute();
    for (const [amount, rowWritten] of [[600, true], [100, false]] as const) {
      const tx = randomUUID();
      const asked: boolean[] = [];
      await inTransaction(wallet.deps.db, async (trx, work) => {
        const now = new Date();
        // A row written only when `rowWritten` (an insert of nothing when not).
        const row = trx.insertInto('holds').columns(['transactionId', 'walletId', 'amountCents', 'attempt', 'status', 'createdAt'])
          .expression(trx.selectNoFrom((eb) => [eb.val(tx).as('transactionId'), eb.val(walletId).as('walletId'), eb.val(amount).as('amountCents'), eb.val(1).as('attempt'), eb.val('held').as('status'), eb.val(now).as('createdAt')]).where(sql<boolean>`${rowWritten}`))
          .returning('transactionId');
        asked.push(moveAtCommit(work, `hold:${tx}`, [{ walletId, txType: 'fund_hold', amountCents: -amount, transactionId: tx, description: 'held' }], now, row));
      });
      // Tried at commit, undone, then not possible on the second run (the caller moves the ordinary way there).
      expect(asked).toEqual([true, false]);
      expect(await wallet.deps.db.selectFrom('holds').select('status').where('transactionId', '=', tx).executeTakeFirst()).toBeUndefined();
    }
    expect(await balances(consumer)).toEqual({ balanceCents: 500, heldCents: 0 });
    expect(await wallet.deps.db.selectFrom('ledgerEntries').select('id').where('walletId', '=', walletId).execute()).toEqual(entriesBefore);
  });

  it('refuses through the saga a hold beyond what a wallet it knows has, with the balance the ordinary way reads', async () => {
    const consumer = await agentWith(1000);
    const [first, second] = [randomUUID(), randomUUID()];
    await send(walletSaga.holdFunds, { transactionId: first, consumerAgentId: consumer, amountCents: 600, attempt: 1 });
    await answered(first, walletSaga.holdPlaced.type);
    await send(walletSaga.holdFunds, { transactionId: second, consumerAgentId: consumer, amountCents: 600, attempt: 1 });
    const [refused] = await answered(second, walletSaga.holdRefused.type);
    expect(refused!.data).toMatchObject({ reason: 'insufficient_funds', availableCents: 400, requiredCents: 600 });
    expect(await balances(consumer)).toEqual({ balanceCents: 1000, heldCents: 600 });
  });

  it('keeps every entry exact under concurrent holds and settlements of shared wallets, the fee wallet included', async () => {
    const [a, b, provider] = [await agentWith(10_000), await agentWith(10_000), await agentWith(0)];
    const txs = Array.from({ length: 24 }, (_, i) => ({ id: randomUUID(), consumer: i % 2 === 0 ? a : b, amount: 100 + i }));
    await Promise.all(txs.map((t) => send(walletSaga.holdFunds, { transactionId: t.id, consumerAgentId: t.consumer, amountCents: t.amount, attempt: 1 })));
    for (const t of txs) await answered(t.id, walletSaga.holdPlaced.type);
    await Promise.all(txs.map((t, i) => send(walletSaga.settle, { transactionId: t.id, providerAgentId: provider, amountCents: t.amount, feeCents: 5, ...(i % 3 === 0 ? { refundCents: 50 } : {}) })));
    for (const t of txs) await answered(t.id, walletSaga.holdSettled.type);
    const paid = (of: string) => txs.filter((t) => t.consumer === of).reduce((sum, t) => sum + t.amount - (txs.indexOf(t) % 3 === 0 ? 50 : 0), 0);
    expect(await balances(a)).toEqual({ balanceCents: 10_000 - paid(a), heldCents: 0 });
    expect(await balances(b)).toEqual({ balanceCents: 10_000 - paid(b), heldCents: 0 });
    expect(await balances(provider)).toEqual({ balanceCents: paid(a) + paid(b) - 5 * txs.length, heldCents: 0 });
    for (const agent of [a, b, provider]) await expectEntriesChained(agent);
    expect((await checkLedgerInvariants(wallet.deps)).violations).toEqual([]);
  });
});

describe('fundings by group commit', () => {
  const walletOf = async (agentId: string) => (await wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', agentId).executeTakeFirstOrThrow()).id;
  const funding = async (agentId: string, amountCents: number) => ({ agentId, walletId: await walletOf(agentId), amountCents, sessionId: `cs_test_${randomUUID()}`, provider: 'sandbox' });
  /** A child of `parent`, its budget allocated, then closed (its money back with the parent). */
  const closedChildOf = async (parent: string) => {
    const child = randomUUID();
    const before = (await balances(parent)).balanceCents;
    await send(childSaga.allocate, { childAgentId: child, parentAgentId: parent, accountId: randomUUID(), budgetCents: 1000 });
    await eventually(async () => childAnswers.some((x) => x.data.childAgentId === child && x.type === childSaga.funded.type) || null);
    await send(childSaga.close, { childAgentId: child });
    await eventually(async () => (await wallet.deps.db.selectFrom('wallets').select('closedAt').where('agentId', '=', child).executeTakeFirstOrThrow()).closedAt !== null || null);
    await eventually(async () => (await balances(parent)).balanceCents === before || null);
    return child;
  };
  /** The fundings' entries: which database transaction wrote each, and the balance it left. */
  const entriesOf = async (sessions: string[]) => (await sql<{ operationId: string; tx: string; balanceAfterCents: string }>`
    select operation_id, xmin::text as tx, balance_after_cents from ledger_entries where operation_id = any(${sessions}) order by seq`.execute(wallet.deps.db)).rows;

  it('writes a batch in one statement, each funding answered with the balance its own entry left', async () => {
    const [a, b] = [await agentWith(0), await agentWith(1000)];
    const fundings = await Promise.all([a, b, a, b, a, a].map((agent, i) => funding(agent, 500 + i)));
    // At most two batches are in flight: what arrives meanwhile waits and goes together. Which
    // funding joins which batch depends on when each arrives, so the figures are checked in the
    // order the entries were written, not in the order of submission.
    const answers = await Promise.all(fundings.map((f) => wallet.deps.fundings.submit(f)));
    const entries = await entriesOf(fundings.map((f) => f.sessionId));
    expect(entries.map((e) => [e.operationId, Number(e.balanceAfterCents)]).sort()).toEqual(fundings.map((f, i) => [f.sessionId, answers[i]]).sort());
    for (const [agent, opening] of [[a, 0], [b, 1000]] as const) {
      let balance = opening;
      for (const e of entries) {
        const f = fundings.find((x) => x.sessionId === e.operationId)!;
        if (f.agentId !== agent) continue;
        balance += f.amountCents;
        expect(Number(e.balanceAfterCents)).toBe(balance);
      }
    }
    // Six fundings in fewer database transactions than six: batches were written.
    expect(new Set(entries.map((e) => e.tx)).size).toBeLessThan(6);
    const sessions = await wallet.deps.db.selectFrom('fundingSessions').select(['id', 'status']).where('id', 'in', fundings.map((f) => f.sessionId)).execute();
    expect(sessions.map((s) => s.status)).toEqual(Array(6).fill('paid'));
    expect(await balances(a)).toEqual({ balanceCents: 500 + 502 + 504 + 505, heldCents: 0 });
    expect((await checkLedgerInvariants(wallet.deps)).violations).toEqual([]);
  });

  it('writes a batch holding a closed child’s wallet the ordinary way: that funding is refused (null, D6.8), the others written', async () => {
    const [parent, other, third] = [await agentWith(3000), await agentWith(0), await agentWith(0)];
    const child = await closedChildOf(parent);
    // Two fundings to keep both batches in flight busy, then a batch of three with the closed wallet in it.
    const fundings = await Promise.all([other, third, other, child, other].map((agent) => funding(agent, 700)));
    const answers = await Promise.all(fundings.map((f) => wallet.deps.fundings.submit(f)));
    expect(answers[3]).toBeNull();
    expect(answers[1]).toBe(700);
    const entries = await entriesOf(fundings.map((f) => f.sessionId));
    expect(entries.map((e) => e.operationId)).not.toContain(fundings[3]!.sessionId);
    // `other`'s three fundings, in the order they were written (which batch each joined depends on
    // when it arrived): 700, 1400, 2100, each answered with the balance its own entry left.
    const others = entries.filter((e) => [0, 2, 4].some((i) => fundings[i]!.sessionId === e.operationId));
    expect(others.map((e) => Number(e.balanceAfterCents))).toEqual([700, 1400, 2100]);
    expect(others.map((e) => answers[fundings.findIndex((f) => f.sessionId === e.operationId)])).toEqual([700, 1400, 2100]);
    const sessions = await wallet.deps.db.selectFrom('fundingSessions').select('id').where('id', 'in', fundings.map((f) => f.sessionId)).execute();
    expect(sessions.map((s) => s.id).sort()).toEqual(fundings.filter((_, i) => i !== 3).map((f) => f.sessionId).sort());
    expect(await balances(child)).toEqual({ balanceCents: 0, heldCents: 0 });
    expect(await balances(parent)).toEqual({ balanceCents: 3000, heldCents: 0 });
    expect((await checkLedgerInvariants(wallet.deps)).violations).toEqual([]);
  });

  it('funds a wallet it has funded before without reading it, and still refuses one closed since (409) and callers it never allowed (404)', async () => {
    const parent = await agentWith(3000);
    const { accountId } = await wallet.deps.db.selectFrom('wallets').select('accountId').where('agentId', '=', parent).executeTakeFirstOrThrow();
    const child = randomUUID();
    await send(childSaga.allocate, { childAgentId: child, parentAgentId: parent, accountId: accountId!, budgetCents: 1000 });
    await eventually(async () => childAnswers.some((x) => x.data.childAgentId === child && x.type === childSaga.funded.type) || null);
    const as = (agentId: string, isOwner = false, account = accountId!): Principal => ({ agentId, accountId: account, isOwner, status: 'active', parentAgentId: null, signingKeyPublic: null });
    const fundAs = (principal: Principal, keyed = false) => callOperation(bus, walletOps.fund, {
      ctx: { requestId: randomUUID(), principal, ...(keyed ? { idempotency: { key: randomUUID(), scope: `agent:${principal.agentId}`, fingerprint: randomUUID() } } : {}) },
      input: { path: { agentId: child }, query: {}, body: { amountCents: 500 } },
    }, { timeoutMs: 5000 });
    // The parent funds its child (D6.8): the wallet is then known to this replica.
    const first = await fundAs(as(parent));
    expect(first.ok && first.data).toMatchObject({ funded: true, newBalanceCents: 1500 });
    expect(wallet.deps.access.get(child)).toMatchObject({ agentId: child, parentAgentId: parent });
    // Known, it still answers 404 to an agent of another account and to a sibling that is not the owner.
    for (const stranger of [as(randomUUID(), true, randomUUID()), as(randomUUID())]) {
      const r = await fundAs(stranger);
      expect(!r.ok && r.status).toBe(404);
    }
    await send(childSaga.close, { childAgentId: child });
    await eventually(async () => (await balances(parent)).balanceCents === 3000 - 1000 + 1500 || null);
    for (const keyed of [false, true]) {
      const r = await fundAs(as(parent), keyed);
      expect(!r.ok && [r.status, r.errors[0]?.code]).toEqual([409, 'INVALID_STATE']);
    }
    expect(await balances(child)).toEqual({ balanceCents: 0, heldCents: 0 });
    expect(await balances(parent)).toEqual({ balanceCents: 3500, heldCents: 0 });
    expect((await checkLedgerInvariants(wallet.deps)).violations).toEqual([]);
  });
});
