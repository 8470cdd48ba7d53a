import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogOps, identityOps, subjects, transactionEvent, type Principal, type TransactionStatus } from '@aex/contracts';
import { callOrThrow, loadConfig, metrics, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, eventually, TestClock, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startIdentityService, type IdentityService } from '@aex/identity';
import { startWalletService, type WalletService } from '@aex/wallet';
import { startCatalogService, type CatalogService } from '../src/index.js';

// D22.3 on real Postgres and JetStream: the catalog records the transactions service's events (any
// order, each once), keeps each provider's liveness on its row, and its sweep sees what time changes
// (a purchase past its SLA, a verdict leaving the window). The catalog's clock is a TestClock.

let database: TestDatabase;
let bus: Bus;
let dispose: () => Promise<void>;
let identity: IdentityService;
let wallet: WalletService;
let catalog: CatalogService;
let sql: pg.Client;
const clock = new TestClock();
// Long enough that no purchase of a test passes it in real time: only the tests' clock moves take it there.
const SLA_MS = 60_000;

beforeAll(async () => {
  database = await createTestDatabase();
  ({ bus, dispose } = await createTestBus('jetstream'));
  const config = loadConfig({}, { BUS_NAMESPACE: bus.namespace });
  const deps = { bus, databaseUrl: database.url, config, logger: testLogger(), now: clock.now };
  identity = await startIdentityService(deps);
  wallet = await startWalletService(deps);
  catalog = await startCatalogService(deps);
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
});
afterAll(async () => {
  await sql?.end();
  await catalog?.stop();
  await wallet?.stop();
  await identity?.stop();
  await dispose?.();
  await database?.drop();
});

const ctx = (principal: Principal | null) => ({ requestId: randomUUID(), principal });

/** A provider with one service whose SLA promises delivery within SLA_MS. */
async function providerWithService(): Promise<{ agentId: string; serviceId: string }> {
  const account = await callOrThrow(bus, identityOps.createAccount, {
    ctx: ctx(null),
    input: { path: {}, query: {}, body: { accountType: 'individual', email: `${randomUUID()}@example.com`, displayName: 'P', agent: { name: 'seller' } } },
  }, 10_000);
  const p: Principal = { agentId: account.agent.id, accountId: account.id, isOwner: true, status: 'active', parentAgentId: null, signingKeyPublic: null };
  const s = await callOrThrow(bus, catalogOps.createService, {
    ctx: ctx(p),
    input: { path: {}, query: {}, body: {
      name: 'Echo', description: 'Echoes its input back to agents.', version: '1.0.0', category: 'tests',
      inputSchema: { type: 'object' }, outputSchema: { type: 'object' }, pricing: { model: 'fixed', basePriceCents: 10 }, sla: { maxLatencyMs: SLA_MS, timeoutMs: 10 * SLA_MS },
    } },
  }, 5000);
  return { agentId: p.agentId, serviceId: s.id };
}

/** Publishes `transaction.<status>` of a purchase as the transactions service would, at `at`. */
async function tell(status: TransactionStatus, purchase: { id: string; agentId: string; serviceId: string }, at: Date, opts: { previousStatus?: TransactionStatus; messageId?: string } = {}): Promise<string> {
  const def = transactionEvent(status);
  const id = opts.messageId ?? randomUUID();
  const data = {
    transactionId: purchase.id, status, previousStatus: opts.previousStatus ?? null, statusReason: null, consumerAgentId: randomUUID(),
    providerAgentId: purchase.agentId, serviceId: purchase.serviceId, agreedPriceCents: 10, platformFeeCents: 1,
  };
  await bus.publish(subjects.event(bus.namespace, def.type), { id, type: def.type, occurredAt: at.toISOString(), data }, { msgId: randomUUID() });
  return id;
}

const livenessOf = async (agentId: string) => (await sql.query(
  'select liveness_state as state, liveness as score, recent_delivered as "recentDelivered", recent_undelivered as "recentUndelivered" from catalog.providers where agent_id = $1', [agentId],
)).rows[0] as { state: string; score: number; recentDelivered: number; recentUndelivered: number } | undefined;

const purchaseRow = async (transactionId: string) => (await sql.query('select held_at, due_at, delivered_at from catalog.provider_purchases where transaction_id = $1', [transactionId])).rows[0] as
  { held_at: Date | null; due_at: Date | null; delivered_at: Date | null } | undefined;

async function repeatsOf(durable: string): Promise<number> {
  const line = (await metrics.render()).split('\n').find((l) => l.startsWith(`aex_messages_processed_total{consumer="${durable}",outcome="repeat"} `));
  return Number(line?.split(' ')[1] ?? 0);
}

