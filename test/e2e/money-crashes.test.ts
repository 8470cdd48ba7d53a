import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExchangeClient, unwrap, type Outcome } from '@agent-exchange/client';
import type { FundView, WithdrawView } from '@aex/contracts';
import { eventually, testLogger } from '@aex/platform/testing';
import { startEmbeddedPostgres, type Started } from '@aex/stack';
import { postgresPids } from './chaos-deployment.js';
import { ADMIN_TOKEN, exchangeProcess, showLogOnFailure, startTestExchange, uniqueEmail, type ExchangeProcess, type TestExchange } from './harness.js';

// D5.4 / D5.5: money requests carrying an Idempotency-Key move money exactly once per key, whatever
// fails between the client and the ledger — the whole exchange killed mid-stream, or its database
// frozen while a request is in flight. Real Postgres, real JetStream, the real process.

type Money = FundView | WithdrawView;
/** Not final: unreachable, still in flight (409), limited (429), unavailable (503) — a client retries those. */
const isFinal = (r: Outcome<unknown>) => ![0, 409, 429, 503].includes(r.status);

/** Repeats a keyed request until its outcome is known (not in flight, not unreachable). */
async function settle(call: () => Promise<Outcome<Money>>): Promise<Outcome<Money>> {
  return eventually(async () => {
    const r = await call();
    return isFinal(r) ? r : null;
  }, 60_000, 100);
}

describe('keyed money requests while the whole exchange is killed (SIGKILL) and restarted', () => {
  let proc: ExchangeProcess;
  showLogOnFailure(() => proc);
  beforeAll(async () => {
    proc = await exchangeProcess({ RATE_LIMIT_WRITE_PER_MIN: '1000000', RATE_LIMIT_READ_PER_MIN: '1000000' });
  });
  afterAll(async () => proc?.dispose());

  it('applies every key exactly once: payouts and fundings equal the keys, each retry answers the first outcome', async () => {
    let url = await proc.start();
    // Several wallets, so that several movements are committing at the moment of each kill.
    const opening = 1_000_000;
    const payers = await Promise.all(Array.from({ length: 6 }, async (_, i) => {
      const acc = unwrap(await new ExchangeClient({ baseUrl: url }).createAccount({ accountType: 'individual', email: uniqueEmail(), displayName: 'crash', agent: { name: `payer-${i}` } }));
      unwrap(await new ExchangeClient({ baseUrl: url, apiKey: acc.apiKey }).fund(acc.agent.id, opening));
      return { agentId: acc.agent.id, apiKey: acc.apiKey };
    }));

    const requests = Array.from({ length: 360 }, (_, i) => ({ key: randomUUID(), payer: payers[i % payers.length]!, kind: i % 3 === 0 ? ('fund' as const) : ('withdraw' as const) }));
    const call = (base: string, r: (typeof requests)[number]) => {
      const c = new ExchangeClient({ baseUrl: base, apiKey: r.payer.apiKey, timeoutMs: 20_000 });
      return r.kind === 'fund' ? c.fund(r.payer.agentId, 1000, { idempotencyKey: r.key }) : c.withdraw(r.payer.agentId, 2500, { idempotencyKey: r.key });
    };

    // Four kills, each while many keyed requests are in flight: at that moment some are answered,
    // some committed but unanswered, some running, some not yet run. Each round sends again every key
    // whose outcome is not known yet.
    const firstOutcomes = new Map<string, Outcome<Money>>();
    for (let round = 0; round < 4; round++) {
      const pending = requests.filter((r) => !firstOutcomes.get(r.key)?.ok);
      let answered = 0;
      const inFlight = pending.map((r) => call(url, r).then((o) => {
        if (o.ok) answered++;
        if (!firstOutcomes.get(r.key)?.ok) firstOutcomes.set(r.key, o);
      }));
      // Kill once some are answered (or, if keys are still held by the last kill, after a while).
      const killAt = Date.now() + 5000;
      while (answered < Math.min(30, pending.length / 5) && Date.now() < killAt) await new Promise((res) => setTimeout(res, 2));
      await proc.kill();
      await Promise.all(inFlight);
      url = await proc.start();
    }
    const answeredBefore = [...firstOutcomes.values()].filter((o) => o.ok).length;
    expect(answeredBefore).toBeGreaterThan(0);
    expect(answeredBefore).toBeLessThan(requests.length);

    // Retry every key until its outcome is known.
    const finals = new Map<string, Outcome<Money>>();
    await Promise.all(requests.map(async (r) => finals.set(r.key, await settle(() => call(url, r)))));

    for (const r of requests) {
      const final = finals.get(r.key)!;
      expect([r.kind, final.status]).toEqual([r.kind, 200]);
      const first = firstOutcomes.get(r.key);
      // What was answered before a kill is answered again, the same payout or funding session.
      if (first?.ok && final.ok) {
        expect(final.data).toEqual(first.data);
        expect(final.headers.get('idempotent-replayed')).toBe('true');
      }
    }

    const sql = new pg.Client({ connectionString: proc.db.url });
    await sql.connect();
    try {
      for (const payer of payers) {
        const mine = requests.filter((r) => r.payer === payer);
        const funds = mine.filter((r) => r.kind === 'fund').length;
        const withdrawals = mine.length - funds;
        const { rows } = await sql.query(
          `select (select count(*) from wallet.funding_sessions s join wallet.wallets w on w.id = s.wallet_id where w.agent_id = $1 and s.amount_cents = 1000)::int as fundings,
                  (select count(*) from wallet.payouts p join wallet.wallets w on w.id = p.wallet_id where w.agent_id = $1)::int as payouts,
                  (select balance_cents from wallet.wallets where agent_id = $1)::bigint as balance`,
          [payer.agentId],
        );
        expect(rows[0]).toEqual({ fundings: funds, payouts: withdrawals, balance: opening + funds * 1000 - withdrawals * 2500 });
      }
    } finally {
      await sql.end();
    }
    const admin = new ExchangeClient({ baseUrl: url, adminToken: ADMIN_TOKEN });
    expect(unwrap(await admin.checkLedger()).ok).toBe(true);
  }, 180_000); // four SIGKILLs and their restarts next to the rest of the suite: up to 45 s measured
});

