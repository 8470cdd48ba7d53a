import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commands, events, subjects, walletOps, type MessageEnvelope, type Principal } from '@aex/contracts';
import { ack, callOperation, callOrThrow, loadConfig, type Bus, type BusMessage } from '@aex/platform';
import { createTestBus, createTestDatabase, eventually, testLogger } from '@aex/platform/testing';
import { startWalletService, type WalletService } from '../src/index.js';
import { checkLedger, checkLedgerInvariants } from '../src/wallets/check.js';

// The wallet service alone on real Postgres and JetStream: the openWallet saga step, money
// movements, the append-only ledger and the invariant check (D13).

let bus: Bus;
let dispose: () => Promise<void>;
let wallet: WalletService;
const seen: BusMessage[] = [];

/** A wallet service on a database and bus of its own. */
async function walletOfItsOwn() {
  const database = await createTestDatabase();
  const { bus, dispose } = await createTestBus('jetstream');
  const config = loadConfig({}, { BUS_NAMESPACE: bus.namespace, PAYMENTS_PROVIDER: 'sandbox' });
  const wallet = await startWalletService({ bus, databaseUrl: database.url, config, logger: testLogger() });
  return { database, bus, wallet, dispose: async () => (await wallet.stop(), await dispose(), await database.drop()) };
}

beforeAll(async () => {
  ({ bus, wallet, dispose } = await walletOfItsOwn());
  await bus.consume({ stream: 'events', durable: 'observer', filter: `${bus.namespace}.evt.>`, handler: async (m) => (seen.push(m), ack()) });
});
afterAll(async () => dispose?.());

const ctx = (principal: Principal | null) => ({ requestId: randomUUID(), principal, admin: false });
const owner = (agentId: string, accountId: string): Principal => ({ agentId, accountId, isOwner: true, status: 'active', parentAgentId: null, signingKeyPublic: null });

async function openWallet(agentId = randomUUID(), accountId = randomUUID(), commandId = randomUUID()) {
  const env = { id: commandId, type: commands.openWallet.type, occurredAt: new Date().toISOString(), data: { operationId: agentId, agentId, accountId } };
  await bus.publish(subjects.command(bus.namespace, commands.openWallet.type), env, { msgId: commandId });
  return { agentId, accountId };
}

/** A wallet of the test's own, opened and funded with `cents`: its id. */
async function fundedWallet(cents: number): Promise<string> {
  const { agentId, accountId } = await openWallet();
  await eventually(async () => opened(agentId).length > 0);
  await callOrThrow(bus, walletOps.fund, { ctx: ctx(owner(agentId, accountId)), input: { path: { agentId }, query: {}, body: { amountCents: cents } } }, 5000);
  return opened(agentId)[0]!.data.walletId;
}

const opened = (agentId: string) => seen.map((m) => m.data as MessageEnvelope<{ agentId: string; walletId: string }>).filter((e) => e.type === events.walletOpened.type && e.data.agentId === agentId);

describe('openWallet saga step', () => {
  it('opens one wallet per agent and answers wallet.opened, however often the command comes', async () => {
    const { agentId, accountId } = await openWallet();
    await openWallet(agentId, accountId); // a retried command under a new id
    await eventually(async () => opened(agentId).length >= 2);
    const rows = await wallet.deps.db.selectFrom('wallets').selectAll().where('agentId', '=', agentId).execute();
    expect(rows).toHaveLength(1);
    expect(new Set(opened(agentId).map((e) => e.data.walletId))).toEqual(new Set([rows[0]!.id]));
  });

  it('has a platform revenue wallet that belongs to no agent (D13.3)', async () => {
    const rows = await wallet.deps.db.selectFrom('wallets').selectAll().where('kind', '=', 'platform').execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.agentId).toBeNull();
  });
});

