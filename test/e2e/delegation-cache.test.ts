import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKey, unwrap } from '@agent-exchange/client';
import { startTransactionService, type TransactionService } from '@aex/transactions';
import { testLogger } from '@aex/platform/testing';
import { expectError, startTestExchange, type Member, type TestExchange } from './harness.js';
import { funded, INPUT, party, serviceBody } from './transaction-kit.js';

// D10.1 and D7.6: each transactions replica keeps the delegation rules in force it read
// from identity and the current contracts it read from the catalog; the owner makes every replica
// forget a change before it answers it (docs/gateway-caches.md). Two transactions replicas share the
// bus, so a purchase lands on either: after a change, every purchase must see it, whichever replica
// answers — a replica that kept the old rules or contract would let one through.

let ex: TestExchange;
let second: TransactionService;
let serviceId: string;
/** Purchases made after a change: with two replicas answering at random, a stale one is hit with probability 1 − 2⁻⁸. */
const AFTER_A_CHANGE = 8;

beforeAll(async () => {
  // Each case makes some thirty purchases by one agent: more than D4's default write limit allows.
  ex = await startTestExchange({ RATE_LIMIT_WRITE_PER_MIN: '10000' });
  second = await startTransactionService({ bus: ex.bus, databaseUrl: ex.databaseUrl, config: ex.config, logger: testLogger() });
  const seller = await party(ex);
  serviceId = unwrap(await seller.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: 1000 } }))).id;
});
afterAll(async () => {
  await second?.stop();
  await ex?.stop();
});

/** Purchases until both replicas have surely read the buyer's rules and the contract (each kept them). */
async function warm(buyer: Member, service = serviceId) {
  for (let i = 0; i < AFTER_A_CHANGE; i++) expect(unwrap(await buyer.client.createTransaction({ serviceId: service, input: INPUT })).status).toBe('funds_held');
}

async function everyPurchaseRefused(buyer: Member, details: unknown) {
  for (let i = 0; i < AFTER_A_CHANGE; i++) {
    const r = await buyer.client.createTransaction({ serviceId, input: INPUT });
    expectError(r, 403, 'DELEGATION_EXCEEDED');
    expect(!r.ok && r.error.errors[0]!.details).toEqual(details);
  }
}