describe('a keyed withdrawal while Postgres is frozen (SIGSTOP)', () => {
  let dataDir: string;
  let postgres: Started;
  let ex: TestExchange;

  beforeAll(async () => {
    // A Postgres of this test's own: stopping the shared one would stall every other test.
    dataDir = mkdtempSync(join(tmpdir(), 'aex-stall-'));
    // As root, Postgres runs as its own system user, which must reach the directory.
    chmodSync(dataDir, 0o755);
    postgres = await startEmbeddedPostgres(dataDir, testLogger());
    ex = await startTestExchange({ RPC_TIMEOUT_MS: '1500', RATE_LIMIT_WRITE_PER_MIN: '1000000' }, { databaseUrl: postgres.url });
  });
  afterAll(async () => {
    try {
      if (postgres) for (const pid of postgresPids(dataDir)) process.kill(pid, 'SIGCONT');
      await ex?.stop();
      await postgres?.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('answers 202 with the outcome unknown while frozen (D5.4), then the one payout it made, to every retry of the key', async () => {
    const m = await ex.signUp();
    unwrap(await m.client.fund(m.agentId, 10_000));
    const key = randomUUID();
    const pids = postgresPids(dataDir);
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    try {
      // Not a 503 that would hide a committed payout: the answer says the outcome is not known yet.
      const first = await m.client.withdraw(m.agentId, 2500, { idempotencyKey: key });
      expect(!first.ok && [first.status, first.error.code]).toEqual([202, 'IDEMPOTENCY_KEY_IN_USE']);
      expect(first.headers?.get('idempotency-key')).toBe(key);
      const whileFrozen = await m.client.withdraw(m.agentId, 2500, { idempotencyKey: key });
      expect(whileFrozen.ok).toBe(false);
      expect([202, 409]).toContain(whileFrozen.status);
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT');
    }
    const outcome = await settle(() => m.client.withdraw(m.agentId, 2500, { idempotencyKey: key }));
    expect(outcome.status).toBe(200);
    const again = await m.client.withdraw(m.agentId, 2500, { idempotencyKey: key });
    expect(again.ok && outcome.ok && again.data).toEqual(outcome.ok && outcome.data);
    expect(again.ok && again.headers.get('idempotent-replayed')).toBe('true');

    expect(unwrap(await m.client.getWallet(m.agentId)).balanceCents).toBe(7500);
    const payouts = unwrap(await m.client.ledger(m.agentId)).filter((e) => e.txType === 'payout');
    expect(payouts).toHaveLength(1);
    expect(unwrap(await ex.admin.checkLedger()).ok).toBe(true);
  });
});
