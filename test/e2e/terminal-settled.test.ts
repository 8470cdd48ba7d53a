import http from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import type { LedgerEntryView, TransactionView } from '@aex/contracts';
import { startTestExchange, type Member, type TestExchange } from './harness.js';
import { createHeld, funded, INPUT, OUTPUT, party, serviceBody, webhookUrlKnown, type Party } from './transaction-kit.js';

// Terminal means settled (docs/decisions.md D9.7, D9.9): whoever sees a transaction settled,
// failed, cancelled or expired — reading it, or told by its webhook — finds its money already where
// it ends: nothing of its price still held, and a settlement paid. Every path to a terminal status
// runs here at once, each transaction watched as it goes, its ledger read the moment a terminal
// status is seen.

const TERMINAL = new Set(['settled', 'cancelled', 'expired', 'failed']);

let ex: TestExchange;
let provider: Party;
let fixedId: string;
let oneTryId: string;
/** What each transaction's terminal webhook found of its money as it arrived (null: nothing wrong). */
const hooks = new Map<string, Promise<string | null>>();
let server: http.Server;
let hookUrl: string;

beforeAll(async () => {
  ex = await startTestExchange({ RATE_LIMIT_READ_PER_MIN: '1000000', RATE_LIMIT_WRITE_PER_MIN: '1000000', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  provider = await party(ex);
  fixedId = unwrap(await provider.client.createService(serviceBody())).id;
  // A service whose first invalid delivery is its last (sla.maxRetries 0): failed at once.
  oneTryId = unwrap(await provider.client.createService(serviceBody({ sla: { maxLatencyMs: 2000, timeoutMs: 600_000, maxRetries: 0 } }))).id;
  // Every consumer's webhooks: each terminal event has its ledger read the moment it arrives.
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.end();
      const event = JSON.parse(body) as { type: string; data: { transactionId?: string; status?: string; consumerAgentId?: string } };
      const consumer = consumers.get(event.data.consumerAgentId ?? '');
      if (event.data.transactionId && consumer && TERMINAL.has(event.data.status ?? '')) {
        hooks.set(event.data.transactionId, moneyAt(consumer, event.data.transactionId, event.data.status!).then((problem) => problem && `webhook ${event.type}: ${problem}`));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
}, 120_000);

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await ex?.stop();
});

const consumers = new Map<string, Party>();

/** A funded consumer whose webhooks reach this test. */
async function consumer(cents = 5000): Promise<Party> {
  const c = await funded(ex, cents);
  unwrap(await c.client.updateAgent(c.agentId, { webhookUrl: hookUrl }));
  await webhookUrlKnown(c.client, c.agentId);
  consumers.set(c.agentId, c);
  return c;
}

const sums = (entries: LedgerEntryView[], txId: string) => {
  const s: Record<string, number> = {};
  for (const e of entries) if (e.transactionId === txId) s[e.txType] = (s[e.txType] ?? 0) + e.amountCents;
  return s;
};

/**
 * What is wrong with the money of transaction `txId` seen `status` (terminal) just now, read at
 * once: null when nothing. Its price is no longer held; a settlement has paid the provider.
 */
async function moneyAt(c: Member, txId: string, status: string): Promise<string | null> {
  const own = sums(unwrap(await c.client.ledger(c.agentId, { limit: 100 })), txId);
  const stillHeld = -((own.fund_hold ?? 0) + (own.fund_return ?? 0) + (own.fund_release ?? 0));
  if (stillHeld !== 0) return `${txId} seen ${status} with ${stillHeld} cents still held (${JSON.stringify(own)})`;
  if (status === 'settled') {
    const paid = sums(unwrap(await provider.client.ledger(provider.agentId, { limit: 100 })), txId);
    if (!(own.settlement_out! < 0 && paid.settlement_in === -own.settlement_out!)) return `${txId} seen settled before its settlement (${JSON.stringify(own)} / ${JSON.stringify(paid)})`;
  }
  return null;
}

/**
 * Reads the transaction over and over from now until it is terminal, then reads its money at once;
 * then what its terminal webhook found when it arrived.
 */
async function watch(c: Member, txId: string): Promise<{ status: string; problem: string | null; told: string | null }> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    const t: TransactionView = unwrap(await c.client.getTransaction(txId));
    if (!TERMINAL.has(t.status)) continue;
    const problem = await moneyAt(c, txId, t.status);
    await expect.poll(() => hooks.has(txId), { timeout: 15_000, message: `the terminal webhook of ${txId}` }).toBe(true);
    return { status: t.status, problem, told: await hooks.get(txId)! };
  }
  throw new Error(`${txId} never ended`);
}

/** A purchase whose price is held, watched from then on. */
async function held(c: Party, serviceId = fixedId) {
  const t = await createHeld(c, { serviceId, input: INPUT });
  return { t, watched: watch(c, t.id) };
}

/**
 * Runs `ending` (what ends the transaction) with the consumer's wallet held busy a while, as a
 * loaded wallet would be: the wallet's return or settlement waits for the wallet's row, so a
 * terminal status shown before the money moved would be seen — and read — in that time.
 */
async function walletBusy(c: Member, ending: () => Promise<unknown>): Promise<void> {
  const db = new pg.Client({ connectionString: ex.databaseUrl });
  await db.connect();
  try {
    await db.query('begin');
    await db.query('select 1 from wallet.wallets where agent_id = $1 for update', [c.agentId]);
    const ended = ending();
    // How long the wallet stays busy: nothing can be awaited for a time the wallet is merely slow.
    await new Promise((r) => setTimeout(r, 300));
    await db.query('commit');
    await ended;
  } finally {
    await db.end();
  }
}