describe('transactions replicas keep the rules in force, told of every change (D10.1)', () => {
  it('an agent’s tightened rule refuses its very next purchase on every replica, and loosening it lets the next through', async () => {
    const buyer = await funded(ex, 100_000);
    await warm(buyer);
    unwrap(await buyer.owner.client.setAgentDelegation(buyer.agentId, { maxTransactionCents: 500 }));
    await everyPurchaseRefused(buyer, { rule: 'maxTransactionCents', limit: 500, attempted: 1000 });
    unwrap(await buyer.owner.client.setAgentDelegation(buyer.agentId, {}));
    await warm(buyer);
  });

  it('an account’s tightened defaults refuse the next purchase of every agent of the account (D10.1: defaults under the agent’s own)', async () => {
    const buyer = await funded(ex, 100_000);
    await warm(buyer);
    unwrap(await buyer.owner.client.setAccountDelegation(buyer.accountId, { maxTransactionCents: 600 }));
    await everyPurchaseRefused(buyer, { rule: 'maxTransactionCents', limit: 600, attempted: 1000 });
    // The agent's own rule still overrides the defaults, field by field.
    unwrap(await buyer.owner.client.setAgentDelegation(buyer.agentId, { maxTransactionCents: 2000 }));
    await warm(buyer);
  });

  it('D23.3: a rule changed by PATCH refuses the next purchase on every replica, and removing it with null lets the next through', async () => {
    const buyer = await funded(ex, 100_000);
    unwrap(await buyer.owner.client.patchAgentDelegation(buyer.agentId, { maxDailySpendCents: 1_000_000 }));
    await warm(buyer);
    unwrap(await buyer.owner.client.patchAgentDelegation(buyer.agentId, { maxTransactionCents: 800 }));
    await everyPurchaseRefused(buyer, { rule: 'maxTransactionCents', limit: 800, attempted: 1000 });
    unwrap(await buyer.owner.client.patchAccountDelegation(buyer.accountId, { maxTransactionCents: 100 }));
    unwrap(await buyer.owner.client.patchAgentDelegation(buyer.agentId, { maxTransactionCents: null }));
    // The agent's own rule is gone: the account's default, changed by PATCH too, is in force.
    await everyPurchaseRefused(buyer, { rule: 'maxTransactionCents', limit: 100, attempted: 1000 });
    unwrap(await buyer.owner.client.patchAccountDelegation(buyer.accountId, { maxTransactionCents: null }));
    await warm(buyer);
  });

  it('a parent’s tightened rules refuse its child’s next purchase (D6.8: the child starts from them)', async () => {
    const parent = await funded(ex, 100_000);
    const view = unwrap(await parent.client.spawnAgent(parent.agentId, { name: 'child', budgetCents: 50_000 }));
    const keys = generateSigningKey();
    unwrap(await ex.anon.as({ apiKey: view.apiKey }).updateAgent(view.id, { signingKeyPublic: keys.publicKey }));
    const child: Member = { accountId: view.accountId, agentId: view.id, apiKey: view.apiKey, client: ex.anon.as({ apiKey: view.apiKey, signingSecretKey: keys.secretKey }) };
    // The child's wallet is funded by the spawn saga: its first purchase may come before it.
    await expect.poll(async () => unwrap(await child.client.getWallet(child.agentId)).balanceCents, { timeout: 10_000 }).toBe(50_000);
    await warm(child);
    unwrap(await parent.owner.client.setAgentDelegation(parent.agentId, { maxTransactionCents: 700 }));
    await everyPurchaseRefused(child, { rule: 'maxTransactionCents', limit: 700, attempted: 1000 });
  });

  it('a paused service refuses the next purchase on every replica, and resumed takes it again (D7.6, D9.1)', async () => {
    const buyer = await funded(ex, 100_000);
    const seller = await party(ex);
    const own = unwrap(await seller.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: 1000 } }))).id;
    await warm(buyer, own);
    unwrap(await seller.client.updateService(own, { status: 'paused' }));
    for (let i = 0; i < AFTER_A_CHANGE; i++) expectError(await buyer.client.createTransaction({ serviceId: own, input: INPUT }), 409, 'SERVICE_NOT_ACTIVE');
    unwrap(await seller.client.updateService(own, { status: 'active' }));
    await warm(buyer, own);
  });

  it('a new price is charged from the next purchase on every replica (a new revision, D7.6)', async () => {
    const buyer = await funded(ex, 100_000);
    const seller = await party(ex);
    const own = unwrap(await seller.client.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: 1000 } }))).id;
    await warm(buyer, own);
    unwrap(await seller.client.updateService(own, { pricing: { model: 'fixed', basePriceCents: 1300 }, version: '1.1.0' }));
    for (let i = 0; i < AFTER_A_CHANGE; i++) {
      const t = unwrap(await buyer.client.createTransaction({ serviceId: own, input: INPUT }));
      expect(t).toMatchObject({ agreedPriceCents: 1300, serviceVersion: '1.1.0' });
    }
  });

  it('a deleted service, and a deactivated provider’s, refuse the next purchase on every replica (D6.5)', async () => {
    const buyer = await funded(ex, 100_000);
    const seller = await party(ex);
    const [gone, orphaned] = await Promise.all([1, 2].map(async () => unwrap(await seller.client.createService(serviceBody())).id));
    await warm(buyer, gone!);
    await warm(buyer, orphaned!);
    unwrap(await seller.client.deleteService(gone!));
    for (let i = 0; i < AFTER_A_CHANGE; i++) expectError(await buyer.client.createTransaction({ serviceId: gone!, input: INPUT }), 409, 'SERVICE_NOT_ACTIVE');
    unwrap(await seller.owner.client.deactivateAgent(seller.agentId));
    for (let i = 0; i < AFTER_A_CHANGE; i++) {
      const r = await buyer.client.createTransaction({ serviceId: orphaned!, input: INPUT });
      expectError(r, 409, 'SERVICE_NOT_ACTIVE');
      expect(!r.ok && r.error.errors[0]!.details).toEqual({ serviceStatus: 'active', providerStatus: 'deactivated' });
    }
  });

  it('answers from memory: with identity and the catalog stopped, a buyer whose rules and contract are kept still buys', async () => {
    const buyer = await funded(ex, 100_000);
    await warm(buyer);
    // The gateways keep the principal (D2.5), the transactions replicas the rules and the contract;
    // without them every purchase would wait for identity and the catalog, and fail.
    await ex.stopIdentity();
    await ex.stopCatalog();
    try {
      await warm(buyer);
    } finally {
      await ex.startIdentity();
      await ex.startCatalog();
    }
  });
});
