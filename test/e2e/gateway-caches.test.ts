import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ExchangeClient, unwrap } from '@agent-exchange/client';
import { GATEWAY_CACHES } from '@aex/contracts';
import { buildGateway } from '@aex/gateway';
import { testLogger } from '@aex/platform/testing';
import { expectError, startTestExchange, type Member, type TestExchange } from './harness.js';

// D2.5: every gateway replica answers principals and agent profiles from its own
// memory, and identity makes every replica forget a change before it answers it
// (docs/gateway-caches.md). Two gateways on one bus: changes go through the first, reads through
// the second, right after — each read would show the old state if the second had not been told.

let ex: TestExchange;
let second: FastifyInstance;
let secondUrl: string;
let owner: Member;
let stranger: Member;
/** The same agent's client on the second replica. */
const on2 = (m: Member | { apiKey: string }) => new ExchangeClient({ baseUrl: secondUrl, apiKey: m.apiKey });

beforeAll(async () => {
  ex = await startTestExchange();
  second = await buildGateway({ bus: ex.bus, config: ex.config, logger: testLogger() });
  secondUrl = await second.listen({ host: '127.0.0.1', port: 0 });
  owner = await ex.signUp();
  stranger = await ex.signUp();
});
afterAll(async () => {
  await second?.close();
  await ex?.stop();
});

/** Reads through the second replica twice, so its memory certainly holds the answer. */
async function warm(m: Member | { apiKey: string }, agentId: string) {
  unwrap(await on2(m).getAgent(agentId));
  return unwrap(await on2(m).getAgent(agentId));
}