type Watched = Awaited<ReturnType<typeof watch>>;

const paths: Record<string, () => Promise<Watched>> = {
  async 'cancelled by the consumer'() {
    const c = await consumer();
    const { t, watched } = await held(c);
    await walletBusy(c, async () => unwrap(await c.client.cancel(t.id)));
    return watched;
  },
  async 'cancelled by the provider'() {
    const c = await consumer();
    const { t, watched } = await held(c);
    await walletBusy(c, async () => unwrap(await provider.client.cancel(t.id)));
    return watched;
  },
  async 'failed: its only delivery invalid'() {
    const c = await consumer();
    const { t, watched } = await held(c, oneTryId);
    await walletBusy(c, () => provider.client.deliver(t.id, { output: { digest: 'not hex', algorithm: 'sha256' } }));
    return watched;
  },
  async 'settled on verify'() {
    const c = await consumer();
    const { t, watched } = await held(c);
    unwrap(await provider.client.deliver(t.id, { output: OUTPUT }));
    await walletBusy(c, async () => unwrap(await c.client.verify(t.id, { qualityScore: 90 })));
    return watched;
  },
  async 'failed: the consumer won its dispute'() {
    const c = await consumer();
    const { t, watched } = await held(c);
    unwrap(await provider.client.deliver(t.id, { output: OUTPUT }));
    const d = unwrap(await c.client.openDispute(t.id, { reason: 'output_quality', description: 'Wrong digest.' }));
    await walletBusy(c, async () => unwrap(await provider.client.respondDispute(d.id, { outcome: 'consumer_wins', message: 'Refunded.' })));
    return watched;
  },
  async 'settled: a partial refund agreed'() {
    const c = await consumer();
    const { t, watched } = await held(c);
    unwrap(await provider.client.deliver(t.id, { output: OUTPUT }));
    const d = unwrap(await c.client.openDispute(t.id, { reason: 'output_quality', description: 'Half of it.' }));
    unwrap(await provider.client.respondDispute(d.id, { outcome: 'partial_refund', refundCents: 400 }));
    await walletBusy(c, async () => unwrap(await c.client.decideDispute(d.id, { accept: true })));
    return watched;
  },
  async 'settled: a dispute withdrawn'() {
    const c = await consumer();
    const { t, watched } = await held(c);
    unwrap(await provider.client.deliver(t.id, { output: OUTPUT }));
    const d = unwrap(await c.client.openDispute(t.id, { reason: 'output_quality', description: 'My mistake.' }));
    await walletBusy(c, async () => unwrap(await c.client.withdrawDispute(d.id, {})));
    return watched;
  },
  async 'cancelled: an approval denied while its hold was on its way'() {
    const c = await consumer();
    unwrap(await c.owner.client.setAgentDelegation(c.agentId, { requireHumanApprovalAboveCents: 500 }));
    const t = unwrap(await c.client.createTransaction({ serviceId: fixedId, input: INPUT }));
    const watched = watch(c, t.id);
    // Approved and denied at once: denied while waiting, or while the approval's hold is on its way (D10.3).
    await walletBusy(c, () => Promise.all([c.owner.client.approve(t.id), c.owner.client.deny(t.id, { reason: 'no' })]));
    const now: TransactionView = unwrap(await c.client.getTransaction(t.id));
    if (!TERMINAL.has(now.status)) unwrap(await c.client.cancel(t.id));
    return watched;
  },
};

describe('terminal means settled (D9.7, D9.9)', () => {
  it('never shows a terminal status, read or told by webhook, before the money of every path is where it ends', async () => {
    const runs = await Promise.all([1, 2, 3].flatMap(() => Object.entries(paths).map(async ([name, run]) => ({ name, ...(await run()) }))));
    expect(runs.flatMap((r) => [r.problem, r.told]).filter((p) => p !== null)).toEqual([]);
    // Every path ended as it should.
    const statuses = new Map(runs.map((r) => [r.name, r.status]));
    expect(Object.fromEntries(statuses)).toMatchObject({
      'cancelled by the consumer': 'cancelled', 'cancelled by the provider': 'cancelled', 'failed: its only delivery invalid': 'failed', 'settled on verify': 'settled',
      'failed: the consumer won its dispute': 'failed', 'settled: a partial refund agreed': 'settled', 'settled: a dispute withdrawn': 'settled',
      'cancelled: an approval denied while its hold was on its way': 'cancelled',
    });
  });

  it('ends by the clock with the money where it ends too: expired transactions and review windows ended', async () => {
    const expiring = await Promise.all([1, 2, 3].map(async () => {
      const c = await consumer();
      return { c, ...(await held(c)) };
    }));
    const reviewed = await Promise.all([1, 2, 3].map(async () => {
      const c = await consumer();
      const { t, watched } = await held(c);
      unwrap(await provider.client.deliver(t.id, { output: OUTPUT }));
      return { c, watched };
    }));
    // Past every expiry and review window at once (D9.5, D9.7), each consumer's wallet busy meanwhile.
    ex.clock.advance(ex.config.REVIEW_WINDOW_SECONDS * 1000 + 600_000);
    const busy = [...expiring.map((x) => x.c), ...reviewed.map((x) => x.c)];
    await Promise.all(busy.map((c, i) => walletBusy(c, async () => i === 0 && ex.transactions!.fireDueTimers())));
    const ended = await Promise.all([...expiring, ...reviewed].map((x) => x.watched));
    expect(ended.flatMap((r) => [r.problem, r.told]).filter((p) => p !== null)).toEqual([]);
    expect(ended.map((r) => r.status)).toEqual(['expired', 'expired', 'expired', 'settled', 'settled', 'settled']);
  });
});
