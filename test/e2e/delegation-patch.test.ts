import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { expectError, startTestExchange, type Member, type TestExchange } from './harness.js';

// D23.3: PATCH of delegation rules, for one agent and for the account's defaults — only the rules
// named change, `null` removes one, the answer says what changed; atomic under concurrent changes;
// the authorization of PUT; idempotent with a key. PUT still replaces.

let ex: TestExchange;
let owner: Member; // owner agent of account A
let worker: Member; // another agent of account A
let colleague: Member; // a third agent of account A
let stranger: Member; // owner agent of account B

beforeAll(async () => {
  // The owner agent makes more changes than D4's default write limit allows in a minute.
  ex = await startTestExchange({ RATE_LIMIT_WRITE_PER_MIN: '10000' });
  owner = await ex.signUp({ displayName: 'Account A' });
  worker = await ex.addAgent(owner, { name: 'worker' });
  colleague = await ex.addAgent(owner, { name: 'colleague' });
  stranger = await ex.signUp({ displayName: 'Account B' });
});
afterAll(async () => ex?.stop());

/** A raw PATCH through the gateway (a body the client's types would not allow, or none at all). */
async function rawPatch(path: string, apiKey: string, body?: string) {
  const res = await fetch(`${ex.url}${path}`, { method: 'PATCH', headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body });
  return { status: res.status, body: (await res.json()) as { data: unknown; errors: Array<{ code: string; message: string; field?: string }> } };
}

const ownRules = async (agentId: string) => (unwrap(await owner.client.getAgent(agentId)) as { delegation: Record<string, unknown> }).delegation;

