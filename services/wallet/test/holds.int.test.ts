import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walletSaga } from '@aex/contracts';
import { AggregateRunner } from '@aex/platform';
import { eventually } from '@aex/platform/testing';
import { checkLedgerInvariants } from '../src/wallets/check.js';
import { holdAggregate } from '../src/wallets/holds.js';
import { WalletDirectory } from '../src/wallets/wallet-directory.js';
import { agentWith, answered, balances, entriesChained, fundAgent, send, startSagaKit, type SagaKit } from './saga-kit.js';

// The wallet's saga steps of a transaction (D13.2, D13.3) on real Postgres and JetStream: hold,
// return and settle keyed by the transaction id, in every order and repeated, each answered with the
// hold's state — decided first on what the replica remembers (a transaction's first hold on no row
// and the funds presumed, a settle on the hold it placed), written at commit only if that still
// holds; the ledger check after all of it.

let kit: SagaKit;
beforeAll(async () => {
  kit = await startSagaKit();
});
afterAll(async () => kit?.stop());

/** Whether each write at commit the wallet made while `fn` ran wrote (false: undone, decided again on what it then locked). */
async function writesAtCommit(fn: () => Promise<void>): Promise<boolean[]> {
  const tx = kit.wallet.deps.tx;
  const outcomes: boolean[] = [];
  const runWriting = tx.runWriting.bind(tx);
  tx.runWriting = async (work) => {
    const result = await runWriting(work);
    outcomes.push(result.written);
    return result;
  };
  try {
    await fn();
  } finally {
    tx.runWriting = runWriting;
  }
  return outcomes;
}

describe('holding (D9.9, D13.2)', () => {
  it('refuses a hold beyond the available balance; the same attempt stays refused, a later one is placed once funded', async () => {
    const consumer = await agentWith(kit, 500);
    const tx = randomUUID();
    await send(kit, walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 800, attempt: 1 });
    const [refused] = await answered(kit, tx, walletSaga.holdRefused.type);
    expect(refused!.data).toMatchObject({ reason: 'insufficient_funds', attempt: 1, availableCents: 500, requiredCents: 800 });
    await fundAgent(kit, consumer, 500);
    await send(kit, walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 800, attempt: 1 });
    await answered(kit, tx, walletSaga.holdRefused.type, 2);
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 1000, heldCents: 0 });
    await send(kit, walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 800, attempt: 2 });
    const [placed] = await answered(kit, tx, walletSaga.holdPlaced.type);
    expect(placed!.data).toMatchObject({ attempt: 2, amountCents: 800 });
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 1000, heldCents: 800 });
  });

  it('never places a refused hold after its return, even for a newer attempt (a cancel racing a second accept)', async () => {
    const consumer = await agentWith(kit, 500);
    const tx = randomUUID();
    await send(kit, walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 900, attempt: 1 });
    await answered(kit, tx, walletSaga.holdRefused.type);
    await send(kit, walletSaga.returnHold, { transactionId: tx });
    await answered(kit, tx, walletSaga.holdRefused.type, 2);
    await fundAgent(kit, consumer, 1000);
    await send(kit, walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 900, attempt: 2 });
    const refusals = await answered(kit, tx, walletSaga.holdRefused.type, 3);
    expect(refusals.at(-1)!.data.reason).toBe('closed');
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 1500, heldCents: 0 });
  });

  it('decides a transaction’s first hold and a return sent at once in one order or the other: held then returned, or closed', async () => {
    const consumer = await agentWith(kit, 10_000);
    const txs = Array.from({ length: 12 }, () => randomUUID());
    await Promise.all(txs.flatMap((tx) => [
      send(kit, walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 300, attempt: 1 }),
      send(kit, walletSaga.returnHold, { transactionId: tx }),
    ]));
    for (const tx of txs) {
      // One answer to each command; the hold ends returned or closed, never held.
      const last = await eventually(async () => {
        const mine = kit.answers.filter((a) => a.data.transactionId === tx);
        return mine.length >= 2 ? mine : null;
      });
      expect(last.map((a) => a.type).sort()).toSatisfy((types: string[]) =>
        JSON.stringify(types) === JSON.stringify([walletSaga.holdPlaced.type, walletSaga.holdReturned.type].sort())
        || JSON.stringify(types) === JSON.stringify([walletSaga.holdRefused.type, walletSaga.holdRefused.type]));
      const hold = await kit.wallet.deps.db.selectFrom('holds').select(['status', 'refusal']).where('transactionId', '=', tx).executeTakeFirstOrThrow();
      expect(['returned', 'refused:closed']).toContain(hold.status === 'refused' ? `refused:${hold.refusal}` : hold.status);
    }
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 10_000, heldCents: 0 });
  });

  it('refuses through the saga a hold beyond what a wallet it knows has, with the available balance read on the wallet locked', async () => {
    const consumer = await agentWith(kit, 1000);
    const [first, second] = [randomUUID(), randomUUID()];
    await send(kit, walletSaga.holdFunds, { transactionId: first, consumerAgentId: consumer, amountCents: 600, attempt: 1 });
    await answered(kit, first, walletSaga.holdPlaced.type);
    await send(kit, walletSaga.holdFunds, { transactionId: second, consumerAgentId: consumer, amountCents: 600, attempt: 1 });
    const [refused] = await answered(kit, second, walletSaga.holdRefused.type);
    expect(refused!.data).toMatchObject({ reason: 'insufficient_funds', availableCents: 400, requiredCents: 600 });
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 1000, heldCents: 600 });
  });
});

