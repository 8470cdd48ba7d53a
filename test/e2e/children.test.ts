import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKey, unwrap } from '@agent-exchange/client';
import { AUTH_CACHE, hashApiKey, type SpawnAgentBody, type SpawnedAgentView } from '@aex/contracts';
import { buildGateway } from '@aex/gateway';
import { eventually, testLogger } from '@aex/platform/testing';
import { ExchangeClient } from '@agent-exchange/client';
import { exchangeProcess, expectError, showLogOnFailure, signingMember, startTestExchange, type ExchangeProcess, type Member, type TestExchange } from './harness.js';
import { createHeld, funded, INPUT, OUTPUT, party, serviceBody, waitForStatus, type Party } from './transaction-kit.js';

// D6.8, D10.1, D13.2: child agents — spawned with a budget moved atomically from
// the parent's wallet (short → 402 and no child), their delegation inherited and only tightened,
// `ephemeral`, unable to spawn, counted in the agent limit; at expiry `expired` (key → 401), their
// available balance back to the parent and, as their transactions end, what was held for them too.

const LIMIT = 6;
let ex: TestExchange;
let db: pg.Client;

beforeAll(async () => {
  ex = await startTestExchange({ MAX_AGENTS_PER_ACCOUNT: String(LIMIT), SAGA_WAIT_MS: '1500', REVIEW_WINDOW_SECONDS: '2' }, { timerPollMs: 100 });
  db = new pg.Client({ connectionString: ex.databaseUrl });
  await db.connect();
}, 120_000);

afterAll(async () => {
  await db?.end();
  await ex?.stop();
});

type Child = Member & { view: SpawnedAgentView };

/** Spawns a child of `parent` as `by`; the child registers a signing key so it can call the signed routes. */
async function spawn(by: ExchangeClient, parentId: string, body: Partial<SpawnAgentBody> = {}): Promise<Child> {
  const view = unwrap(await by.spawnAgent(parentId, { name: 'child', ...body }));
  const keys = generateSigningKey();
  unwrap(await ex.anon.as({ apiKey: view.apiKey }).updateAgent(view.id, { signingKeyPublic: keys.publicKey }));
  const client = ex.anon.as({ apiKey: view.apiKey, signingSecretKey: keys.secretKey });
  return { accountId: view.accountId, agentId: view.id, apiKey: view.apiKey, client, keys, view };
}

const walletOf = async (m: Member) => unwrap(await m.client.getWallet(m.agentId));
const entries = async (reader: ExchangeClient, agentId: string, types: string[]) =>
  unwrap(await reader.ledger(agentId, { limit: 100 })).filter((e) => types.includes(e.txType)).map((e) => [e.txType, e.amountCents]);
/** What the expiry sweep finds when the child's lifetime is over (its hours cannot pass in a test). */
const endLifetime = (childId: string) => db.query(`update identity.agents set expires_at = now() - interval '1 second' where id = $1`, [childId]);
const ledgerOk = async () => expect(unwrap(await ex.admin.checkLedger()).violations).toEqual([]);

