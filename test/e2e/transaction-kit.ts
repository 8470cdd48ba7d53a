import { afterAll, beforeAll } from 'vitest';
import { createHash, randomUUID } from 'node:crypto';
import { unwrap, type ExchangeClient } from '@agent-exchange/client';
import { subjects, TRANSACTION_EVENTS_FILTER, type CreateServiceBody, type LedgerEntryView, type MessageEnvelope, type TransactionView } from '@aex/contracts';
import { ack } from '@aex/platform';
import { startTestExchange, type Member, type TestExchange } from './harness.js';

// What the transaction tests share: a digest service, its good input and output, parties
// with signing keys, waiting for a status, and an exchange that records the transactions' events.

export const INPUT = { payload: 'hello world', algorithm: 'sha256' };
export const OUTPUT = { digest: createHash('sha256').update('hello world').digest('hex'), algorithm: 'sha256' };

export function serviceBody(over: Partial<CreateServiceBody> = {}): CreateServiceBody {
  return {
    name: `Digest ${randomUUID().slice(0, 8)}`,
    description: 'Computes the SHA-256 digest of a text payload.',
    version: '1.0.0',
    category: 'crypto',
    inputSchema: { type: 'object', required: ['payload'], properties: { payload: { type: 'string', minLength: 1 }, algorithm: { enum: ['sha256'] } }, additionalProperties: false },
    outputSchema: { type: 'object', required: ['digest'], properties: { digest: { type: 'string', pattern: '^[0-9a-f]{64}$' }, algorithm: { type: 'string' } } },
    pricing: { model: 'fixed', basePriceCents: 1000 },
    sla: { maxLatencyMs: 2000, timeoutMs: 600_000, maxRetries: 1 },
    ...over,
  };
}

export type Party = Member & { owner: Member };

/** An account whose owner agent creates one agent with a signing key: the party the tests use. */
export async function party(ex: TestExchange): Promise<Party> {
  const owner = await ex.signUp();
  const agent = await ex.addAgent(owner);
  return { ...agent, owner };
}

export async function funded(ex: TestExchange, cents: number): Promise<Party> {
  const p = await party(ex);
  unwrap(await p.client.fund(p.agentId, cents));
  return p;
}

export const wallet = async (m: Member) => unwrap(await m.client.getWallet(m.agentId));

/** The member's ledger entries of one transaction as [txType, amount], sorted. */
export const ledgerOf = async (m: Member, txId: string) =>
  unwrap(await m.client.ledger(m.agentId, { limit: 100 }))
    .filter((e: LedgerEntryView) => e.transactionId === txId)
    .map((e) => [e.txType, e.amountCents])
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])));

/** Polls the transaction until it has `status`; throws with the last status after `ms`. */
export async function waitForStatus(m: Member, id: string, status: string, ms = 10_000): Promise<TransactionView> {
  const deadline = Date.now() + ms;
  for (;;) {
    const t = unwrap(await m.client.getTransaction(id));
    if (t.status === status) return t;
    if (Date.now() > deadline) throw new Error(`transaction ${id} is ${t.status}, not ${status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Creates a transaction and waits until its price is held (the answer may be 202 on a loaded machine, D9.9). */
export async function createHeld(m: Member, body: { serviceId: string; input: Record<string, unknown> }): Promise<TransactionView> {
  const t = unwrap(await m.client.createTransaction(body));
  return t.status === 'funds_held' ? t : waitForStatus(m, t.id, 'funds_held');
}

/**
 * Waits until the webhook service knows the agent's new webhook URL (its replica of the agents' URLs
 * follows identity's events): a test delivery reaches the URL, whatever the receiver answers.
 */
export async function webhookUrlKnown(client: ExchangeClient, agentId: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; ;) {
    const r = await client.testWebhook(agentId);
    if (r.ok && r.data.attempt.url !== null) return;
    if (Date.now() > deadline) throw new Error(`the webhook service did not learn the webhook URL of ${agentId}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** A `transaction.<status>` event as published, and as the webhook dispatcher consumes it (D14.1). */
export type TransactionEvent = MessageEnvelope<{ transactionId: string; status: string; previousStatus: string | null; consumerAgentId: string; providerAgentId: string }>;

export interface RecordingExchange {
  ex: TestExchange;
  /** The events of one transaction published so far, in the order they were published. */
  eventsOf(transactionId: string): TransactionEvent[];
  stop(): Promise<void>;
}

/**
 * A file of transaction route tests: its exchange (`startRecordingExchange`) started before its
 * tests and stopped after them, with its parties and recorded events.
 */
export function recordingSuite() {
  let recording: RecordingExchange | undefined;
  beforeAll(async () => {
    recording = await startRecordingExchange();
  }, 120_000);
  afterAll(async () => recording?.stop());
  const ex = () => recording!.ex;
  return {
    ex,
    party: () => party(ex()),
    funded: (cents: number) => funded(ex(), cents),
    eventsOf: (id: string) => recording!.eventsOf(id),
  };
}

/**
 * Starts the exchange of a file of transaction route tests: writes unlimited (one test opens 100
 * transactions for one agent), timers looked at every 100 ms, and every `transaction.<status>` event
 * published recorded, as the webhook dispatcher will consume them (D14.1).
 */
export async function startRecordingExchange(): Promise<RecordingExchange> {
  const ex = await startTestExchange({ RATE_LIMIT_WRITE_PER_MIN: '100000' }, { timerPollMs: 100 });
  const published: TransactionEvent[] = [];
  const recorder = await ex.bus.consume({
    stream: 'events',
    durable: 'test-transaction-events',
    filter: subjects.event(ex.bus.namespace, TRANSACTION_EVENTS_FILTER),
    concurrency: 1,
    handler: async (msg) => {
      published.push(msg.data as TransactionEvent);
      return ack();
    },
  }).catch(async (err: unknown) => {
    await ex.stop();
    throw err;
  });
  return {
    ex,
    eventsOf: (id) => published.filter((e) => e.data.transactionId === id),
    stop: async () => {
      await recorder.stop();
      await ex.stop();
    },
  };
}