describe('gateway replicas answer from memory, told of every change (D2.5)', () => {
  it('reads a profile change through another replica at once', async () => {
    const worker = await ex.addAgent(owner, { name: 'before' });
    expect((await warm(owner, worker.agentId)).name).toBe('before');
    unwrap(await owner.client.updateAgent(worker.agentId, { name: 'after', description: 'changed through the first replica' }));
    expect(unwrap(await on2(owner).getAgent(worker.agentId))).toMatchObject({ name: 'after', description: 'changed through the first replica' });
  });

  it('keeps the full profile to the agent’s account: another account gets the public one from the same replica (D2.3)', async () => {
    const full = await warm(owner, owner.agentId);
    expect(full).toHaveProperty('accountId', owner.accountId);
    const seen = await warm(stranger, owner.agentId);
    expect(seen).not.toHaveProperty('accountId');
    expect(seen).not.toHaveProperty('delegation');
    expect(seen.id).toBe(owner.agentId);
  });

  it('reads a delegation change at once on another replica', async () => {
    const worker = await ex.addAgent(owner);
    await warm(owner, worker.agentId);
    unwrap(await owner.client.setAgentDelegation(worker.agentId, { maxTransactionCents: 1234 }));
    expect(unwrap(await on2(owner).getAgent(worker.agentId))).toMatchObject({ delegation: { maxTransactionCents: 1234 } });
  });

  it('a deactivation shows at once on another replica, in the profile and in what the agent may do (D6.5)', async () => {
    const worker = await ex.addAgent(owner);
    await warm(owner, worker.agentId);
    await warm(worker, worker.agentId);
    unwrap(await owner.client.deactivateAgent(worker.agentId));
    expect(unwrap(await on2(owner).getAgent(worker.agentId)).status).toBe('deactivated');
    // The key still authenticates, but its principal now says deactivated.
    expectError(await on2(worker).spawnAgent(worker.agentId, { name: 'child' }), 403, 'AGENT_INACTIVE');
  });

  it('refuses a rotated key at once on another replica, and shows the new prefix (D2.5)', async () => {
    const worker = await ex.addAgent(owner);
    await warm(worker, worker.agentId);
    const rotated = unwrap(await owner.client.rotateKey(worker.agentId));
    expectError(await on2(worker).getAgent(worker.agentId), 401, 'UNAUTHENTICATED');
    expect(unwrap(await on2(owner).getAgent(worker.agentId))).toMatchObject({ keyPrefix: rotated.keyPrefix });
    expect(unwrap(await on2({ apiKey: rotated.apiKey }).getAgent(worker.agentId)).id).toBe(worker.agentId);
  });

  it('lists every live replica in the registry; a closed one marks its entry left, and a change after it does not wait for it', async () => {
    const registry = await ex.bus.kv(GATEWAY_CACHES.registry(ex.bus.namespace), { ttlMs: GATEWAY_CACHES.registryTtlMs });
    const live = await registry.keys();
    // The two gateways, and the transactions replica (it keeps the rules in force, D10.1).
    const roles = await Promise.all(live.map(async (k) => (JSON.parse((await registry.get(k))!.value) as { role: string }).role));
    expect(roles.sort()).toEqual(['gateway', 'gateway', 'transactions']);
    const third = await buildGateway({ bus: ex.bus, config: ex.config, logger: testLogger() });
    const [thirdId] = (await registry.keys()).filter((k) => !live.includes(k));
    expect(JSON.parse((await registry.get(thirdId!))!.value)).toEqual({ replicaId: thirdId, role: 'gateway' });
    await third.close();
    expect(JSON.parse((await registry.get(thirdId!))!.value)).toEqual({ replicaId: thirdId, role: 'gateway', left: true });
    // Listed, nobody listening, but left: not fenced (the entry stays as it is) and not waited for.
    const worker = await ex.addAgent(owner);
    const started = performance.now();
    unwrap(await owner.client.updateAgent(worker.agentId, { name: 'after a replica left' }));
    expect(performance.now() - started).toBeLessThan(GATEWAY_CACHES.leaseMs);
    expect(JSON.parse((await registry.get(thirdId!))!.value)).toEqual({ replicaId: thirdId, role: 'gateway', left: true });
    expect(unwrap(await on2(owner).getAgent(worker.agentId)).name).toBe('after a replica left');
  });

  it('fences a replica that does not confirm: the change waits out its lease, and the replica leaves the registry', async () => {
    const registry = await ex.bus.kv(GATEWAY_CACHES.registry(ex.bus.namespace), { ttlMs: GATEWAY_CACHES.registryTtlMs });
    // Listed, but nobody listens on its subject: a replica that stalled or lost its subscription.
    const silent = '00000000-0000-4000-8000-00000000dead';
    await registry.put(silent, JSON.stringify({ replicaId: silent }));
    const worker = await ex.addAgent(owner);
    const started = performance.now();
    unwrap(await owner.client.updateAgent(worker.agentId, { name: 'waited' }));
    expect(performance.now() - started).toBeGreaterThanOrEqual(GATEWAY_CACHES.leaseMs);
    expect(await registry.get(silent)).toBeNull();
    // The live replicas answered, and were not fenced (the closed one's entry is still marked left).
    const entries = await Promise.all((await registry.keys()).map(async (k) => JSON.parse((await registry.get(k))!.value) as { left?: true }));
    expect(entries.filter((e) => !e.left)).toHaveLength(3);
    expect(unwrap(await on2(owner).getAgent(worker.agentId)).name).toBe('waited');
  });

  it('answers a remembered profile without asking identity (no round trip on the hot path)', async () => {
    const worker = await ex.addAgent(owner, { name: 'remembered' });
    await warm(owner, worker.agentId);
    await ex.stopIdentity();
    try {
      // Identity is gone: only the replica's own memory can answer (principal and profile).
      expect(unwrap(await on2(owner).getAgent(worker.agentId)).name).toBe('remembered');
      // What it does not remember needs identity, which cannot answer now.
      expect((await on2(owner).getAgent(stranger.agentId)).status).toBe(503);
    } finally {
      await ex.startIdentity();
    }
  });
});