describe('POST /v1/agents/{id}/spawn (D6.8)', () => {
  it('creates an ephemeral child with its key, lifetime and a wallet holding the budget moved from the parent', async () => {
    const parent = await funded(ex, 5000);
    const before = Date.now();
    const child = await spawn(parent.client, parent.agentId, { budgetCents: 1200, description: 'does one job' });
    const v = child.view;
    expect(v).toMatchObject({
      agentType: 'ephemeral', status: 'active', parentAgentId: parent.agentId, accountId: parent.accountId, name: 'child', description: 'does one job',
      apiKey: expect.stringMatching(/^ae_live_/), keyPrefix: v.apiKey.slice(0, 12), trustScore: 50,
      wallet: { agentId: v.id, balanceCents: 1200, heldCents: 0, availableCents: 1200 },
    });
    // Default lifetime 24 h.
    const lifetime = Date.parse(v.expiresAt!) - before;
    expect(lifetime).toBeGreaterThan(24 * 3600_000 - 60_000);
    expect(lifetime).toBeLessThan(24 * 3600_000 + 60_000);
    expect(await walletOf(parent)).toMatchObject({ balanceCents: 3800, availableCents: 3800 });
    expect(await entries(parent.client, parent.agentId, ['parent_allocation'])).toEqual([['parent_allocation', -1200]]);
    expect(await entries(child.client, child.agentId, ['parent_allocation'])).toEqual([['parent_allocation', 1200]]);
    // The child's key works; its profile is public to others like any agent's.
    expect(unwrap(await child.client.getAgent(child.agentId))).toMatchObject({ id: v.id, parentAgentId: parent.agentId });
    // EXT: the parent reads the wallet its child spends from.
    expect(unwrap(await parent.client.getWallet(child.agentId)).balanceCents).toBe(1200);
    await ledgerOk();
  });

  it('lets the owner agent spawn for another agent of its account, with a lifetime of its choice and no budget', async () => {
    const parent = await party(ex);
    const before = Date.now();
    const child = await spawn(parent.owner.client, parent.agentId, { maxLifetimeHours: 168 });
    expect(child.view.parentAgentId).toBe(parent.agentId);
    expect(Date.parse(child.view.expiresAt!) - before).toBeGreaterThan(168 * 3600_000 - 60_000);
    expect(child.view.wallet).toMatchObject({ balanceCents: 0, heldCents: 0 });
    expect(await entries(parent.client, parent.agentId, ['parent_allocation'])).toEqual([]);
  });

  it('refuses a budget above the parent’s available balance with 402: no child exists and nothing moved', async () => {
    const parent = await funded(ex, 1000);
    const key = randomUUID();
    const short = await parent.client.spawnAgent(parent.agentId, { name: 'too dear', budgetCents: 1001 }, { idempotencyKey: key });
    expectError(short, 402, 'INSUFFICIENT_FUNDS');
    expect(!short.ok && short.error.errors[0]!.details).toEqual({ availableCents: 1000, requiredCents: 1001 });
    // The same request again gets the same answer (D5.3), even once the parent could afford it.
    unwrap(await parent.client.fund(parent.agentId, 500));
    expectError(await parent.client.spawnAgent(parent.agentId, { name: 'too dear', budgetCents: 1001 }, { idempotencyKey: key }), 402, 'INSUFFICIENT_FUNDS');
    expect(await walletOf(parent)).toMatchObject({ balanceCents: 1500, heldCents: 0 });
    expect(await entries(parent.client, parent.agentId, ['parent_allocation'])).toEqual([]);
    const { rows } = await db.query(`select count(*)::int as n from identity.agents where parent_agent_id = $1`, [parent.agentId]);
    expect(rows[0].n).toBe(0);
    await ledgerOk();
  });

  it('answers who may spawn: the agent or its owner; never another agent, another account, a child or the unauthenticated', async () => {
    const parent = await funded(ex, 2000);
    const sibling = await ex.addAgent(parent.owner);
    const stranger = await party(ex);
    expectError(await sibling.client.spawnAgent(parent.agentId, { name: 'x' }), 403, 'FORBIDDEN');
    expectError(await stranger.client.spawnAgent(parent.agentId, { name: 'x' }), 403, 'FORBIDDEN');
    expectError(await stranger.owner.client.spawnAgent(parent.agentId, { name: 'x' }), 403, 'FORBIDDEN');
    expectError(await ex.anon.spawnAgent(parent.agentId, { name: 'x' }), 401, 'UNAUTHENTICATED');
    expectError(await parent.client.spawnAgent(randomUUID(), { name: 'x' }), 404, 'NOT_FOUND');
    const child = await spawn(parent.client, parent.agentId, { budgetCents: 100 });
    expectError(await child.client.spawnAgent(child.agentId, { name: 'grandchild' }), 403, 'FORBIDDEN');
    expectError(await parent.owner.client.spawnAgent(child.agentId, { name: 'grandchild' }), 403, 'FORBIDDEN');
  });

  it('validates the body: budget at least 100, lifetime 1–168 hours, no unknown fields', async () => {
    const parent = await funded(ex, 1000);
    for (const body of [{ name: 'x', budgetCents: 99 }, { name: 'x', maxLifetimeHours: 169 }, { name: 'x', maxLifetimeHours: 0 }, { name: '' }, { name: 'x', agentType: 'persistent' }, { name: 'x', budgetCents: 100.5 }]) {
      expectError(await parent.client.spawnAgent(parent.agentId, body as SpawnAgentBody), 400, 'VALIDATION_ERROR');
    }
    expect((await walletOf(parent)).balanceCents).toBe(1000);
  });

  it('refuses a deactivated parent or caller with 403 AGENT_INACTIVE (D6.5)', async () => {
    const parent = await funded(ex, 1000);
    unwrap(await parent.owner.client.deactivateAgent(parent.agentId));
    expectError(await parent.client.spawnAgent(parent.agentId, { name: 'x' }), 403, 'AGENT_INACTIVE');
    expectError(await parent.owner.client.spawnAgent(parent.agentId, { name: 'x' }), 403, 'AGENT_INACTIVE');
  });

  it('counts active children in the account’s agent limit (D6.4), and no longer counts expired ones', async () => {
    const owner = await ex.signUp();
    const children: Child[] = [];
    for (let i = 1; i < LIMIT; i++) children.push(await spawn(owner.client, owner.agentId));
    expectError(await owner.client.spawnAgent(owner.agentId, { name: 'one too many' }), 409, 'LIMIT_REACHED');
    expectError(await owner.client.createAgent({ name: 'one too many', agentType: 'persistent' }), 409, 'LIMIT_REACHED');
    await endLifetime(children[0]!.agentId);
    await expect.poll(async () => (unwrap(await owner.client.getAgent(children[0]!.agentId)) as { status: string }).status, { timeout: 10_000, interval: 200 }).toBe('expired');
    unwrap(await owner.client.spawnAgent(owner.agentId, { name: 'a place again' }));
  });
});