describe('D22.3 the catalog learns which providers deliver', () => {
  it('records a purchase whose events arrive out of order, each once', async () => {
    const p = await providerWithService();
    const purchase = { id: randomUUID(), ...p };
    const heldAt = clock.now();
    await tell('delivered', purchase, new Date(heldAt.getTime() + 500), { previousStatus: 'funds_held' });
    await expect.poll(() => livenessOf(p.agentId), { timeout: 5000 }).toEqual({ state: 'delivering', score: 1, recentDelivered: 1, recentUndelivered: 0 });
    const held = await tell('funds_held', purchase, heldAt, { previousStatus: 'initiated' });
    await expect.poll(async () => (await purchaseRow(purchase.id))?.due_at?.getTime(), { timeout: 5000 }).toBe(heldAt.getTime() + SLA_MS);
    // The hold told again (a redelivery past the stream's dedupe window) is found applied.
    const repeats = await repeatsOf('catalog-liveness-funds-held');
    await tell('funds_held', purchase, new Date(heldAt.getTime() + 60_000), { messageId: held });
    await expect.poll(() => repeatsOf('catalog-liveness-funds-held'), { timeout: 5000 }).toBeGreaterThan(repeats);
    expect((await purchaseRow(purchase.id))!.held_at!.getTime()).toBe(heldAt.getTime());
    expect(await livenessOf(p.agentId)).toEqual({ state: 'delivering', score: 1, recentDelivered: 1, recentUndelivered: 0 });
  });

  it('counts a purchase in progress past its SLA at the sweep after that moment, before any expiry, and the index ranks with it', async () => {
    const p = await providerWithService();
    await tell('funds_held', { id: randomUUID(), ...p }, clock.now(), { previousStatus: 'initiated' });
    await eventually(async () => (await sql.query('select 1 from catalog.provider_purchases where provider_agent_id = $1', [p.agentId])).rowCount === 1);
    await catalog.liveness.sweep();
    expect(await livenessOf(p.agentId)).toMatchObject({ state: 'unproven', score: 1 });
    clock.advance(SLA_MS + 1);
    await catalog.liveness.sweep();
    expect(await livenessOf(p.agentId)).toEqual({ state: 'stalled', score: 0.5, recentDelivered: 0, recentUndelivered: 1 });
    await catalog.discovery.index.catchUp();
    expect(catalog.discovery.index.providers.get(p.agentId)?.liveness).toBe(0.5);
  });

  it('never misses an overdue purchase whose row commits after a sweep read, however its due time falls', async () => {
    const p = await providerWithService();
    await catalog.liveness.sweep();
    // A hold recorded in a transaction still open while the next sweep reads, due before that sweep…
    const slow = new pg.Client({ connectionString: database.url });
    await slow.connect();
    try {
      await slow.query('begin');
      await slow.query(
        'insert into catalog.provider_purchases (transaction_id, provider_agent_id, service_id, held_at, due_at) values ($1, $2, $3, $4, $5)',
        [randomUUID(), p.agentId, p.serviceId, clock.now(), new Date(clock.now().getTime() + SLA_MS)],
      );
      clock.advance(SLA_MS + 1);
      await catalog.liveness.sweep();
      await slow.query('commit');
    } finally {
      await slow.end();
    }
    // …is counted by the sweep after its commit, though its due time is behind that sweep's start.
    await catalog.liveness.sweep();
    expect(await livenessOf(p.agentId)).toEqual({ state: 'stalled', score: 0.5, recentDelivered: 0, recentUndelivered: 1 });
  });

  it('does not count a cancellation before the price was held, nor one within the SLA; counts one after it', async () => {
    const p = await providerWithService();
    const now = clock.now();
    await tell('cancelled', { id: randomUUID(), ...p }, now, { previousStatus: 'negotiating' });
    const early = { id: randomUUID(), ...p };
    await tell('funds_held', early, now, { previousStatus: 'initiated' });
    await tell('cancelled', early, new Date(now.getTime() + 100), { previousStatus: 'funds_held' });
    await eventually(async () => (await sql.query('select 1 from catalog.provider_purchases where provider_agent_id = $1 and ended_at is not null and held_at is not null', [p.agentId])).rowCount === 1);
    expect(await livenessOf(p.agentId)).toMatchObject({ state: 'unproven', score: 1, recentUndelivered: 0 });
    const late = { id: randomUUID(), ...p };
    await tell('funds_held', late, new Date(now.getTime() - SLA_MS - 5000), { previousStatus: 'initiated' });
    await tell('cancelled', late, now, { previousStatus: 'funds_held' });
    await expect.poll(() => livenessOf(p.agentId), { timeout: 5000 }).toEqual({ state: 'stalled', score: 0.5, recentDelivered: 0, recentUndelivered: 1 });
  });

  it('counts failed and expired purchases against the provider, and forgets them once they leave the window', async () => {
    const p = await providerWithService();
    await tell('failed', { id: randomUUID(), ...p }, clock.now(), { previousStatus: 'validation_failed' });
    await tell('expired', { id: randomUUID(), ...p }, clock.now(), { previousStatus: 'funds_held' });
    await expect.poll(async () => (await livenessOf(p.agentId))?.recentUndelivered, { timeout: 5000 }).toBe(2);
    expect(await livenessOf(p.agentId)).toMatchObject({ state: 'stalled' });
    clock.advance(24 * 60 * 60 * 1000 + 1000);
    await catalog.liveness.sweep();
    expect(await livenessOf(p.agentId)).toEqual({ state: 'unproven', score: 1, recentDelivered: 0, recentUndelivered: 0 });
  });

  it('recovers when the provider delivers again', async () => {
    const p = await providerWithService();
    const stuck = { id: randomUUID(), ...p };
    await tell('funds_held', stuck, new Date(clock.now().getTime() - SLA_MS - 1000), { previousStatus: 'initiated' });
    await eventually(async () => (await purchaseRow(stuck.id))?.due_at != null);
    await catalog.liveness.sweep();
    expect(await livenessOf(p.agentId)).toMatchObject({ state: 'stalled', recentUndelivered: 1 });
    await tell('delivered', stuck, clock.now(), { previousStatus: 'funds_held' });
    await expect.poll(() => livenessOf(p.agentId), { timeout: 5000 }).toEqual({ state: 'delivering', score: 1, recentDelivered: 1, recentUndelivered: 0 });
  });
});
