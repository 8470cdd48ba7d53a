import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExchangeClient, unwrap, type Outcome } from '@agent-exchange/client';
import type { NewAccountView } from '@aex/contracts';
import { eventually } from '@aex/platform/testing';
import { ADMIN_TOKEN, exchangeProcess, showLogOnFailure, startTestExchange, uniqueEmail, type ExchangeProcess, type TestExchange } from './harness.js';

// The agent-creation saga (identity → openWallet command → wallet → wallet.opened → identity) survives
// a stopped wallet service and a process killed at any moment: no committed data is lost and no
// account is left half-made (an agent without a wallet or a wallet without an agent).

describe('wallet service down during sign-up', () => {
  let ex: TestExchange;
  beforeAll(async () => {
    ex = await startTestExchange({ SAGA_WAIT_MS: '300', RPC_TIMEOUT_MS: '1000' });
  });
  afterAll(async () => ex?.stop());

  it('answers 202 while the wallet is pending, and the wallet appears once the service is back', async () => {
    await ex.stopWallet();
    const r = await ex.anon.createAccount({ accountType: 'individual', email: uniqueEmail(), displayName: 'Late wallet', agent: { name: 'a' } });
    expect(r.status).toBe(202);
    const acc = unwrap(r);
    const client = ex.anon.as({ apiKey: acc.apiKey });
    // The owning service does not answer: 503, never a hang or a 500.
    const down = await client.getWallet(acc.agent.id);
    expect(!down.ok && [down.status, down.error.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);

    await ex.startWallet();
    const wallet = await eventually(async () => {
      const w = await client.getWallet(acc.agent.id);
      return w.ok ? w.data : null;
    }, 10_000);
    expect(wallet).toMatchObject({ agentId: acc.agent.id, balanceCents: 0 });
    // Identity records the confirmation, so the saga is complete on both sides.
    const db = new pg.Client({ connectionString: ex.databaseUrl });
    await db.connect();
    try {
      const opened = async () => (await db.query('select wallet_opened_at from identity.agents where id = $1', [acc.agent.id])).rows[0]?.wallet_opened_at;
      await expect.poll(opened, { timeout: 10_000 }).toBeInstanceOf(Date);
    } finally {
      await db.end();
    }
  });
});

// --- a whole exchange process killed with SIGKILL while sign-ups are in flight

describe('process killed during sign-ups', () => {
  let proc: ExchangeProcess;
  showLogOnFailure(() => proc);

  beforeAll(async () => {
    proc = await exchangeProcess({ RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP: '100000' });
  });
  afterAll(async () => proc?.dispose());

  it('loses no committed account and leaves none half-made, over three kills, and still serves new sign-ups after them', async () => {
    const answered: NewAccountView[] = [];
    for (let round = 0; round < 3; round++) {
      const url = await proc.start();
      const client = new ExchangeClient({ baseUrl: url, timeoutMs: 20_000 });
      const inFlight: Promise<Outcome<NewAccountView>>[] = [];
      let done = 0;
      let stop = false;
      // A steady stream of sign-ups; the kill lands once some were answered, so at that moment some
      // are answered, some committed but unanswered, and some not yet run.
      const stream = (async () => {
        for (let i = 0; i < 200 && !stop; i++) {
          const p = client.createAccount({ accountType: 'individual', email: uniqueEmail(), displayName: `round ${round}`, agent: { name: `a${i}` } });
          inFlight.push(p);
          void p.then(() => done++);
          // A trickle, not one burst: the kill then finds sign-ups at every stage. Nothing marks a
          // moment to send the next one, so they are spaced in time.
          await new Promise((r) => setTimeout(r, 8));
        }
      })();
      await eventually(async () => done >= 5 + round * 5, 30_000, 5);
      await proc.kill();
      stop = true;
      await stream;
      for (const r of await Promise.all(inFlight)) if (r.ok) answered.push(r.data);
    }
    expect(answered.length).toBeGreaterThan(0);

    // Restart once more and let the sagas finish.
    const url = await proc.start();
    const admin = new ExchangeClient({ baseUrl: url, adminToken: ADMIN_TOKEN });
    const sql = new pg.Client({ connectionString: proc.db.url });
    await sql.connect();
    try {
      const halfMade = async () => (await sql.query(`
        select
          (select count(*) from identity.agents where wallet_opened_at is null)::int as pending,
          (select count(*) from identity.agents a where not exists (select 1 from wallet.wallets w where w.agent_id = a.id))::int as agents_without_wallet,
          (select count(*) from wallet.wallets w where w.agent_id is not null and not exists (select 1 from identity.agents a where a.id = w.agent_id))::int as wallets_without_agent`)).rows[0];
      await expect.poll(halfMade, { timeout: 30_000, interval: 200 }).toEqual({ pending: 0, agents_without_wallet: 0, wallets_without_agent: 0 });

      // Every account that was answered is there, with its agent, its key and its wallet.
      for (const acc of answered) {
        const client = new ExchangeClient({ baseUrl: url, apiKey: acc.apiKey });
        expect(unwrap(await client.getAccount(acc.id)).id).toBe(acc.id);
        expect(unwrap(await client.getWallet(acc.agent.id)).agentId).toBe(acc.agent.id);
      }
      const { rows } = await sql.query('select count(*)::int as n from identity.accounts a where not exists (select 1 from identity.agents g where g.account_id = a.id and g.is_owner)');
      expect(rows[0].n).toBe(0);
      expect(unwrap(await admin.checkLedger()).ok).toBe(true);
    } finally {
      await sql.end();
    }
    // And it still serves new sign-ups after the crashes.
    const client = new ExchangeClient({ baseUrl: url });
    expect((await client.createAccount({ accountType: 'individual', email: `${randomUUID()}@example.com`, displayName: 'after', agent: { name: 'a' } })).status).toBe(201);
  });
});