describe('delegation of a child (D6.8, D10.1)', () => {
  it('inherits the parent’s rules in force and only tightens them: looser values are clamped', async () => {
    const parent = await funded(ex, 10_000);
    unwrap(await parent.owner.client.setAccountDelegation(parent.accountId, { maxDailySpendCents: 5000, blockedCategories: ['gambling'] }));
    unwrap(await parent.owner.client.setAgentDelegation(parent.agentId, { maxTransactionCents: 500, allowedCategories: ['text', 'image'] }));
    const loose = await spawn(parent.client, parent.agentId, { budgetCents: 2000, delegation: { maxTransactionCents: 900, maxDailySpendCents: 300, allowedCategories: ['image', 'video'], blockedCategories: ['spam'] } });
    // Its own rules as stored; the parent's (and the account's) apply on top of them at every check.
    expect(loose.view.delegation).toEqual({ maxTransactionCents: 500, maxDailySpendCents: 300, allowedCategories: ['image'], blockedCategories: ['spam'] });
    // The owner cannot loosen them later either.
    expect(unwrap(await parent.owner.client.setAgentDelegation(loose.agentId, { maxTransactionCents: 10_000, allowedCategories: ['video'] }))).toEqual({ maxTransactionCents: 500, allowedCategories: [] });
  });

  it('enforces the rules at creation: a price above the inherited limit is DELEGATION_EXCEEDED', async () => {
    const parent = await funded(ex, 10_000);
    unwrap(await parent.owner.client.setAgentDelegation(parent.agentId, { maxTransactionCents: 500 }));
    const child = await spawn(parent.client, parent.agentId, { budgetCents: 3000 });
    const seller = await party(ex);
    const dear = unwrap(await seller.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: 800 } }))).id;
    const r = await child.client.createTransaction({ serviceId: dear, input: INPUT });
    expectError(r, 403, 'DELEGATION_EXCEEDED');
    expect(!r.ok && r.error.errors[0]!.details).toEqual({ rule: 'maxTransactionCents', limit: 500, attempted: 800 });
    // The parent's rules are read at each check: loosened for the parent, loosened for the child.
    unwrap(await parent.owner.client.setAgentDelegation(parent.agentId, { maxTransactionCents: 1000 }));
    await createHeld(child, { serviceId: dear, input: INPUT });
  });

  it('starts from the account’s defaults with inheritDelegation false — for the owner agent only', async () => {
    const parent = await funded(ex, 10_000);
    unwrap(await parent.owner.client.setAccountDelegation(parent.accountId, { maxTransactionCents: 700 }));
    unwrap(await parent.owner.client.setAgentDelegation(parent.agentId, { maxTransactionCents: 200 }));
    expectError(await parent.client.spawnAgent(parent.agentId, { name: 'x', inheritDelegation: false }), 403, 'FORBIDDEN');
    const child = await spawn(parent.owner.client, parent.agentId, { inheritDelegation: false, delegation: { maxTransactionCents: 5000 } });
    expect(child.view.delegation).toEqual({ maxTransactionCents: 700 });
  });
});

