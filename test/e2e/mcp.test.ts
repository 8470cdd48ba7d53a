import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { unwrap } from '@agent-exchange/client';
import { freePort } from '@aex/platform';
import { eventually } from '@aex/platform/testing';
import { signingMember, startTestExchange, type TestExchange } from './harness.js';
import { mcpKit } from './mcp-kit.js';
import { binOf, installPacked } from './packed-kit.js';

// The MCP server as an MCP client meets it: the packed package installed outside the workspace, its
// bin started over stdio and over Streamable HTTP, driven by the SDK's own client through scripted
// sessions (no LLM): a consumer that searches, buys within the human's limits, waits and accepts;
// a provider that registers a service and delivers.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
let ex: TestExchange;
let dir: string;
let bin: string;
const clients: Client[] = [];
const children: ChildProcess[] = [];

type Agent = Awaited<ReturnType<typeof signingMember>>;
let provider: Agent;

const WORDS = {
  name: 'Word counter',
  description: 'Counts the words in a text, for agents that need exact lengths.',
  version: '1.0.0',
  category: 'text',
  tags: ['words', 'count'],
  inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { text: { type: 'string', minLength: 1 } }, required: ['text'], additionalProperties: false },
  outputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { words: { type: 'integer', minimum: 0 } }, required: ['words'], additionalProperties: false },
  pricing: { model: 'fixed', basePriceCents: 250 },
  sla: { maxLatencyMs: 60_000, timeoutMs: 120_000 },
};

const { session, data, refusal } = mcpKit(() => ({ ex, bin, dir, clients }));

/** A buying agent of its own, with 5,000 cents. */
async function buyingAgent(): Promise<Agent> {
  const agent = await signingMember(ex.anon, 'buyer');
  unwrap(await agent.client.fund(agent.id, 5000));
  return agent;
}

/** A word counter of the provider's, registered through the API, at `priceCents`. */
const wordCounter = async (name = 'Word counter', priceCents = 250) =>
  unwrap(await provider.client.createService({ ...WORDS, name, pricing: { model: 'fixed', basePriceCents: priceCents } } as Parameters<Agent['client']['createService']>[0])).id;

/**
 * Each test's own buying agent (`consumer`), its session with a budget of 1,000 cents and a cap of 500
 * a call (`buyer`), and a word counter to buy (`serviceId`): no test depends on what another spent.
 */
const mcpTest = it
  .extend('consumer', async () => buyingAgent())
  .extend('buyer', async ({ consumer }) => session(consumer, ['--budget-cents', '1000', '--max-per-call-cents', '500']))
  .extend('serviceId', async () => wordCounter());

type Tx = { transaction: { id: string; status: string; agreedPriceCents: number | null; output: Record<string, unknown> | null }; note: string };