describe('money movements', () => {
  it('funds and pays out with matching ledger entries and events', async () => {
    const { agentId, accountId } = await openWallet();
    await eventually(async () => opened(agentId).length > 0);
    const p = owner(agentId, accountId);
    const input = (amountCents: number) => ({ ctx: ctx(p), input: { path: { agentId }, query: {}, body: { amountCents } } });
    expect((await callOrThrow(bus, walletOps.fund, input(9000), 5000)).newBalanceCents).toBe(9000);
    await callOrThrow(bus, walletOps.withdraw, input(4000), 5000);
    const w = await callOrThrow(bus, walletOps.getWallet, { ctx: ctx(p), input: { path: { agentId }, query: {}, body: {} } }, 5000);
    expect(w).toMatchObject({ balanceCents: 5000, availableCents: 5000 });
    await eventually(async () => seen.some((m) => (m.data as MessageEnvelope).type === events.walletPaidOut.type && (m.data as MessageEnvelope<{ agentId: string }>).data.agentId === agentId));
    expect(seen.some((m) => (m.data as MessageEnvelope).type === events.walletFunded.type && (m.data as MessageEnvelope<{ agentId: string }>).data.agentId === agentId)).toBe(true);
  });

  it('keeps concurrent funding exact', async () => {
    const { agentId, accountId } = await openWallet();
    await eventually(async () => opened(agentId).length > 0);
    const p = owner(agentId, accountId);
    await Promise.all(Array.from({ length: 20 }, () => callOrThrow(bus, walletOps.fund, { ctx: ctx(p), input: { path: { agentId }, query: {}, body: { amountCents: 500 } } }, 10_000)));
    const w = await wallet.deps.db.selectFrom('wallets').selectAll().where('agentId', '=', agentId).executeTakeFirstOrThrow();
    expect(w.balanceCents).toBe(10_000);
    const entries = await wallet.deps.db.selectFrom('ledgerEntries').select('balanceAfterCents').where('walletId', '=', w.id).orderBy('seq').execute();
    expect(entries.map((e) => e.balanceAfterCents)).toEqual(Array.from({ length: 20 }, (_, i) => (i + 1) * 500));
  });

  it('answers an agent without a wallet with 404', async () => {
    const r = await callOperation(bus, walletOps.getWallet, { ctx: ctx(owner(randomUUID(), randomUUID())), input: { path: { agentId: randomUUID() }, query: {}, body: {} } }, { timeoutMs: 5000 });
    expect(!r.ok && r.status).toBe(404);
  });
});

describe('ledger integrity (D13.2–D13.3)', () => {
  it('refuses to update or delete ledger entries', async () => {
    const { db } = wallet.deps;
    const walletId = await fundedWallet(1000);
    const entry = await db.selectFrom('ledgerEntries').select('id').where('walletId', '=', walletId).executeTakeFirstOrThrow();
    await expect(db.updateTable('ledgerEntries').set({ amountCents: 1 }).where('id', '=', entry.id).execute()).rejects.toThrow(/append-only/);
    await expect(db.deleteFrom('ledgerEntries').where('id', '=', entry.id).execute()).rejects.toThrow(/append-only/);
  });

  it('finds no violation in honest books, and names each one when a balance is tampered with', async () => {
    const victim = { id: await fundedWallet(700) };
    expect(await checkLedgerInvariants(wallet.deps)).toMatchObject({ ok: true, violations: [] });
    await wallet.deps.db.updateTable('wallets').set({ balanceCents: sql<number>`balance_cents + 1` }).where('id', '=', victim.id).execute();
    try {
      const report = await checkLedgerInvariants(wallet.deps);
      expect(report.ok).toBe(false);
      const names = report.violations.map((v) => v.invariant).sort();
      expect(names).toEqual(['balance_entries_sum_to_balance', 'conservation', 'entries_sum_to_available', 'last_entry_matches_balance']);
      expect(report.violations.filter((v) => v.walletId).every((v) => v.walletId === victim.id)).toBe(true);
    } finally {
      await wallet.deps.db.updateTable('wallets').set({ balanceCents: sql<number>`balance_cents - 1` }).where('id', '=', victim.id).execute();
    }
    expect((await checkLedgerInvariants(wallet.deps)).ok).toBe(true);
  });
});