describe('expiry of a child (D6.8)', () => {
  async function sellerOf(price: number): Promise<{ seller: Party; serviceId: string }> {
    const seller = await party(ex);
    return { seller, serviceId: unwrap(await seller.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: price } }))).id };
  }

  it('expires the child: its key → 401, its available balance back to the parent, its services out of listing', async () => {
    const parent = await funded(ex, 5000);
    const child = await spawn(parent.client, parent.agentId, { budgetCents: 1500 });
    const category = `child-${randomUUID().slice(0, 8)}`;
    unwrap(await child.client.createService(serviceBody({ category })));
    expect(unwrap(await parent.client.listServices({ category })).length).toBe(1);
    await endLifetime(child.agentId);
    await expect.poll(async () => (await child.client.getAgent(child.agentId)).status, { timeout: 10_000, interval: 200 }).toBe(401);
    await expect.poll(async () => (unwrap(await parent.client.getAgent(child.agentId)) as { status: string }).status, { timeout: 10_000, interval: 200 }).toBe('expired');
    await expect.poll(async () => (await walletOf(parent)).balanceCents, { timeout: 10_000, interval: 200 }).toBe(5000);
    expect(await entries(parent.client, parent.agentId, ['parent_allocation', 'parent_return'])).toEqual([['parent_allocation', -1500], ['parent_return', 1500]]);
    expect(unwrap(await parent.owner.client.getWallet(child.agentId))).toMatchObject({ balanceCents: 0, availableCents: 0 });
    await expect.poll(async () => unwrap(await parent.client.listServices({ category })).length, { timeout: 10_000, interval: 200 }).toBe(0);
    // A closed wallet takes no money (D6.8): what would reach it belongs to the parent.
    expectError(await parent.owner.client.fund(child.agentId, 500), 409, 'INVALID_STATE');
    // Nobody brings an expired child back: deactivation is refused, a new key does not authenticate.
    expectError(await parent.owner.client.deactivateAgent(child.agentId), 409, 'INVALID_STATE');
    const rotated = unwrap(await parent.owner.client.rotateKey(child.agentId));
    expectError(await ex.anon.as({ apiKey: rotated.apiKey }).getAgent(child.agentId), 401, 'UNAUTHENTICATED');
    await ledgerOk();
  });

  it('refuses the key at expiresAt on every gateway, even with its principal still cached (before the sweep)', async () => {
    const parent = await funded(ex, 1000);
    const child = await spawn(parent.client, parent.agentId, { budgetCents: 100 });
    unwrap(await child.client.getAgent(child.agentId));
    // What a gateway holds for the key, as if its lifetime had just ended and identity had not swept yet.
    const cache = await ex.bus.kv(AUTH_CACHE.bucket(ex.bus.namespace), { ttlMs: AUTH_CACHE.ttlMs });
    const hash = hashApiKey(child.apiKey);
    const cached = JSON.parse((await cache.get(hash))!.value) as { expiresAt: string };
    expect(cached.expiresAt).toBe(child.view.expiresAt);
    await cache.put(hash, JSON.stringify({ ...cached, expiresAt: new Date(Date.now() - 1000).toISOString() }));
    // A replica that starts now finds that principal in the shared cache, then in its own memory
    // (docs/gateway-caches.md): the key is refused from both.
    const replica = await buildGateway({ bus: ex.bus, config: ex.config, logger: testLogger() });
    try {
      const viaReplica = new ExchangeClient({ baseUrl: await replica.listen({ host: '127.0.0.1', port: 0 }), apiKey: child.apiKey });
      for (const r of [await viaReplica.getAgent(child.agentId), await viaReplica.getAgent(child.agentId)]) {
        expectError(r, 401, 'UNAUTHENTICATED');
        expect(!r.ok && r.error.message).toMatch(/expired/);
      }
    } finally {
      await replica.close();
    }
  });

  it('returns what was held for the child’s transactions to the parent as they end; a settled one pays the seller', async () => {
    const parent = await funded(ex, 5000);
    const child = await spawn(parent.client, parent.agentId, { budgetCents: 2000 });
    const a = await sellerOf(300);
    const b = await sellerOf(500);
    const cancelled = await createHeld(child, { serviceId: a.serviceId, input: INPUT });
    const paid = await createHeld(child, { serviceId: b.serviceId, input: INPUT });
    await endLifetime(child.agentId);
    // 2000 − 300 − 500 = 1200 returns at once; 800 stays held.
    await expect.poll(async () => (await walletOf(parent)).balanceCents, { timeout: 10_000, interval: 200 }).toBe(4200);
    expect(unwrap(await parent.client.getWallet(child.agentId))).toMatchObject({ balanceCents: 800, heldCents: 800, availableCents: 0 });
    // The seller cancels one: its 300 goes back to the child and on to the parent in one step.
    unwrap(await a.seller.client.cancel(cancelled.id));
    await expect.poll(async () => (await walletOf(parent)).balanceCents, { timeout: 10_000, interval: 200 }).toBe(4500);
    // The other is delivered and settles at the end of its review window (the child can no longer verify).
    unwrap(await b.seller.client.deliver(paid.id, { output: OUTPUT }));
    const settled = await waitForStatus(b.seller, paid.id, 'settled', 15_000);
    expect(settled.agreedPriceCents).toBe(500);
    expect(unwrap(await parent.client.getWallet(child.agentId))).toMatchObject({ balanceCents: 0, heldCents: 0, availableCents: 0 });
    expect((await walletOf(parent)).balanceCents).toBe(4500);
    expect(await entries(parent.client, child.agentId, ['parent_allocation', 'parent_return', 'fund_return'])).toEqual([
      ['parent_allocation', 2000], ['parent_return', -1200], ['fund_return', 300], ['parent_return', -300],
    ]);
    await ledgerOk();
  });
});