beforeAll(async () => {
  ex = await startTestExchange({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  dir = mkdtempSync(join(tmpdir(), 'aex-mcp-'));
  const project = await installPacked(['@agent-exchange/mcp'], dir);
  bin = join(project, 'node_modules', '@agent-exchange', 'mcp', 'bin', 'agent-exchange-mcp.js');
  expect(binOf(project, 'agent-exchange-mcp')).toContain('.bin');
  provider = await signingMember(ex.anon, 'word-provider');
}, 300_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  for (const c of children) c.kill('SIGKILL');
  await ex?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the MCP server over stdio', () => {
  // The provider's session: it spends nothing, so the tests share it.
  let seller: Client;

  beforeAll(async () => {
    seller = await session(provider, ['--provider']);
  });

  mcpTest('lists tools with valid input and output schemas and honest annotations; spending tools only with a budget, provider tools only as a provider', async ({ buyer }) => {
    const ajv = new Ajv2020({ strict: false });
    const { tools } = await buyer.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['search_services', 'get_service', 'get_balance', 'buy_service', 'negotiate', 'wait_for_delivery', 'accept_delivery', 'open_dispute', 'cancel_transaction']));
    expect(names).not.toContain('deliver');
    for (const t of tools) {
      expect(t.inputSchema.type).toBe('object');
      expect(t.outputSchema?.type).toBe('object');
      expect(() => ajv.compile(t.inputSchema), t.name).not.toThrow();
      expect(() => ajv.compile(t.outputSchema!), t.name).not.toThrow();
      expect(t.annotations).toMatchObject({ readOnlyHint: expect.any(Boolean), destructiveHint: expect.any(Boolean), idempotentHint: expect.any(Boolean) });
      expect(JSON.stringify(t)).not.toContain('maxJsonBytes');
    }
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('search_services')!.annotations!.readOnlyHint).toBe(true);
    expect(byName.get('accept_delivery')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });

    const sellerTools = (await seller.listTools()).tools.map((t) => t.name);
    expect(sellerTools).toEqual(expect.arrayContaining(['register_service', 'update_service', 'pause_service', 'list_pending_deliveries', 'deliver', 'respond_dispute']));
    expect(sellerTools).not.toContain('buy_service');
  });

  mcpTest('a consumer session searches, buys within the cap (progress reported), waits, and accepts what a provider session delivered', async ({ consumer, buyer }) => {
    const serviceId = (await data<{ service: { id: string } }>(seller, 'register_service', WORDS)).service.id;

    const found = await data<{ queryId: string; matches: Array<{ serviceId: string; priceCents: number; trustScore: number; compatibilityScore: number }> }>(buyer, 'search_services', { need: 'count the words of a text', limit: 20 });
    // Every test of the file registers a word counter of the same provider: the most a search lists finds this one.
    const match = found.matches.find((m) => m.serviceId === serviceId)!;
    expect(match).toMatchObject({ priceCents: 250, trustScore: expect.any(Number), compatibilityScore: expect.any(Number) });
    const contract = await data<{ service: { inputSchema: unknown; pricing: { basePriceCents: number } } }>(buyer, 'get_service', { serviceId });
    expect(contract.service.pricing.basePriceCents).toBe(250);

    // Input the contract refuses never leaves the server.
    expect(await refusal(buyer, 'buy_service', { serviceId, input: { txt: 'x' } })).toMatch(/Not sent: the input does not pass the service's inputSchema:\n"\/input\/text" is required/);

    const progress: string[] = [];
    // The search's queryId goes with the purchase (D22.2): the exchange learns from how it ends.
    const bought = await data<Tx>(buyer, 'buy_service', { serviceId, input: { text: 'the quick brown fox' }, queryId: found.queryId }, progress);
    expect(bought.transaction).toMatchObject({ status: 'funds_held', agreedPriceCents: 250 });
    // The SDK's client runs progress handlers a microtask late, so a notification arriving in the same
    // read as the result may be dropped: the first one, sent before the purchase went out, always comes.
    expect(progress[0]).toBe('buying "Word counter" for 250 cents');

    const pending = await data<{ transactions: Array<{ id: string }> }>(seller, 'list_pending_deliveries', {});
    expect(pending.transactions.map((t) => t.id)).toContain(bought.transaction.id);
    // An output the contract refuses is not sent and uses no attempt.
    expect(await refusal(seller, 'deliver', { transactionId: bought.transaction.id, output: { words: 'four' } })).toMatch(/Not sent \(no attempt used\)/);
    const delivered = await data<Tx>(seller, 'deliver', { transactionId: bought.transaction.id, output: { words: 4 } });
    expect(delivered.transaction.status).toBe('delivered');

    const waited = await data<Tx & { delivered: boolean }>(buyer, 'wait_for_delivery', { transactionId: bought.transaction.id, waitSeconds: 30 });
    expect(waited).toMatchObject({ delivered: true, transaction: { output: { words: 4 } } });
    const settled = await data<Tx>(buyer, 'accept_delivery', { transactionId: bought.transaction.id, qualityScore: 95 });
    expect(settled.transaction.status).toBe('settled');

    const wallet = unwrap(await consumer.client.getWallet(consumer.id));
    expect(wallet).toMatchObject({ balanceCents: 4750, heldCents: 0 });
    const balance = await data<{ wallet: { balanceCents: number }; budget: { spentCents: number; remainingCents: number } }>(buyer, 'get_balance', {});
    expect(balance).toMatchObject({ wallet: { balanceCents: 4750 }, budget: { spentCents: 250, remainingCents: 750 } });
  });

  mcpTest('AEX_SIGNATURE_SCHEME=rfc9421: the server buys and delivers with RFC 9421 signatures, and the receipt says so (D20.1, D20.3)', async ({ consumer, serviceId }) => {
    const rfc9421 = { env: { AEX_SIGNATURE_SCHEME: 'rfc9421' } };
    const buyer = await session(consumer, ['--budget-cents', '1000'], rfc9421);
    const seller9421 = await session(provider, ['--provider'], rfc9421);
    const bought = await data<Tx>(buyer, 'buy_service', { serviceId, input: { text: 'signed the standard way' } });
    expect(bought.transaction.status).toBe('funds_held');
    expect((await data<Tx>(seller9421, 'deliver', { transactionId: bought.transaction.id, output: { words: 4 } })).transaction.status).toBe('delivered');
    expect((await data<Tx>(buyer, 'accept_delivery', { transactionId: bought.transaction.id, qualityScore: 90 })).transaction.status).toBe('settled');
    expect(unwrap(await consumer.client.receipt(bought.transaction.id)).claims.delivery).toMatchObject({ scheme: 'rfc9421' });
  });

  mcpTest('a retried buy with the same arguments buys once; a new orderRef buys again', async ({ consumer, buyer, serviceId }) => {
    const args = { serviceId, input: { text: 'retry me' } };
    const first = await data<Tx>(buyer, 'buy_service', args);
    const again = await data<Tx>(buyer, 'buy_service', args);
    expect(again.transaction.id).toBe(first.transaction.id);
    expect(again.note).toMatch(/repeats an earlier identical call/);
    const mine = unwrap(await consumer.client.listTransactions({ role: 'consumer', limit: 100 })).filter((t) => (t.input as { text?: string }).text === 'retry me');
    expect(mine).toHaveLength(1);
    expect(unwrap(await consumer.client.getWallet(consumer.id)).heldCents).toBe(250);

    const other = await data<Tx>(buyer, 'buy_service', { ...args, orderRef: 'second' });
    expect(other.transaction.id).not.toBe(first.transaction.id);
    for (const id of [first.transaction.id, other.transaction.id]) expect((await data<Tx>(buyer, 'cancel_transaction', { transactionId: id })).transaction.status).toBe('cancelled');
  });

  mcpTest('a purchase over the cap is refused with the reason when the client cannot ask the human; over the budget always', async ({ consumer, serviceId }) => {
    const pricey = (await data<{ service: { id: string } }>(seller, 'register_service', { ...WORDS, name: 'Careful word counter', pricing: { model: 'fixed', basePriceCents: 600 } })).service.id;
    const capped = await session(consumer, ['--budget-cents', '5000', '--max-per-call-cents', '500']);
    const text = await refusal(capped, 'buy_service', { serviceId: pricey, input: { text: 'too dear' } });
    expect(text).toMatch(/above the per-call cap of 500 cents/);
    expect(text).toMatch(/cannot ask the human/);
    // A refused purchase commits nothing of the budget.
    const state = await data<{ budget: { remainingCents: number } }>(capped, 'get_balance', {});
    expect(state.budget.remainingCents).toBe(5000);
    // Even a purchase under the cap is refused once the budget left is below its price.
    const narrow = await session(consumer, ['--budget-cents', '300']);
    await data<Tx>(narrow, 'buy_service', { serviceId, input: { text: 'fits' } });
    expect(await refusal(narrow, 'buy_service', { serviceId, input: { text: 'does not fit' } })).toMatch(/budget has 50 of 300 cents left.*no tool can raise it/s);
  });

  mcpTest('with an elicitation-capable client, a purchase over the cap is asked of the human: allowed, then declined', async ({ consumer }) => {
    const pricey = await wordCounter('Careful word counter', 600);
    const asked: string[] = [];
    const yes = await session(consumer, ['--budget-cents', '2000', '--max-per-call-cents', '500'], { elicit: (m) => (asked.push(m), 'accept') });
    const allowed = await data<Tx>(yes, 'buy_service', { serviceId: pricey, input: { text: 'worth it' } });
    expect(allowed.transaction).toMatchObject({ status: 'funds_held', agreedPriceCents: 600 });
    expect(asked[0]).toMatch(/600 cents .* above the per-call cap of 500 cents/);
    const no = await session(consumer, ['--budget-cents', '2000', '--max-per-call-cents', '500'], { elicit: () => 'decline' });
    expect(await refusal(no, 'buy_service', { serviceId: pricey, input: { text: 'not this time' } })).toMatch(/the human declined/);
  });

  mcpTest('disputes: the consumer disputes a delivery, the provider refunds, the consumer reads the outcome', async ({ buyer, serviceId }) => {
    const bought = await data<Tx>(buyer, 'buy_service', { serviceId, input: { text: 'count these four words' }, orderRef: 'dispute' });
    await data<Tx>(seller, 'deliver', { transactionId: bought.transaction.id, output: { words: 7 } });
    const opened = await data<{ dispute: { id: string; status: string } }>(buyer, 'open_dispute', { transactionId: bought.transaction.id, reason: 'schema_compliant_but_wrong', description: 'There are four words, not seven.' });
    expect(opened.dispute.status).toBe('open');
    const answered = await data<{ dispute: { status: string; outcome: string } }>(seller, 'respond_dispute', { disputeId: opened.dispute.id, outcome: 'consumer_wins', message: 'Sorry, refunded.' });
    expect(answered.dispute).toMatchObject({ status: 'resolved', outcome: 'consumer_wins' });
    expect((await data<{ dispute: { outcome: string } }>(buyer, 'get_dispute', { transactionId: bought.transaction.id })).dispute.outcome).toBe('consumer_wins');
    expect((await data<Tx>(buyer, 'get_transaction', { transactionId: bought.transaction.id })).transaction.status).toBe('failed');
  });

  mcpTest('negotiation: the consumer opens with an offer, the provider session counters, the consumer accepts within its budget', async ({ consumer }) => {
    const haggler = (await data<{ service: { id: string } }>(seller, 'register_service', { ...WORDS, name: 'Haggling word counter', pricing: { model: 'negotiable', basePriceCents: 400, minimumCents: 200, maximumCents: 500 } })).service.id;
    const session2 = await session(consumer, ['--budget-cents', '1000']);
    const opened = await data<Tx>(session2, 'buy_service', { serviceId: haggler, input: { text: 'make me an offer' }, maxPriceCents: 250 });
    expect(opened.transaction.status).toBe('negotiating');
    expect(opened.note).toMatch(/negotiate/);
    const countered = await data<Tx>(seller, 'negotiate', { transactionId: opened.transaction.id, action: 'counter', priceCents: 320 });
    expect(countered.transaction.status).toBe('negotiating');
    const accepted = await data<Tx>(session2, 'negotiate', { transactionId: opened.transaction.id, action: 'accept' });
    expect(accepted.transaction).toMatchObject({ status: 'funds_held', agreedPriceCents: 320 });
    // Counted once, at the highest price committed to: the offer of 250 became 320.
    expect((await data<{ budget: { spentCents: number } }>(session2, 'get_balance', {})).budget.spentCents).toBe(320);
    await data<Tx>(session2, 'cancel_transaction', { transactionId: opened.transaction.id });
  });

  mcpTest('approvals: a purchase over the buyer\'s rule waits; the owner\'s session lists it and approves it once the human confirms, or denies (D10.3)', async ({ consumer, buyer, serviceId }) => {
    const owner = { id: consumer.ownerAgentId, apiKey: consumer.ownerApiKey };
    unwrap(await consumer.client.as({ apiKey: owner.apiKey }).setAgentDelegation(consumer.id, { requireHumanApprovalAboveCents: 100 }));
    const asked = await data<Tx>(buyer, 'buy_service', { serviceId, input: { text: 'one two' } });
    expect(asked.transaction.status).toBe('awaiting_approval');
    expect(asked.note).toContain('awaits a human\'s approval');
    expect(asked.note).toContain('(250 cents, above 100)');
    // The buying agent cannot decide its own purchase.
    expect(await refusal(buyer, 'approve_purchase', { transactionId: asked.transaction.id })).toMatch(/^FORBIDDEN \(HTTP 403\)/);

    const questions: string[] = [];
    const human = await session(owner, [], { elicit: (m) => (questions.push(m), 'accept') });
    const inbox = await data<{ transactions: Array<{ id: string; status: string }>; note: string }>(human, 'list_approvals', {});
    expect(inbox.transactions.map((t) => [t.id, t.status])).toEqual([[asked.transaction.id, 'awaiting_approval']]);
    expect(inbox.note).toContain('1 purchase(s) await a decision');
    const approved = await data<Tx>(human, 'approve_purchase', { transactionId: asked.transaction.id });
    expect(approved.transaction.status).toBe('funds_held');
    expect(questions).toEqual([expect.stringContaining(`Approve the purchase ${asked.transaction.id}: 250 cents by agent ${consumer.id}`)]);
    expect(unwrap(await consumer.client.getWallet(consumer.id))).toMatchObject({ heldCents: 250 });

    // A client that cannot ask its human cannot approve; it can deny.
    const other = await data<Tx>(buyer, 'buy_service', { serviceId, input: { text: 'three' } });
    const unattended = await session(owner, []);
    expect(await refusal(unattended, 'approve_purchase', { transactionId: other.transaction.id })).toContain('this client cannot ask the human');
    const denied = await data<Tx>(unattended, 'deny_purchase', { transactionId: other.transaction.id, reason: 'not today' });
    expect(denied.transaction).toMatchObject({ status: 'cancelled' });
    expect(denied.note).toBe('Denied: the transaction is cancelled (approval_denied).');
    expect(await refusal(unattended, 'approve_purchase', { transactionId: other.transaction.id })).toContain(`No purchase ${other.transaction.id} awaits this account's approval`);
  });

  mcpTest('resources: contracts and transactions read by URI', async ({ buyer, serviceId }) => {
    const templates = await buyer.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).toEqual(['aex://services/{serviceId}', 'aex://transactions/{transactionId}']);
    const bought = await data<Tx>(buyer, 'buy_service', { serviceId, input: { text: 'read me back' } });
    const listed = await buyer.listResources();
    expect(listed.resources.map((r) => r.uri)).toContain(`aex://transactions/${bought.transaction.id}`);
    const read = await buyer.readResource({ uri: `aex://services/${serviceId}` });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({ id: serviceId, name: 'Word counter' });
    const tx = await buyer.readResource({ uri: `aex://transactions/${bought.transaction.id}` });
    expect(JSON.parse((tx.contents[0] as { text: string }).text)).toMatchObject({ id: bought.transaction.id, status: 'funds_held' });
  });

  mcpTest('bad arguments, wrong keys and a stopped exchange are clear tool errors; the session goes on', async ({ consumer, buyer }) => {
    expect(await refusal(buyer, 'get_service', { serviceId: 'nope' })).toMatch(/do not match get_service's input schema/);
    const wrong = await session({ ...consumer, apiKey: `ae_live_${'x'.repeat(43)}` }, []);
    expect(await refusal(wrong, 'get_balance', {})).toMatch(/UNAUTHENTICATED \(HTTP 401\)[\s\S]*check AEX_API_KEY/);
    const stopped = await session(consumer, [], { env: { AEX_URL: `http://127.0.0.1:${await freePort()}` } });
    expect(await refusal(stopped, 'get_balance', {})).toMatch(/Could not reach the exchange[\s\S]*Is the exchange running/);
    // Still serving after those.
    expect((await data<{ wallet: { agentId: string } }>(buyer, 'get_balance', {})).wallet.agentId).toBe(consumer.id);
    expect(await buyer.ping()).toEqual({});
  });

  mcpTest('refuses to start without credentials, or to spend without a signing key, naming what to set', async ({ consumer }) => {
    const started = spawn(process.execPath, [bin, '--budget-cents', '100'], { env: { PATH: process.env.PATH ?? '', HOME: dir, AEX_URL: ex.url, AEX_AGENT_ID: consumer.id, AEX_API_KEY: consumer.apiKey }, stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    started.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => started.once('exit', resolve));
    expect(code).toBe(2);
    expect(err).toMatch(/set AEX_SIGNING_KEY/);
    expect(err).not.toContain(consumer.apiKey);
  });
});