describe('the ledger check at scale and under its time bound (D15.3)', () => {
  it('names a hold whose entries do not match its state (the holds joined to the ledger in one pass)', async () => {
    const some = { id: await fundedWallet(1000) };
    const transactionId = randomUUID();
    await wallet.deps.db.insertInto('holds').values({ transactionId, walletId: some.id, amountCents: 700, attempt: 1, status: 'settled', feeCents: 35, createdAt: new Date() } as never).execute();
    try {
      const report = await checkLedgerInvariants(wallet.deps);
      const mine = report.violations.filter((v) => (v.details as { transactionId?: string }).transactionId === transactionId);
      expect(mine.length).toBeGreaterThan(0);
      expect(new Set(mine.map((v) => v.invariant))).toEqual(new Set(['hold_entries_match_state']));
    } finally {
      await wallet.deps.db.deleteFrom('holds').where('transactionId', '=', transactionId).execute();
    }
    expect((await checkLedgerInvariants(wallet.deps)).ok).toBe(true);
  });

  it('stops in Postgres when it runs past its bound, and the route answers 503 SERVICE_UNAVAILABLE', async () => {
    // A lock held elsewhere keeps the check waiting, as a very large ledger would keep it reading.
    const blocker = await wallet.deps.db.connection().execute(async (conn) => {
      await sql`begin`.execute(conn);
      await sql`lock table ledger_entries in access exclusive mode`.execute(conn);
      const started = Date.now();
      const outcome = await checkLedgerInvariants(wallet.deps, { timeoutMs: 300 }).then(() => 'finished', (err: { code?: string }) => err.code);
      const waited = Date.now() - started;
      const routed = await checkLedger({ ...wallet.deps, config: { ...wallet.deps.config, RPC_TIMEOUT_MS: 1500 } })({ path: {}, query: {}, body: {} } as never, { requestId: randomUUID() } as never)
        .then(() => 'answered', (err: { status?: number; code?: string }) => `${err.status} ${err.code}`);
      await sql`rollback`.execute(conn);
      return { outcome, waited, routed };
    });
    expect(blocker.outcome).toBe('57014');
    expect(blocker.waited).toBeLessThan(5000);
    expect(blocker.routed).toBe('503 SERVICE_UNAVAILABLE');
    // Nothing is left running: the check answers at once again.
    expect((await checkLedgerInvariants(wallet.deps, { timeoutMs: 5000 })).ok).toBe(true);
  });

  it('names an entry of a transaction that has no hold (a movement the saga never recorded)', async () => {
    // Books of its own: an entry cannot be removed once written (append-only), so they stay wrong after it.
    const own = await walletOfItsOwn();
    try {
      const { agentId, accountId } = { agentId: randomUUID(), accountId: randomUUID() };
      const commandId = randomUUID();
      await own.bus.publish(subjects.command(own.bus.namespace, commands.openWallet.type), { id: commandId, type: commands.openWallet.type, occurredAt: new Date().toISOString(), data: { operationId: agentId, agentId, accountId } }, { msgId: commandId });
      const some = await eventually(async () => (await own.wallet.deps.db.selectFrom('wallets').select(['id', 'balanceCents', 'heldCents']).where('agentId', '=', agentId).executeTakeFirst()) ?? null);
      const transactionId = randomUUID();
      await own.wallet.deps.db.insertInto('ledgerEntries').values({
        id: randomUUID(), walletId: some.id, operationId: `orphan:${transactionId}`, transactionId, txType: 'fund_return', amountCents: 5,
        balanceAfterCents: some.balanceCents, availableAfterCents: some.balanceCents - some.heldCents + 5, description: 'orphan', createdAt: new Date(),
      } as never).execute();
      const report = await checkLedgerInvariants(own.wallet.deps);
      expect(report.violations).toContainEqual({ invariant: 'entry_without_hold', walletId: some.id, details: { transactionId, txType: 'fund_return' } });
    } finally {
      await own.dispose();
    }
  });
});