describe('the spawn saga (D6.8, D9.9)', () => {
  it('answers 202 while the wallet service is down — the key waits — and finishes once it is back', async () => {
    const parent = await funded(ex, 3000);
    await ex.stopWallet();
    let pending: SpawnedAgentView;
    let refusedId: string;
    try {
      const r = await parent.client.spawnAgent(parent.agentId, { name: 'later', budgetCents: 1000 });
      expect(r.status).toBe(202);
      pending = unwrap(r);
      expect(pending.wallet).toBeNull();
      expectError(await ex.anon.as({ apiKey: pending.apiKey }).getAgent(pending.id), 401, 'UNAUTHENTICATED');
      // Too dear once the first budget is taken: refused when the wallet decides, and the child deleted.
      const dear = await parent.client.spawnAgent(parent.agentId, { name: 'too dear', budgetCents: 2500 });
      expect(dear.status).toBe(202);
      refusedId = unwrap(dear).id;
    } finally {
      await ex.startWallet();
    }
    await eventually(async () => (await ex.anon.as({ apiKey: pending.apiKey }).getAgent(pending.id)).ok, 15_000, 100);
    await expect.poll(async () => (await parent.client.getAgent(refusedId)).status, { timeout: 15_000, interval: 100 }).toBe(404);
    expect(await walletOf(parent)).toMatchObject({ balanceCents: 2000 });
    expect(unwrap(await parent.client.getWallet(pending.id)).balanceCents).toBe(1000);
    await ledgerOk();
  });
});

describe('expiry across a crash (D6.8)', () => {
  let proc: ExchangeProcess | undefined;
  showLogOnFailure(() => proc);
  it('expires a child whose lifetime ended while the exchange was down (SIGKILL), once, its funds back with the parent', async () => {
    proc = await exchangeProcess();
    try {
      let url = await proc.start();
      const parent = await signingMember(new ExchangeClient({ baseUrl: url }), 'parent');
      unwrap(await parent.client.fund(parent.id, 2000));
      const child = unwrap(await parent.client.spawnAgent(parent.id, { name: 'short-lived', budgetCents: 700 }));
      await proc.kill();
      const sql = new pg.Client({ connectionString: proc.db.url });
      await sql.connect();
      await sql.query(`update identity.agents set expires_at = now() - interval '1 second' where id = $1`, [child.id]);
      await sql.end();
      url = await proc.start();
      const asParent = new ExchangeClient({ baseUrl: url, apiKey: parent.apiKey });
      await expect.poll(async () => (unwrap(await asParent.getAgent(child.id)) as { status: string }).status, { timeout: 15_000, interval: 100 }).toBe('expired');
      expectError(await new ExchangeClient({ baseUrl: url, apiKey: child.apiKey }).getAgent(child.id), 401, 'UNAUTHENTICATED');
      await expect.poll(async () => unwrap(await asParent.getWallet(parent.id)).balanceCents, { timeout: 15_000, interval: 100 }).toBe(2000);
      expect(unwrap(await asParent.ledger(parent.id, { limit: 100 })).filter((e) => e.txType.startsWith('parent_')).map((e) => [e.txType, e.amountCents]))
        .toEqual([['parent_allocation', -700], ['parent_return', 700]]);
    } finally {
      await proc.dispose();
    }
  }, 120_000);
});
