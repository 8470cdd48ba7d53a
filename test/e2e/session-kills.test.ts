import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExchangeClient, unwrap, type Outcome } from '@agent-exchange/client';
import type { SessionView, TransactionView } from '@aex/contracts';
import { eventually } from '@aex/platform/testing';
import { ADMIN_TOKEN, exchangeProcess, showLogOnFailure, signingMember, type ExchangeProcess } from './harness.js';
import { rng } from './transaction-model-kit.js';

// D17 under faults: prepaid sessions and metered calls while the whole exchange is killed (SIGKILL)
// at random moments with a request in flight. Every write carries an Idempotency-Key and is repeated
// until its outcome is known (D5.5). At the end every session is closed and its money adds up —
// budget = spent + returned, spent = the prices of its settled calls — each wallet holds exactly what
// the calls paid and the budgets returned, and the operator's ledger check passes.

const SEED = Number(process.env.SESSION_SEED ?? Date.now() % 1_000_000);
const OPS = Number(process.env.SESSION_OPS ?? 60);
const KILLS = Number(process.env.SESSION_KILLS ?? 3);
const FUNDS = 10_000;
const BUDGET = 3_000;

describe(`prepaid sessions with the exchange killed at random (seed ${SEED}; SESSION_SEED replays it)`, () => {
  let proc: ExchangeProcess;
  showLogOnFailure(() => proc);
  let url: string;
  const r = rng(SEED);
  beforeAll(async () => {
    proc = await exchangeProcess({ RATE_LIMIT_WRITE_PER_MIN: '1000000', RATE_LIMIT_READ_PER_MIN: '1000000', RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP: '100000' });
    url = await proc.start();
  }, 120_000);
  afterAll(async () => proc?.dispose());

  /** A client of `who` at the exchange's current address (it moves with every restart). */
  const as = (who: { apiKey: string; secretKey: string }) => new ExchangeClient({ baseUrl: url, apiKey: who.apiKey, signingSecretKey: who.secretKey, timeoutMs: 20_000 });

  /** Sends a keyed request until its outcome is known; with `kill`, the exchange is killed while the first is in flight. */
  async function known<T>(send: (key: string) => Promise<Outcome<T>>, kill = false): Promise<Outcome<T>> {
    const key = randomUUID();
    if (kill) {
      const inFlight = send(key);
      await new Promise((res) => setTimeout(res, r.int(40)));
      await proc.kill();
      await inFlight;
      url = await proc.start();
    }
    return eventually(async () => {
      const o = await send(key);
      return [0, 429, 503].includes(o.status) || (!o.ok && o.error.code === 'IDEMPOTENCY_KEY_IN_USE') ? null : o;
    }, 60_000, 50);
  }

  it('keeps every session exact: budget = spent + returned, spent = its settled calls, wallets and ledger agree', async () => {
    const anon = () => new ExchangeClient({ baseUrl: url });
    const provider = await signingMember(anon(), 'provider');
    const p = { apiKey: provider.apiKey, secretKey: provider.secretKey };
    const service = (pricing: object) => as(p).createService({
      name: `Digest ${randomUUID().slice(0, 6)}`, description: 'Computes the SHA-256 digest of a text payload.', version: '1.0.0', category: 'crypto',
      inputSchema: { type: 'object', required: ['payload'], properties: { payload: { type: 'string' } } }, outputSchema: { type: 'object', required: ['digest'], properties: { digest: { type: 'string' } } },
      pricing: pricing as never, sla: { maxLatencyMs: 60_000, timeoutMs: 600_000 },
    });
    const fixed = unwrap(await service({ model: 'fixed', basePriceCents: 100 })).id;
    const metered = unwrap(await service({ model: 'per_unit', basePriceCents: 10, unit: 'page' })).id;
    const consumers = await Promise.all([0, 1, 2].map(async (i) => {
      const m = await signingMember(anon(), `consumer-${i}`);
      unwrap(await m.client.fund(m.id, FUNDS));
      return { id: m.id, apiKey: m.apiKey, secretKey: m.secretKey };
    }));
    const sessions: SessionView[] = [];
    for (const [i, c] of consumers.entries()) {
      const opened = unwrap(await known((key) => as(c).openSession({ serviceId: i === 2 ? metered : fixed, budgetCents: BUDGET }, { idempotencyKey: key })));
      sessions.push(opened);
    }
    const calls = new Map<string, { session: number; id: string }>();
    const killAt = new Set(Array.from({ length: KILLS }, () => 1 + r.int(OPS - 1)));
    for (let n = 0; n < OPS; n++) {
      const s = r.int(consumers.length);
      const c = consumers[s]!;
      const isMetered = s === 2;
      const created = await known((key) => as(c).callInSession(sessions[s]!.id, { payload: `call ${n}` }, { idempotencyKey: key, ...(isMetered ? { maxUnits: 10 } : {}) }), killAt.has(n) && r.next() < 0.5);
      if (!created.ok) {
        // Only a budget too short for the call may refuse it.
        expect(created.error.code, JSON.stringify(created.error.errors)).toBe('INSUFFICIENT_FUNDS');
        continue;
      }
      calls.set(created.data.id, { session: s, id: created.data.id });
      if (r.next() < 0.2) {
        unwrap(await known((key) => as(c).cancel(created.data.id, { idempotencyKey: key }), killAt.has(n)));
      } else {
        const usage = isMetered ? { usage: { units: r.int(11) } } : {};
        unwrap(await known((key) => as(p).deliver(created.data.id, { output: { digest: 'x' }, ...usage }, { idempotencyKey: key }), killAt.has(n)));
      }
    }
    for (const [i, c] of consumers.entries()) unwrap(await known((key) => as(c).closeSession(sessions[i]!.id, { idempotencyKey: key })));

    const closed = await Promise.all(consumers.map((c, i) => eventually(async () => {
      const got = await as(c).getSession(sessions[i]!.id);
      return got.ok && got.data.status === 'closed' ? got.data : null;
    }, 60_000, 100).catch(async (err: unknown) => {
      const open = await Promise.all([...calls.values()].filter((x) => x.session === i).map(async (x) => unwrap(await as(c).getTransaction(x.id))));
      throw new Error(`session ${i} did not close: ${JSON.stringify(unwrap(await as(c).getSession(sessions[i]!.id)))}; calls not ended: ${JSON.stringify(open.filter((t) => !['settled', 'cancelled', 'failed', 'expired'].includes(t.status)).map((t) => [t.id, t.status, t.statusReason]))} (${(err as Error).message})`);
    })));
    for (const [i, c] of consumers.entries()) {
      const mine = [...calls.values()].filter((x) => x.session === i);
      const txs = await Promise.all(mine.map(async (x) => eventually(async () => {
        const t = await as(c).getTransaction(x.id);
        return t.ok && ['settled', 'cancelled', 'failed', 'expired'].includes(t.data.status) ? t.data : null;
      }, 30_000, 100)));
      const paid = txs.filter((t: TransactionView) => t.status === 'settled').reduce((sum, t) => sum + t.agreedPriceCents!, 0);
      const s = closed[i]!;
      expect(s, `session ${i}`).toMatchObject({ reservedCents: 0, spentCents: paid, returnedCents: BUDGET - paid, calls: mine.length });
      expect(unwrap(await as(c).getWallet(c.id))).toMatchObject({ balanceCents: FUNDS - paid, heldCents: 0 });
    }
    const check = unwrap(await new ExchangeClient({ baseUrl: url, adminToken: ADMIN_TOKEN }).checkLedger());
    expect(check.violations).toEqual([]);
    expect(calls.size).toBeGreaterThan(OPS / 2);
  }, 600_000);
});
