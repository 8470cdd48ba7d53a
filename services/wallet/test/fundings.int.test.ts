import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childSaga, walletOps, type Principal } from '@aex/contracts';
import { callOperation, idempotencyKeyHash, operationScope } from '@aex/platform';
import { eventually } from '@aex/platform/testing';
import { checkLedgerInvariants } from '../src/wallets/check.js';
import { agentWith, balances, send, startSagaKit, walletOf, type SagaKit } from './saga-kit.js';

// Fundings without an Idempotency-Key, written by group commit (D13.4) on real Postgres: a batch in
// one statement sent with its commit, each funding answered with the balance its own entry left; a
// batch holding a wallet closed since (D6.8) written again without it.

let kit: SagaKit;
beforeAll(async () => {
  kit = await startSagaKit();
});
afterAll(async () => kit?.stop());

const funding = async (agentId: string, amountCents: number) => ({ agentId, walletId: await walletOf(kit, agentId), amountCents, sessionId: `cs_test_${randomUUID()}`, provider: 'sandbox' });
/** A child of `parent`, its budget allocated, then closed (its money back with the parent). */
const closedChildOf = async (parent: string) => {
  const child = randomUUID();
  const before = (await balances(kit, parent)).balanceCents;
  await send(kit, childSaga.allocate, { childAgentId: child, parentAgentId: parent, accountId: randomUUID(), budgetCents: 1000 });
  await eventually(async () => kit.childAnswers.some((x) => x.data.childAgentId === child && x.type === childSaga.funded.type) || null);
  await send(kit, childSaga.close, { childAgentId: child });
  await eventually(async () => (await kit.wallet.deps.db.selectFrom('wallets').select('closedAt').where('agentId', '=', child).executeTakeFirstOrThrow()).closedAt !== null || null);
  await eventually(async () => (await balances(kit, parent)).balanceCents === before || null);
  return child;
};
/** The fundings' entries: which database transaction wrote each, and the balance it left. */
const entriesOf = async (sessions: string[]) => (await sql<{ operationId: string; tx: string; balanceAfterCents: string }>`
  select operation_id, xmin::text as tx, balance_after_cents from ledger_entries where operation_id = any(${sessions}) order by seq`.execute(kit.wallet.deps.db)).rows;