describe('returning and settling (D13.3, D12.8)', () => {
  it('holds once however often asked, then settles once: the provider paid minus the fee, the fee to the platform', async () => {
    const [consumer, provider] = [await agentWith(kit, 5000), await agentWith(kit, 0)];
    const tx = randomUUID();
    await send(kit, walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 1000, attempt: 1 });
    await send(kit, walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 1000, attempt: 1 });
    await answered(kit, tx, walletSaga.holdPlaced.type, 2);
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 5000, heldCents: 1000 });
    await send(kit, walletSaga.settle, { transactionId: tx, providerAgentId: provider, amountCents: 1000, feeCents: 50 });
    await send(kit, walletSaga.settle, { transactionId: tx, providerAgentId: provider, amountCents: 1000, feeCents: 50 });
    await answered(kit, tx, walletSaga.holdSettled.type, 2);
    // A return after the settlement changes nothing and says so.
    await send(kit, walletSaga.returnHold, { transactionId: tx });
    await answered(kit, tx, walletSaga.holdSettled.type, 3);
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 4000, heldCents: 0 });
    expect(await balances(kit, provider)).toEqual({ balanceCents: 950, heldCents: 0 });
    const platform = await kit.wallet.deps.db.selectFrom('wallets').select('balanceCents').where('kind', '=', 'platform').executeTakeFirstOrThrow();
    expect(platform.balanceCents).toBeGreaterThanOrEqual(50);
  });

  it('settles in part (D12.8): the refund back to the consumer, the rest paid with the fee on it, once', async () => {
    const [consumer, provider] = [await agentWith(kit, 5000), await agentWith(kit, 0)];
    const tx = randomUUID();
    await send(kit, walletSaga.holdFunds, { transactionId: tx, consumerAgentId: consumer, amountCents: 1000, attempt: 1 });
    await answered(kit, tx, walletSaga.holdPlaced.type);
    // 300 refunded, 700 paid, the fee on the 700.
    for (let i = 0; i < 2; i++) await send(kit, walletSaga.settle, { transactionId: tx, providerAgentId: provider, amountCents: 1000, feeCents: 35, refundCents: 300 });
    const [answer] = await answered(kit, tx, walletSaga.holdSettled.type, 2);
    expect(answer!.data).toMatchObject({ amountCents: 1000, feeCents: 35, refundCents: 300 });
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 4300, heldCents: 0 });
    expect(await balances(kit, provider)).toEqual({ balanceCents: 665, heldCents: 0 });
    const entries = await kit.wallet.deps.db.selectFrom('ledgerEntries').select(['txType', 'amountCents']).where('transactionId', '=', tx).orderBy('seq').execute();
    expect(entries.map((e) => [e.txType, e.amountCents])).toEqual([
      ['fund_hold', -1000], ['fund_return', 300], ['fund_release', 700], ['settlement_out', -700], ['settlement_in', 700], ['platform_fee', -35], ['platform_fee', 35],
    ]);
    expect((await checkLedgerInvariants(kit.wallet.deps)).violations).toEqual([]);
  });

  it('returns a hold once, and a return that comes first closes the hold for good', async () => {
    const consumer = await agentWith(kit, 3000);
    const first = randomUUID();
    await send(kit, walletSaga.holdFunds, { transactionId: first, consumerAgentId: consumer, amountCents: 700, attempt: 1 });
    await answered(kit, first, walletSaga.holdPlaced.type);
    await send(kit, walletSaga.returnHold, { transactionId: first });
    await send(kit, walletSaga.returnHold, { transactionId: first });
    await answered(kit, first, walletSaga.holdReturned.type, 2);
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 3000, heldCents: 0 });

    const early = randomUUID();
    await send(kit, walletSaga.returnHold, { transactionId: early });
    await answered(kit, early, walletSaga.holdRefused.type);
    await send(kit, walletSaga.holdFunds, { transactionId: early, consumerAgentId: consumer, amountCents: 700, attempt: 1 });
    const refusals = await answered(kit, early, walletSaga.holdRefused.type, 2);
    expect(refusals.map((r) => r.data.reason)).toEqual(['closed', 'closed']);
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 3000, heldCents: 0 });
  });
});