/**
 * The bin serving Streamable HTTP on `port` as `agent`, and what it says on stderr: `said` polls it
 * until a line matches (the first match), for 15 s at most.
 */
async function httpServer(agent: Agent, port: number, args: string[], env: Record<string, string>): Promise<{ url: string; said(pattern: RegExp): Promise<RegExpExecArray> }> {
  const child = spawn(process.execPath, [bin, '--http', '--port', String(port), ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: dir, AEX_URL: ex.url, AEX_AGENT_ID: agent.id, AEX_API_KEY: agent.apiKey, AEX_SIGNING_KEY: agent.secretKey, AEX_MCP_POLL_MS: '100', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const said = (pattern: RegExp) => eventually(async () => {
    if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${err}`);
    return pattern.exec(err);
  }, 15_000);
  return { url: (await said(/listening on (http:\/\/\S+)/))[1]!, said };
}

describe('prepaid sessions and receipts through MCP (D17.4–D17.6, D18)', () => {
  mcpTest('open_session commits the budget once within the human\'s limits; calls inside need no approval; the receipt verifies', async ({ buyer, serviceId }) => {
    // Over the per-call cap of 500 with a client that cannot ask the human: refused before anything is held.
    expect(await refusal(buyer, 'open_session', { serviceId, budgetCents: 800 })).toMatch(/above the per-call cap of 500 cents/);
    const opened = await data<{ session: { id: string; status: string; remainingCents: number } }>(buyer, 'open_session', { serviceId, budgetCents: 500 });
    expect(opened.session).toMatchObject({ status: 'open', remainingCents: 500 });
    // The call waits for the delivery; the provider delivers meanwhile.
    const calling = data<Tx>(buyer, 'call_in_session', { sessionId: opened.session.id, input: { text: 'one two' }, waitSeconds: 30 });
    const inSession = async () => unwrap(await provider.client.listTransactions({ role: 'provider', status: 'funds_held' })).find((t) => t.sessionId === opened.session.id);
    await expect.poll(inSession, { timeout: 10_000 }).toBeDefined();
    const pending = (await inSession())!;
    unwrap(await provider.client.deliver(pending.id, { output: { words: 2 } }));
    const called = await calling;
    expect(called.transaction).toMatchObject({ id: pending.id, status: 'settled', agreedPriceCents: 250 });
    expect((await data<{ session: { spentCents: number } }>(buyer, 'get_session', { sessionId: opened.session.id })).session.spentCents).toBe(250);
    const closed = await data<{ session: { status: string; returnedCents: number } }>(buyer, 'close_session', { sessionId: opened.session.id });
    expect(closed.session.status === 'closed' ? closed.session.returnedCents : 250).toBe(250);
    const receipt = await data<{ verified: boolean; claims: { sessionId: string; priceCents: number } }>(buyer, 'get_receipt', { transactionId: pending.id });
    expect(receipt).toMatchObject({ verified: true, claims: { sessionId: opened.session.id, priceCents: 250 } });
  });
});

describe('the MCP server over Streamable HTTP', () => {
  let url: string;
  let consumer: Agent;
  const token = randomBytes(24).toString('hex');

  beforeAll(async () => {
    consumer = await buyingAgent();
    const port = await freePort();
    ({ url } = await httpServer(consumer, port, ['--allowed-host', `mcp.internal:${port}`, '--budget-cents', '1000', '--provider'], { AEX_MCP_HTTP_TOKEN: token }));
    expect(readFileSync(join(repoRoot, 'packages/mcp/README.md'), 'utf8')).toContain('AEX_MCP_HTTP_TOKEN');
  });

  it('serves the same tools to a client with the bearer token, and buys', async () => {
    const client = new Client({ name: 'http-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    clients.push(client);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['buy_service', 'deliver']));
    const r = (await client.callTool({ name: 'buy_service', arguments: { serviceId: await wordCounter(), input: { text: 'over http' } } })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect((r.structuredContent as Tx).transaction.status).toBe('funds_held');
  });

  it('closes a session its client left without ending it, once idle', async () => {
    // A server of its own whose sessions idle out after a second; the shared one keeps the default,
    // so its sessions outlive any call.
    const idle = await httpServer(consumer, await freePort(), [], { AEX_MCP_HTTP_TOKEN: token, AEX_MCP_SESSION_IDLE_SECONDS: '1' });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'gone', version: '1' } } };
    const opened = await fetch(idle.url, { method: 'POST', headers, body: JSON.stringify(init) });
    expect(opened.status).toBe(200);
    const session = opened.headers.get('mcp-session-id')!;
    await opened.text();
    const ping = () => fetch(idle.url, { method: 'POST', headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }) });
    const alive = await ping();
    expect(alive.status).toBe(200);
    await alive.text();
    await idle.said(new RegExp(`session ${session} closed: no request for 1 s`));
    const gone = await ping();
    expect(gone.status).toBe(404);
    expect(await gone.json()).toMatchObject({ error: { message: 'Unknown or ended session: initialize a new one.' } });
  });

  it('refuses a request without the token (401) or with a Host that is not its own', async () => {
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const anonymous = await fetch(url, { method: 'POST', headers, body: JSON.stringify(init) });
    expect(anonymous.status).toBe(401);
    const wrong = await fetch(url, { method: 'POST', headers: { ...headers, authorization: 'Bearer not-the-token' }, body: JSON.stringify(init) });
    expect(wrong.status).toBe(401);
    // fetch cannot set Host: raw requests, as a page on a rebound name would send them.
    const withHost = (host: string) => new Promise<number>((resolve, reject) => {
      const req = request(url, { method: 'POST', headers: { ...headers, authorization: `Bearer ${token}`, host } }, (res) => (res.resume(), resolve(res.statusCode!)));
      req.once('error', reject).end(JSON.stringify(init));
    });
    expect(await withHost('evil.example:80')).toBe(403);
    // A name the human allowed at launch is accepted.
    expect(await withHost(`mcp.internal:${new URL(url).port}`)).toBe(200);
  });
});