describe('fundings by group commit', () => {
  it('writes a batch in one statement, each funding answered with the balance its own entry left', async () => {
    const [a, b] = [await agentWith(kit, 0), await agentWith(kit, 1000)];
    const fundings = await Promise.all([a, b, a, b, a, a].map((agent, i) => funding(agent, 500 + i)));
    // At most two batches are in flight: what arrives meanwhile waits and goes together. Which
    // funding joins which batch depends on when each arrives, so the figures are checked in the
    // order the entries were written, not in the order of submission.
    const answers = await Promise.all(fundings.map((f) => kit.wallet.deps.fundings.submit(f)));
    const entries = await entriesOf(fundings.map((f) => f.sessionId));
    expect(entries.map((e) => [e.operationId, Number(e.balanceAfterCents)]).sort()).toEqual(fundings.map((f, i) => [f.sessionId, answers[i]]).sort());
    for (const [agent, opening] of [[a, 0], [b, 1000]] as const) {
      let balance = opening;
      for (const e of entries) {
        const f = fundings.find((x) => x.sessionId === e.operationId)!;
        if (f.agentId !== agent) continue;
        balance += f.amountCents;
        expect(Number(e.balanceAfterCents)).toBe(balance);
      }
    }
    // Six fundings in fewer database transactions than six: batches were written.
    expect(new Set(entries.map((e) => e.tx)).size).toBeLessThan(6);
    const sessions = await kit.wallet.deps.db.selectFrom('fundingSessions').select(['id', 'status']).where('id', 'in', fundings.map((f) => f.sessionId)).execute();
    expect(sessions.map((s) => s.status)).toEqual(Array(6).fill('paid'));
    expect(await balances(kit, a)).toEqual({ balanceCents: 500 + 502 + 504 + 505, heldCents: 0 });
    expect((await checkLedgerInvariants(kit.wallet.deps)).violations).toEqual([]);
  });

  it('writes a batch holding a closed child’s wallet again without it: that funding is refused (null, D6.8), the others written', async () => {
    const [parent, other, third] = [await agentWith(kit, 3000), await agentWith(kit, 0), await agentWith(kit, 0)];
    const child = await closedChildOf(parent);
    // Two fundings to keep both batches in flight busy, then a batch of three with the closed wallet in it.
    const fundings = await Promise.all([other, third, other, child, other].map((agent) => funding(agent, 700)));
    const answers = await Promise.all(fundings.map((f) => kit.wallet.deps.fundings.submit(f)));
    expect(answers[3]).toBeNull();
    expect(answers[1]).toBe(700);
    const entries = await entriesOf(fundings.map((f) => f.sessionId));
    expect(entries.map((e) => e.operationId)).not.toContain(fundings[3]!.sessionId);
    // `other`'s three fundings, in the order they were written (which batch each joined depends on
    // when it arrived): 700, 1400, 2100, each answered with the balance its own entry left.
    const others = entries.filter((e) => [0, 2, 4].some((i) => fundings[i]!.sessionId === e.operationId));
    expect(others.map((e) => Number(e.balanceAfterCents))).toEqual([700, 1400, 2100]);
    expect(others.map((e) => answers[fundings.findIndex((f) => f.sessionId === e.operationId)])).toEqual([700, 1400, 2100]);
    const sessions = await kit.wallet.deps.db.selectFrom('fundingSessions').select('id').where('id', 'in', fundings.map((f) => f.sessionId)).execute();
    expect(sessions.map((s) => s.id).sort()).toEqual(fundings.filter((_, i) => i !== 3).map((f) => f.sessionId).sort());
    expect(await balances(kit, child)).toEqual({ balanceCents: 0, heldCents: 0 });
    expect(await balances(kit, parent)).toEqual({ balanceCents: 3000, heldCents: 0 });
    expect((await checkLedgerInvariants(kit.wallet.deps)).violations).toEqual([]);
  });
});

