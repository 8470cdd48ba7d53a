import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childSaga, walletSaga } from '@aex/contracts';
import { eventually } from '@aex/platform/testing';
import { checkLedgerInvariants } from '../src/wallets/check.js';
import { agentWith, answered, balances, childAnswered, fundAgent, send, spawn, startSagaKit, type SagaKit } from './saga-kit.js';

// A child agent's wallet (D6.8, D13.2) on real Postgres and JetStream: its budget moved from the
// parent's once however often asked, or the spawn refused for good; at expiry its available balance
// returned to the parent, and so is whatever reaches the closed wallet later, in the database
// transaction that frees it.

let kit: SagaKit;
beforeAll(async () => {
  kit = await startSagaKit();
});
afterAll(async () => kit?.stop());

describe('a child’s wallet (D6.8, D13.2)', () => {
  it('moves the budget once however often asked, and keeps a refusal even once the parent could pay', async () => {
    const parent = await agentWith(kit, 1000);
    const child = await spawn(kit, parent, 600);
    await send(kit, childSaga.allocate, { childAgentId: child, parentAgentId: parent, accountId: randomUUID(), budgetCents: 600 });
    const funded = await childAnswered(kit, child, childSaga.funded.type, 2);
    expect(funded.map((a) => a.data.budgetCents)).toEqual([600, 600]);
    expect(await balances(kit, parent)).toEqual({ balanceCents: 400, heldCents: 0 });
    expect(await balances(kit, child)).toEqual({ balanceCents: 600, heldCents: 0 });

    const refused = await spawn(kit, parent, 401);
    expect((await childAnswered(kit, refused, childSaga.refused.type))[0]!.data).toEqual({ childAgentId: refused, reason: 'insufficient_funds', availableCents: 400, requiredCents: 401 });
    await fundAgent(kit, parent, 1000);
    await send(kit, childSaga.allocate, { childAgentId: refused, parentAgentId: parent, accountId: randomUUID(), budgetCents: 401 });
    expect((await childAnswered(kit, refused, childSaga.refused.type, 2)).map((a) => a.data.reason)).toEqual(['insufficient_funds', 'insufficient_funds']);
    expect(await kit.wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', refused).executeTakeFirst()).toBeUndefined();
    expect(await balances(kit, parent)).toEqual({ balanceCents: 1400, heldCents: 0 });

    const orphan = await spawn(kit, randomUUID(), 100);
    expect((await childAnswered(kit, orphan, childSaga.refused.type))[0]!.data.reason).toBe('no_wallet');
  });

  it('opens the wallet of a spawn without budget empty, and closes a wallet with nothing available without an entry', async () => {
    const parent = await agentWith(kit, 1000);
    const child = await spawn(kit, parent, 0);
    const [funded] = await childAnswered(kit, child, childSaga.funded.type);
    expect(funded!.data).toMatchObject({ budgetCents: 0 });
    expect(await balances(kit, child)).toEqual({ balanceCents: 0, heldCents: 0 });
    await send(kit, childSaga.close, { childAgentId: child });
    const closed = await eventually(async () => (await kit.wallet.deps.db.selectFrom('wallets').select(['id', 'closedAt']).where('agentId', '=', child).executeTakeFirstOrThrow()).closedAt && true);
    expect(closed).toBe(true);
    const entries = await kit.wallet.deps.db.selectFrom('ledgerEntries as e').innerJoin('wallets as w', 'w.id', 'e.walletId').select('e.id').where('w.agentId', 'in', [parent, child]).where('e.txType', '<>', 'fund').execute();
    expect(entries).toEqual([]);
    expect(await balances(kit, parent)).toEqual({ balanceCents: 1000, heldCents: 0 });
  });

  it('decides a spawn asked twice at once once: one wallet, one budget moved, both answered funded', async () => {
    const parent = await agentWith(kit, 1000);
    const child = randomUUID();
    const accountId = randomUUID();
    await Promise.all([1, 2].map(() => send(kit, childSaga.allocate, { childAgentId: child, parentAgentId: parent, accountId, budgetCents: 700 })));
    const funded = await childAnswered(kit, child, childSaga.funded.type, 2);
    expect(new Set(funded.map((a) => (a.data as { walletId?: string }).walletId)).size).toBe(1);
    expect(await balances(kit, parent)).toEqual({ balanceCents: 300, heldCents: 0 });
    expect(await balances(kit, child)).toEqual({ balanceCents: 700, heldCents: 0 });
  });

  it('closes once: the available balance returns, and so does everything that reaches the closed wallet later', async () => {
    const [parent, seller] = [await agentWith(kit, 3000), await agentWith(kit, 2000)];
    const child = await spawn(kit, parent, 2000);
    await childAnswered(kit, child, childSaga.funded.type);
    // The child buys twice and sells once before it expires.
    const [bought, returned, sold] = [randomUUID(), randomUUID(), randomUUID()];
    await send(kit, walletSaga.holdFunds, { transactionId: bought, consumerAgentId: child, amountCents: 500, attempt: 1 });
    await send(kit, walletSaga.holdFunds, { transactionId: returned, consumerAgentId: child, amountCents: 300, attempt: 1 });
    await send(kit, walletSaga.holdFunds, { transactionId: sold, consumerAgentId: seller, amountCents: 400, attempt: 1 });
    for (const t of [bought, returned, sold]) await answered(kit, t, walletSaga.holdPlaced.type);
    await send(kit, childSaga.close, { childAgentId: child });
    await send(kit, childSaga.close, { childAgentId: child });
    await eventually(async () => (await balances(kit, parent)).balanceCents === 2200 || null);
    expect(await balances(kit, child)).toEqual({ balanceCents: 800, heldCents: 800 });
    // A settlement pays the seller; a return and a sale to the expired child go on to the parent.
    await send(kit, walletSaga.settle, { transactionId: bought, providerAgentId: seller, amountCents: 500, feeCents: 25 });
    await send(kit, walletSaga.returnHold, { transactionId: returned });
    await send(kit, walletSaga.settle, { transactionId: sold, providerAgentId: child, amountCents: 400, feeCents: 20 });
    for (const [t, type] of [[bought, walletSaga.holdSettled.type], [returned, walletSaga.holdReturned.type], [sold, walletSaga.holdSettled.type]] as const) await answered(kit, t, type);
    expect(await balances(kit, child)).toEqual({ balanceCents: 0, heldCents: 0 });
    expect(await balances(kit, parent)).toEqual({ balanceCents: 2200 + 300 + 380, heldCents: 0 });
    const kinds = await kit.wallet.deps.db.selectFrom('ledgerEntries as e').innerJoin('wallets as w', 'w.id', 'e.walletId')
      .select(['e.txType', 'e.amountCents']).where('w.agentId', '=', parent).where('e.txType', 'in', ['parent_allocation', 'parent_return']).orderBy('e.seq').execute();
    // The allocation and the return at closing, then the two late returns in whichever order they came.
    const moved = kinds.map((k) => [k.txType, k.amountCents] as const);
    expect(moved.slice(0, 2)).toEqual([['parent_allocation', -2000], ['parent_return', 1200]]);
    expect(moved.slice(2).map(([, n]) => n).sort()).toEqual([300, 380]);
    const report = await checkLedgerInvariants(kit.wallet.deps);
    expect(report.violations).toEqual([]);
  });
});