describe('PATCH /v1/agents/{id}/delegation (D23.3)', () => {
  it('D23.3: changes only the rules named, keeping the others, and says what changed', async () => {
    const agent = await ex.addAgent(owner);
    expect(unwrap(await owner.client.patchAgentDelegation(agent.agentId, { requireHumanApprovalAboveCents: 200 }))).toEqual({
      rules: { requireHumanApprovalAboveCents: 200 },
      changes: [{ field: 'requireHumanApprovalAboveCents', from: null, to: 200 }],
    });
    expect(unwrap(await owner.client.patchAgentDelegation(agent.agentId, { maxTransactionCents: 250, allowedCategories: ['text', 'data'] }))).toEqual({
      rules: { requireHumanApprovalAboveCents: 200, maxTransactionCents: 250, allowedCategories: ['text', 'data'] },
      changes: [{ field: 'maxTransactionCents', from: null, to: 250 }, { field: 'allowedCategories', from: null, to: ['text', 'data'] }],
    });
    expect(await ownRules(agent.agentId)).toEqual({ requireHumanApprovalAboveCents: 200, maxTransactionCents: 250, allowedCategories: ['text', 'data'] });
  });

  it('D23.3: null removes one rule; a value already in force is no change', async () => {
    const agent = await ex.addAgent(owner);
    unwrap(await owner.client.patchAgentDelegation(agent.agentId, { maxTransactionCents: 300, maxDailySpendCents: 1000, blockedCategories: ['games'] }));
    expect(unwrap(await owner.client.patchAgentDelegation(agent.agentId, { maxTransactionCents: null, maxDailySpendCents: 1000, autoApproveBelow: null }))).toEqual({
      rules: { maxDailySpendCents: 1000, blockedCategories: ['games'] },
      changes: [{ field: 'maxTransactionCents', from: 300, to: null }],
    });
    expect(unwrap(await owner.client.patchAgentDelegation(agent.agentId, { blockedCategories: ['games'] }))).toEqual({ rules: { maxDailySpendCents: 1000, blockedCategories: ['games'] }, changes: [] });
    expect(await ownRules(agent.agentId)).toEqual({ maxDailySpendCents: 1000, blockedCategories: ['games'] });
  });

  it('D23.3: an empty body, or none, is refused, saying to name at least one field', async () => {
    for (const body of ['{}', undefined]) {
      const r = await rawPatch(`/v1/agents/${worker.agentId}/delegation`, owner.apiKey, body);
      expect(r.status).toBe(400);
      expect(r.body.errors[0]).toMatchObject({ code: 'VALIDATION_ERROR', field: '/body' });
      expect(r.body.errors[0]!.message).toContain('must name at least one field: maxTransactionCents, maxDailySpendCents, allowedCategories, blockedCategories, requireHumanApprovalAboveCents, autoApproveBelow');
    }
  });

  it('D23.3: unknown fields and bad values are refused as PUT refuses them, and nothing is applied', async () => {
    const agent = await ex.addAgent(owner);
    unwrap(await owner.client.patchAgentDelegation(agent.agentId, { maxTransactionCents: 400 }));
    const r = await owner.client.patchAgentDelegation(agent.agentId, { maxDailySpendCents: 900, maxTransactionCent: 5 } as never);
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(!r.ok && r.error.errors.map((e) => [e.field, e.message])).toEqual([['/body/maxTransactionCent', 'Unknown property "maxTransactionCent" is not allowed; did you mean "maxTransactionCents"?']]);
    const bad = await owner.client.patchAgentDelegation(agent.agentId, { maxDailySpendCents: 900, autoApproveBelow: -1 });
    expectError(bad, 400, 'VALIDATION_ERROR');
    expect(!bad.ok && bad.error.errors.map((e) => e.field)).toEqual(['/body/autoApproveBelow']);
    expect(await ownRules(agent.agentId)).toEqual({ maxTransactionCents: 400 });
  });

  it('D23.3: the owner agent may change its own rules and another agent’s', async () => {
    expect(unwrap(await owner.client.patchAgentDelegation(owner.agentId, { autoApproveBelow: 75 })).rules).toMatchObject({ autoApproveBelow: 75 });
    expect(unwrap(await owner.client.patchAgentDelegation(worker.agentId, { maxTransactionCents: 120 })).rules).toMatchObject({ maxTransactionCents: 120 });
  });
  it('D23.3: refuses an agent changing its own rules, or another agent’s of its account, with 403', async () => {
    expectError(await worker.client.patchAgentDelegation(worker.agentId, { maxTransactionCents: 1 }), 403, 'FORBIDDEN');
    expectError(await worker.client.patchAgentDelegation(colleague.agentId, { maxTransactionCents: 1 }), 403, 'FORBIDDEN');
  });
  it('D23.3: refuses another account with 403', async () => expectError(await stranger.client.patchAgentDelegation(worker.agentId, { maxTransactionCents: 1 }), 403, 'FORBIDDEN'));
  it('D23.3: needs authentication', async () => expectError(await ex.anon.patchAgentDelegation(worker.agentId, { maxTransactionCents: 1 }), 401, 'UNAUTHENTICATED'));
  it('D23.3: answers an unknown agent with 404', async () => expectError(await owner.client.patchAgentDelegation(randomUUID(), { maxTransactionCents: 1 }), 404, 'NOT_FOUND'));

  it('D23.3: two changes of different rules at once both hold (read, merged and written under a row lock)', async () => {
    const agent = await ex.addAgent(owner);
    for (let round = 1; round <= 8; round++) {
      const [a, b] = await Promise.all([
        owner.client.patchAgentDelegation(agent.agentId, { maxTransactionCents: round }),
        owner.client.patchAgentDelegation(agent.agentId, { maxDailySpendCents: 1000 + round }),
      ]);
      unwrap(a);
      unwrap(b);
      expect(await ownRules(agent.agentId)).toEqual({ maxTransactionCents: round, maxDailySpendCents: 1000 + round });
    }
  });

  it('D23.3: a repeat with the same Idempotency-Key gets the first answer and changes nothing again', async () => {
    const agent = await ex.addAgent(owner);
    const key = randomUUID();
    const first = await owner.client.patchAgentDelegation(agent.agentId, { maxTransactionCents: 500 }, { idempotencyKey: key });
    expect(unwrap(first).changes).toEqual([{ field: 'maxTransactionCents', from: null, to: 500 }]);
    unwrap(await owner.client.patchAgentDelegation(agent.agentId, { maxTransactionCents: 700 }));
    const repeat = await owner.client.patchAgentDelegation(agent.agentId, { maxTransactionCents: 500 }, { idempotencyKey: key });
    expect(unwrap(repeat)).toEqual(unwrap(first));
    expect(repeat.headers?.get('idempotent-replayed')).toBe('true');
    expect(await ownRules(agent.agentId)).toEqual({ maxTransactionCents: 700 });
  });

  it('D23.3: a child’s merged rules only tighten what it starts from (D6.8), as with PUT', async () => {
    const parent = await ex.addAgent(owner);
    unwrap(await owner.client.patchAgentDelegation(parent.agentId, { maxTransactionCents: 300 }));
    const child = unwrap(await parent.client.spawnAgent(parent.agentId, { name: 'child' }));
    expect(unwrap(await owner.client.patchAgentDelegation(child.id, { maxTransactionCents: 900, maxDailySpendCents: 50 }))).toEqual({
      rules: { maxTransactionCents: 300, maxDailySpendCents: 50 },
      changes: [{ field: 'maxTransactionCents', from: null, to: 300 }, { field: 'maxDailySpendCents', from: null, to: 50 }],
    });
  });

  it('D23.3: PUT still replaces: every rule it does not give is removed', async () => {
    const agent = await ex.addAgent(owner);
    unwrap(await owner.client.patchAgentDelegation(agent.agentId, { maxTransactionCents: 250, requireHumanApprovalAboveCents: 200 }));
    expect(unwrap(await owner.client.setAgentDelegation(agent.agentId, { maxTransactionCents: 250 }))).toEqual({ maxTransactionCents: 250 });
    expect(await ownRules(agent.agentId)).toEqual({ maxTransactionCents: 250 });
  });
});