// A funding sent without an Idempotency-Key carries a key the gateway made (docs/idempotency.md
// "Operation keys"): the batch writes its row with the funding, and the answer follows.
describe('fundings under operation keys the gateway made', () => {
  const keyRow = () => ({ keyHash: randomUUID(), fingerprint: 'fp', expiresAt: new Date(Date.now() + 3_600_000) });
  const keyRows = (hashes: string[]) => kit.wallet.deps.db.selectFrom('idempotencyKeys').select(['keyHash', 'reply']).where('keyHash', 'in', hashes).execute();

  it('D5.5: a batch writes each key with its funding; a key a repeat already holds fails that funding alone, which applied nothing', async () => {
    const [a, b] = [await agentWith(kit, 0), await agentWith(kit, 0)];
    const keys = [keyRow(), keyRow(), keyRow()];
    // The repeat of the second funding holds its key (committed): that first copy must not apply.
    await kit.wallet.deps.db.insertInto('idempotencyKeys').values({ ...keys[1]!, reply: null }).execute();
    const fundings = await Promise.all([a, b, a].map((agent) => funding(agent, 400)));
    const answers = await Promise.allSettled(fundings.map((f, i) => kit.wallet.deps.fundings.submit({ ...f, key: keys[i]! })));
    expect(answers.map((x) => x.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((answers[1] as PromiseRejectedResult).reason).toMatchObject({ code: '23505', constraint: 'idempotency_keys_pkey' });
    expect((await entriesOf(fundings.map((f) => f.sessionId))).map((e) => e.operationId).sort()).toEqual([fundings[0]!.sessionId, fundings[2]!.sessionId].sort());
    expect((await keyRows(keys.map((k) => k.keyHash))).length).toBe(3);
    expect(await balances(kit, b)).toEqual({ balanceCents: 0, heldCents: 0 });
    expect(await balances(kit, a)).toEqual({ balanceCents: 800, heldCents: 0 });
  });

  it('D5.3: the answer is kept under the key once the request ends: the gateway\'s repeat gets it, funded once', async () => {
    const agent = await agentWith(kit, 0);
    const { accountId } = await kit.wallet.deps.db.selectFrom('wallets').select('accountId').where('agentId', '=', agent).executeTakeFirstOrThrow();
    const principal: Principal = { agentId: agent, accountId: accountId!, isOwner: true, status: 'active', parentAgentId: null, signingKeyPublic: null };
    const key = { key: `aex-op-${randomUUID()}`, scope: operationScope(`agent:${agent}`), fingerprint: randomUUID() };
    const fund = (idempotency: typeof key & { firstCopy?: true }) => callOperation(kit.bus, walletOps.fund, {
      ctx: { requestId: randomUUID(), principal, idempotency }, input: { path: { agentId: agent }, query: {}, body: { amountCents: 500 } },
    }, { timeoutMs: 5000 });
    // Twice, so that the second goes by group commit on the wallet this replica now knows.
    expect(await fund({ key: `aex-op-${randomUUID()}`, scope: key.scope, fingerprint: key.fingerprint, firstCopy: true })).toMatchObject({ ok: true, data: { newBalanceCents: 500 } });
    const first = await fund({ ...key, firstCopy: true });
    expect(first).toMatchObject({ ok: true, data: { funded: true, newBalanceCents: 1000 } });
    const [row] = await keyRows([idempotencyKeyHash(key.scope, key.key)]);
    expect(row?.reply).not.toBeNull();
    const again = await fund(key);
    expect(again).toMatchObject({ ok: true, replayed: true, data: first.ok ? first.data : {} });
    expect(await balances(kit, agent)).toEqual({ balanceCents: 1000, heldCents: 0 });
    expect((await checkLedgerInvariants(kit.wallet.deps)).violations).toEqual([]);
  });
});

describe('fundings of wallets the replica knows (D13.1, D6.8)', () => {
  it('funds a wallet it has funded before without reading it, and still refuses one closed since (409) and callers it never allowed (404)', async () => {
    const parent = await agentWith(kit, 3000);
    const { accountId } = await kit.wallet.deps.db.selectFrom('wallets').select('accountId').where('agentId', '=', parent).executeTakeFirstOrThrow();
    const child = randomUUID();
    await send(kit, childSaga.allocate, { childAgentId: child, parentAgentId: parent, accountId: accountId!, budgetCents: 1000 });
    await eventually(async () => kit.childAnswers.some((x) => x.data.childAgentId === child && x.type === childSaga.funded.type) || null);
    const as = (agentId: string, isOwner = false, account = accountId!): Principal => ({ agentId, accountId: account, isOwner, status: 'active', parentAgentId: null, signingKeyPublic: null });
    const fundAs = (principal: Principal, keyed = false) => callOperation(kit.bus, walletOps.fund, {
      ctx: { requestId: randomUUID(), principal, ...(keyed ? { idempotency: { key: randomUUID(), scope: `agent:${principal.agentId}`, fingerprint: randomUUID() } } : {}) },
      input: { path: { agentId: child }, query: {}, body: { amountCents: 500 } },
    }, { timeoutMs: 5000 });
    // The parent funds its child (D6.8): the wallet is then known to this replica.
    const first = await fundAs(as(parent));
    expect(first.ok && first.data).toMatchObject({ funded: true, newBalanceCents: 1500 });
    expect(kit.wallet.deps.access.get(child)).toMatchObject({ agentId: child, parentAgentId: parent });
    // Known, it still answers 404 to an agent of another account and to a sibling that is not the owner.
    for (const stranger of [as(randomUUID(), true, randomUUID()), as(randomUUID())]) {
      const r = await fundAs(stranger);
      expect(!r.ok && r.status).toBe(404);
    }
    await send(kit, childSaga.close, { childAgentId: child });
    await eventually(async () => (await balances(kit, parent)).balanceCents === 3000 - 1000 + 1500 || null);
    for (const keyed of [false, true]) {
      const r = await fundAs(as(parent), keyed);
      expect(!r.ok && [r.status, r.errors[0]?.code]).toEqual([409, 'INVALID_STATE']);
    }
    expect(await balances(kit, child)).toEqual({ balanceCents: 0, heldCents: 0 });
    expect(await balances(kit, parent)).toEqual({ balanceCents: 3500, heldCents: 0 });
    expect((await checkLedgerInvariants(kit.wallet.deps)).violations).toEqual([]);
  });
});
