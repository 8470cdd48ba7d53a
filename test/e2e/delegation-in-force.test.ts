import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { expectError, startTestExchange, type Member, type TestExchange } from './harness.js';

// D10.1, D6.8: GET /v1/agents/{id}/delegation answers an agent's own rules and the rules in force —
// what the exchange checks its purchases against — as identity computes them: the account's
// defaults overridden by its own; for a child, its parent's rules in force (or the account's
// defaults when spawned with `inheritDelegation: false`) tightened by its own. Any agent of the
// account reads them (D2.3); another account is answered 404 (D24.5).

let ex: TestExchange;
let owner: Member; // owner agent of account A
let worker: Member; // another agent of account A
let sibling: Member; // a third agent of account A
let stranger: Member; // owner agent of account B

const DEFAULTS = { maxTransactionCents: 5000, requireHumanApprovalAboveCents: 1000 };

beforeAll(async () => {
  ex = await startTestExchange();
  owner = await ex.signUp({ displayName: 'Account A' });
  unwrap(await owner.client.setAccountDelegation(owner.accountId, DEFAULTS));
  worker = await ex.addAgent(owner, { name: 'worker' });
  sibling = await ex.addAgent(owner, { name: 'sibling' });
  stranger = await ex.signUp({ displayName: 'Account B' });
}, 120_000);
afterAll(async () => ex?.stop());

describe('GET /v1/agents/{id}/delegation (D10.1, D6.8)', () => {
  it('D10.1: the owner agent reads an agent’s own rules and those in force: the account’s defaults overridden by its own', async () => {
    unwrap(await owner.client.patchAgentDelegation(worker.agentId, { maxDailySpendCents: 2000, requireHumanApprovalAboveCents: 300 }));
    expect(unwrap(await owner.client.getAgentDelegation(worker.agentId))).toEqual({
      agentId: worker.agentId,
      own: { maxDailySpendCents: 2000, requireHumanApprovalAboveCents: 300 },
      inForce: { maxTransactionCents: 5000, maxDailySpendCents: 2000, requireHumanApprovalAboveCents: 300 },
      base: 'account',
    });
  });

  it('D6.8: a child whose own daily limit is above its parent’s has its parent’s in force (tightened, not overridden)', async () => {
    const parent = await ex.addAgent(owner, { name: 'parent' });
    unwrap(await owner.client.patchAgentDelegation(parent.agentId, { maxDailySpendCents: 1000 }));
    const child = unwrap(await parent.client.spawnAgent(parent.agentId, { name: 'child', delegation: { maxDailySpendCents: 800, maxTransactionCents: 200 } }));
    // The parent's limit lowered after the spawn reaches the child at once; its own stays as it was.
    unwrap(await owner.client.patchAgentDelegation(parent.agentId, { maxDailySpendCents: 300 }));
    expect(unwrap(await owner.client.getAgentDelegation(child.id))).toEqual({
      agentId: child.id,
      own: { maxDailySpendCents: 800, maxTransactionCents: 200 },
      inForce: { maxTransactionCents: 200, maxDailySpendCents: 300, requireHumanApprovalAboveCents: 1000 },
      base: 'parent',
    });
  });

  it('D6.8: a child spawned with inheritDelegation false starts from the account’s defaults, not its parent’s rules', async () => {
    const parent = await ex.addAgent(owner, { name: 'parent' });
    unwrap(await owner.client.patchAgentDelegation(parent.agentId, { maxDailySpendCents: 300 }));
    const child = unwrap(await owner.client.spawnAgent(parent.agentId, { name: 'child', inheritDelegation: false, delegation: { maxTransactionCents: 700 } }));
    expect(unwrap(await owner.client.getAgentDelegation(child.id))).toEqual({
      agentId: child.id,
      own: { maxTransactionCents: 700 },
      inForce: { maxTransactionCents: 700, requireHumanApprovalAboveCents: 1000 },
      base: 'account',
    });
  });

  it('D2.3: any agent of the account reads them: a sibling, and the agent itself', async () => {
    const seen = unwrap(await sibling.client.getAgentDelegation(worker.agentId));
    expect(seen).toEqual(unwrap(await owner.client.getAgentDelegation(worker.agentId)));
    expect(unwrap(await worker.client.getAgentDelegation(worker.agentId)).inForce).toEqual(seen.inForce);
  });

  it('D24.5: hides them from another account with 404, as if the agent did not exist', async () =>
    expectError(await stranger.client.getAgentDelegation(worker.agentId), 404, 'NOT_FOUND'));
  it('D10.1: needs authentication', async () => expectError(await ex.anon.getAgentDelegation(worker.agentId), 401, 'UNAUTHENTICATED'));
  it('D10.1: answers an unknown agent with 404', async () => expectError(await owner.client.getAgentDelegation(randomUUID()), 404, 'NOT_FOUND'));
});