describe('PATCH /v1/accounts/{id}/delegation (D23.3)', () => {
  it('D23.3: changes only the defaults named, null removes one, and says what changed', async () => {
    const account = await ex.signUp();
    unwrap(await account.client.setAccountDelegation(account.accountId, { maxTransactionCents: 5000, requireHumanApprovalAboveCents: 200 }));
    expect(unwrap(await account.client.patchAccountDelegation(account.accountId, { maxTransactionCents: 250, requireHumanApprovalAboveCents: null, blockedCategories: ['games'] }))).toEqual({
      rules: { maxTransactionCents: 250, blockedCategories: ['games'] },
      changes: [
        { field: 'maxTransactionCents', from: 5000, to: 250 },
        { field: 'blockedCategories', from: null, to: ['games'] },
        { field: 'requireHumanApprovalAboveCents', from: 200, to: null },
      ],
    });
    expect(unwrap(await account.client.getAccount(account.accountId)).defaultDelegation).toEqual({ maxTransactionCents: 250, blockedCategories: ['games'] });
  });

  it('D23.3: an empty body is refused, saying to name at least one field', async () => {
    const r = await rawPatch(`/v1/accounts/${owner.accountId}/delegation`, owner.apiKey, '{}');
    expect([r.status, r.body.errors[0]?.code]).toEqual([400, 'VALIDATION_ERROR']);
    expect(r.body.errors[0]!.message).toContain('must name at least one field');
  });
  it('D23.3: refuses unknown fields', async () => {
    const r = await owner.client.patchAccountDelegation(owner.accountId, { sometimes: true } as never);
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(!r.ok && r.error.errors[0]?.field).toBe('/body/sometimes');
  });
  it('D23.3: refuses another agent of the account with 403', async () => expectError(await worker.client.patchAccountDelegation(owner.accountId, { maxTransactionCents: 1 }), 403, 'FORBIDDEN'));
  it('D23.3: hides another account as 404', async () => expectError(await stranger.client.patchAccountDelegation(owner.accountId, { maxTransactionCents: 1 }), 404, 'NOT_FOUND'));
  it('D23.3: needs authentication', async () => expectError(await ex.anon.patchAccountDelegation(owner.accountId, { maxTransactionCents: 1 }), 401, 'UNAUTHENTICATED'));

  it('D23.3: two changes of different defaults at once both hold', async () => {
    const account = await ex.signUp();
    for (let round = 1; round <= 8; round++) {
      const [a, b] = await Promise.all([
        account.client.patchAccountDelegation(account.accountId, { autoApproveBelow: round }),
        account.client.patchAccountDelegation(account.accountId, { allowedCategories: [`c${round}`] }),
      ]);
      unwrap(a);
      unwrap(b);
      expect(unwrap(await account.client.getAccount(account.accountId)).defaultDelegation).toEqual({ autoApproveBelow: round, allowedCategories: [`c${round}`] });
    }
  });
});
