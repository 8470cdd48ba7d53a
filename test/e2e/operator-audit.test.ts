import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap, type Outcome, type Success } from '@agent-exchange/client';
import { expectError, startTestExchange, type TestExchange } from './harness.js';

// D15.3: every operator action is in an audit log the operator can read — the
// suspension written with its effect, the ledger check reported by the wallet service — and nobody
// else can read it.

let ex: TestExchange;

beforeAll(async () => {
  ex = await startTestExchange();
}, 120_000);

afterAll(async () => {
  await ex?.stop();
});

/** The whole answer of a request that must succeed (its request id, its pagination). */
function succeeded<T>(o: Outcome<T>): Success<T> {
  if (!o.ok) throw o.error;
  return o;
}

const actions = async () => unwrap(await ex.admin.operatorActions({ limit: 100 }));

describe('the operator audit log (D15.3)', () => {
  it('records a suspension with its agent and request, once however often it is sent under one key', async () => {
    const owner = await ex.signUp();
    const m = await ex.addAgent(owner);
    const key = randomUUID();
    const first = succeeded(await ex.admin.suspendAgent(m.agentId, { idempotencyKey: key }));
    expect(first.data.status).toBe('deactivated');
    unwrap(await ex.admin.suspendAgent(m.agentId, { idempotencyKey: key }));
    const mine = (await actions()).filter((a) => a.target?.id === m.agentId);
    expect(mine).toEqual([{
      id: expect.any(String), action: 'agent.suspend', service: 'identity', target: { type: 'agent', id: m.agentId },
      requestId: first.requestId, details: { previousStatus: 'active' }, at: expect.any(String),
    }]);
    // A second suspension (another request) is an action of its own.
    unwrap(await ex.admin.suspendAgent(m.agentId));
    const again = (await actions()).filter((a) => a.target?.id === m.agentId);
    expect(again.map((a) => a.details)).toEqual([{ previousStatus: 'deactivated' }, { previousStatus: 'active' }]);
  });

  it('records a failed suspension nowhere: nothing happened', async () => {
    const before = (await actions()).length;
    expectError(await ex.admin.suspendAgent(randomUUID()), 404, 'NOT_FOUND');
    expect((await actions()).length).toBe(before);
  });

  it('records each ledger check, reported by the wallet service, with its result', async () => {
    const check = succeeded(await ex.admin.checkLedger());
    expect(check.data.ok).toBe(true);
    await expect.poll(async () => (await actions()).find((a) => a.requestId === check.requestId), { timeout: 10_000, interval: 50 }).toMatchObject({
      action: 'ledger.check', service: 'wallet', target: null, details: { ok: true, violations: 0, walletsChecked: expect.any(Number) },
    });
  });

  it('lists newest first, with pagination', async () => {
    const checks = async () => (await actions()).filter((a) => a.action === 'ledger.check').length;
    const before = await checks();
    // Four of this test's own: a page of two from the second has more after it.
    for (let i = 0; i < 4; i++) unwrap(await ex.admin.checkLedger());
    await expect.poll(checks, { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(before + 4);
    const all = await actions();
    const times = all.map((a) => Date.parse(a.at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const page = succeeded(await ex.admin.operatorActions({ limit: 2, offset: 1 }));
    expect(page.data.map((a) => a.id)).toEqual(all.slice(1, 3).map((a) => a.id));
    expect(page.pagination).toMatchObject({ total: all.length, limit: 2, offset: 1, hasMore: true });
  });

  it('is the operator\'s alone', async () => {
    const owner = await ex.signUp();
    expectError(await ex.anon.operatorActions(), 401, 'UNAUTHENTICATED');
    expectError(await ex.anon.as({ adminToken: 'wrong-token-wrong-token' }).operatorActions(), 401, 'UNAUTHENTICATED');
    expectError(await owner.client.operatorActions(), 401, 'UNAUTHENTICATED');
    expectError(await ex.admin.operatorActions({ limit: 0 }), 400, 'VALIDATION_ERROR');
  });
});