describe('decided on what the replica presumes or remembers, written at commit', () => {
  it('writes a transaction’s first hold, a repeat of it and its settlement at commit, each decided on what the replica presumed or remembered', async () => {
    const [consumer, provider] = [await agentWith(kit, 3000), await agentWith(kit, 0)];
    const t = randomUUID();
    const outcomes = await writesAtCommit(async () => {
      for (let i = 1; i <= 2; i++) {
        await send(kit, walletSaga.holdFunds, { transactionId: t, consumerAgentId: consumer, amountCents: 900, attempt: 1 });
        await answered(kit, t, walletSaga.holdPlaced.type, i);
      }
      await send(kit, walletSaga.settle, { transactionId: t, providerAgentId: provider, amountCents: 900, feeCents: 45 });
      await answered(kit, t, walletSaga.holdSettled.type);
    });
    expect(outcomes).toEqual([true, true, true]);
    expect(await balances(kit, provider)).toEqual({ balanceCents: 855, heldCents: 0 });
  });

  it('undoes at commit a first hold the wallet cannot pay, and refuses it on the wallet locked', async () => {
    const consumer = await agentWith(kit, 500);
    const t = randomUUID();
    const outcomes = await writesAtCommit(async () => {
      await send(kit, walletSaga.holdFunds, { transactionId: t, consumerAgentId: consumer, amountCents: 501, attempt: 1 });
      await answered(kit, t, walletSaga.holdRefused.type);
    });
    expect(outcomes).toEqual([false]);
    expect(await kit.wallet.deps.db.selectFrom('holds').select(['status', 'refusal']).where('transactionId', '=', t).executeTakeFirst()).toEqual({ status: 'refused', refusal: 'insufficient_funds' });
  });

  it('settles nothing of a hold it placed that was returned since (what the replica remembers of it is stale)', async () => {
    const [consumer, provider] = [await agentWith(kit, 3000), await agentWith(kit, 0)];
    // Two holds: once the first is returned, the wallet still holds enough for the stale settlement
    // to look possible, so only the condition on the hold's row stops it.
    const [tx, other] = [randomUUID(), randomUUID()];
    for (const id of [tx, other]) {
      await send(kit, walletSaga.holdFunds, { transactionId: id, consumerAgentId: consumer, amountCents: 700, attempt: 1 });
      await answered(kit, id, walletSaga.holdPlaced.type);
    }
    // Returned by another replica, as it would: this replica's memory of the hold still says placed.
    const elsewhere = new AggregateRunner(holdAggregate(new WalletDirectory()), { tx: kit.wallet.deps.tx, now: () => new Date(), sagaWaitMs: 0 });
    await elsewhere.step(tx, { kind: 'return' });
    await send(kit, walletSaga.settle, { transactionId: tx, providerAgentId: provider, amountCents: 700, feeCents: 35 });
    const answers = await answered(kit, tx, walletSaga.holdReturned.type);
    expect(answers[0]!.data).toMatchObject({ amountCents: 700 });
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 3000, heldCents: 700 });
    expect(await balances(kit, provider)).toEqual({ balanceCents: 0, heldCents: 0 });
    // The other hold settles as usual.
    await send(kit, walletSaga.settle, { transactionId: other, providerAgentId: provider, amountCents: 700, feeCents: 35 });
    await answered(kit, other, walletSaga.holdSettled.type);
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 2300, heldCents: 0 });
    expect(await balances(kit, provider)).toEqual({ balanceCents: 665, heldCents: 0 });
  });

  it('keeps every entry exact under concurrent holds and settlements of shared wallets, the fee wallet included', async () => {
    const [a, b, provider] = [await agentWith(kit, 10_000), await agentWith(kit, 10_000), await agentWith(kit, 0)];
    const txs = Array.from({ length: 24 }, (_, i) => ({ id: randomUUID(), consumer: i % 2 === 0 ? a : b, amount: 100 + i }));
    await Promise.all(txs.map((t) => send(kit, walletSaga.holdFunds, { transactionId: t.id, consumerAgentId: t.consumer, amountCents: t.amount, attempt: 1 })));
    for (const t of txs) await answered(kit, t.id, walletSaga.holdPlaced.type);
    await Promise.all(txs.map((t, i) => send(kit, walletSaga.settle, { transactionId: t.id, providerAgentId: provider, amountCents: t.amount, feeCents: 5, ...(i % 3 === 0 ? { refundCents: 50 } : {}) })));
    for (const t of txs) await answered(kit, t.id, walletSaga.holdSettled.type);
    const paid = (of: string) => txs.filter((t) => t.consumer === of).reduce((sum, t) => sum + t.amount - (txs.indexOf(t) % 3 === 0 ? 50 : 0), 0);
    expect(await balances(kit, a)).toEqual({ balanceCents: 10_000 - paid(a), heldCents: 0 });
    expect(await balances(kit, b)).toEqual({ balanceCents: 10_000 - paid(b), heldCents: 0 });
    expect(await balances(kit, provider)).toEqual({ balanceCents: paid(a) + paid(b) - 5 * txs.length, heldCents: 0 });
    for (const agent of [a, b, provider]) expect(await entriesChained(kit, agent)).toBe(true);
    expect((await checkLedgerInvariants(kit.wallet.deps)).violations).toEqual([]);
  });

  it('D17.6, D17.7: a session’s return waits for the captures its calls sent; each capture is applied once and answered with nothing', async () => {
    const [consumer, provider] = [await agentWith(kit, 5000), await agentWith(kit, 0)];
    const session = randomUUID();
    await send(kit, walletSaga.holdFunds, { transactionId: session, consumerAgentId: consumer, amountCents: 1000, attempt: 1, session: true });
    await answered(kit, session, walletSaga.holdPlaced.type);
    const [call1, call2] = [randomUUID(), randomUUID()];
    // The return arrives first, saying the calls spent 300: it is applied only once both captures are in.
    await send(kit, walletSaga.returnHold, { transactionId: session, capturedCents: 300 });
    await send(kit, walletSaga.capture, { transactionId: call1, holdId: session, providerAgentId: provider, amountCents: 100, feeCents: 5 });
    await eventually(async () => (await balances(kit, provider)).balanceCents === 95 || null);
    await new Promise((r) => setTimeout(r, 300));
    expect(kit.answers.filter((a) => a.data.transactionId === session && a.type === walletSaga.holdReturned.type)).toEqual([]);
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 4900, heldCents: 900 });
    await send(kit, walletSaga.capture, { transactionId: call2, holdId: session, providerAgentId: provider, amountCents: 200, feeCents: 10 });
    await send(kit, walletSaga.capture, { transactionId: call2, holdId: session, providerAgentId: provider, amountCents: 200, feeCents: 10 });
    const [returned] = await answered(kit, session, walletSaga.holdReturned.type);
    expect(returned!.data).toMatchObject({ amountCents: 700 });
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 4700, heldCents: 0 });
    expect(await balances(kit, provider)).toEqual({ balanceCents: 285, heldCents: 0 });
    expect(kit.answers.filter((a) => a.data.transactionId === call1 || a.data.transactionId === call2)).toEqual([]);
    expect((await checkLedgerInvariants(kit.wallet.deps)).violations).toEqual([]);
  });

  it('D17.7: captures of many calls arriving at once, repeated, are each applied once; one the hold cannot pay holds up none of the others', async () => {
    const [consumer, provider] = [await agentWith(kit, 10_000), await agentWith(kit, 0)];
    const sessions = [randomUUID(), randomUUID(), randomUUID()];
    for (const s of sessions) await send(kit, walletSaga.holdFunds, { transactionId: s, consumerAgentId: consumer, amountCents: 2000, attempt: 1, session: true });
    for (const s of sessions) await answered(kit, s, walletSaga.holdPlaced.type);
    const calls = Array.from({ length: 60 }, (_, i) => ({ transactionId: randomUUID(), holdId: sessions[i % 3]!, providerAgentId: provider, amountCents: 10 + i, feeCents: 1 }));
    // One more than its hold has: a bug the wallet refuses, alone.
    const impossible = { transactionId: randomUUID(), holdId: sessions[0]!, providerAgentId: provider, amountCents: 5000, feeCents: 250 };
    await Promise.all([...calls, ...calls.slice(0, 20), impossible].map((c) => send(kit, walletSaga.capture, c)));
    const paid = calls.reduce((sum, c) => sum + c.amountCents, 0);
    await eventually(async () => ((await balances(kit, provider)).balanceCents === paid - calls.length ? true : null), 15_000, 50);
    expect(await balances(kit, consumer)).toEqual({ balanceCents: 10_000 - paid, heldCents: 6000 - paid });
    const captured = await kit.wallet.deps.db.selectFrom('holds').select(['transactionId', 'capturedCents', 'capturedFeeCents']).where('transactionId', 'in', sessions).execute();
    for (const s of sessions) {
      const mine = calls.filter((c) => c.holdId === s);
      expect(captured.find((h) => h.transactionId === s)).toMatchObject({ capturedCents: mine.reduce((sum, c) => sum + c.amountCents, 0), capturedFeeCents: mine.length });
    }
    expect(await kit.wallet.deps.db.selectFrom('holdCaptures').select('transactionId').where('transactionId', '=', impossible.transactionId).execute()).toEqual([]);
    expect(await entriesChained(kit, consumer)).toBe(true);
    expect((await checkLedgerInvariants(kit.wallet.deps)).violations).toEqual([]);
  });

  it('leaves every invariant of the ledger holding, holds included', async () => {
    const report = await checkLedgerInvariants(kit.wallet.deps);
    expect(report.violations).toEqual([]);
  });
});
