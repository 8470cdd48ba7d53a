import { describe, expect } from 'vitest';
import { TaskState, type Task } from '@a2a-js/sdk';
import { generateSigningKey, unwrap } from '@agent-exchange/client';
import { exchangeTest } from './fixtures.js';
import { a2aClient, credentialsOf, dataMessage, exchangeFetch, providerCard, refusal, send, stateOf, waitForState } from './a2a-kit.js';
import { funded, INPUT, OUTPUT, party, serviceBody, waitForStatus, wallet } from './transaction-kit.js';

// D21.2: buying over A2A. The A2A SDK's client reads a provider's card, finds its JSON-RPC
// interface and calls it with the buyer's API key and a signed request (D20, D3); each task is a
// transaction of the exchange, read and changed through the same operations as the REST routes.

const it = exchangeTest({ SAGA_WAIT_MS: '3000' });
const purchase = (serviceId: string, extra: Record<string, unknown> = {}) => ({ serviceId, input: INPUT, ...extra });

describe('buying a provider\'s service over A2A JSON-RPC (D21.2)', () => {
  it('lists the JSON-RPC interface on the provider\'s card, first', async ({ exchange, provider, service }) => {
    const card = await providerCard(exchange, provider.agentId);
    expect((card.supportedInterfaces as unknown[])[0]).toEqual({ url: `http://exchange.test:8080/a2a/agents/${provider.agentId}`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    expect((card.skills as Array<{ id: string }>).map((s) => s.id)).toEqual([service]);
  });

  it('creates a transaction from a signed message: the task is the transaction, completed with the output as a data artifact once delivered, settled by a verify message', async ({ exchange, provider, service, consumer }) => {
    const client = await a2aClient(exchange, provider.agentId, credentialsOf(consumer));
    const task = await send(client, purchase(service, { maxPriceCents: 1000 }));
    const tx = unwrap(await consumer.client.getTransaction(task.id));
    expect(tx).toMatchObject({ id: task.id, consumerAgentId: consumer.agentId, providerAgentId: provider.agentId, serviceId: service, input: INPUT });
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(task.status!.state);
    expect(task.contextId).toBe((tx.metadata as { a2a: { contextId: string } }).a2a.contextId);

    expect((await waitForStatus(consumer, task.id, 'funds_held')).agreedPriceCents).toBe(1000);
    const working = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(stateOf(working)).toBe('TASK_STATE_WORKING');
    expect(working.artifacts).toEqual([]);
    expect(working.metadata).toMatchObject({ transactionStatus: 'funds_held', agreedPriceCents: 1000 });

    // The provider delivers through REST; the buyer sees the task completed with the output.
    unwrap(await provider.client.deliver(task.id, { output: OUTPUT }));
    const completed = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(stateOf(completed)).toBe('TASK_STATE_COMPLETED');
    expect(completed.metadata).toMatchObject({ transactionStatus: 'delivered' });
    expect(completed.artifacts).toHaveLength(1);
    expect(completed.artifacts[0]!.parts[0]!.content).toEqual({ $case: 'data', value: OUTPUT });

    // A verify message on the task accepts the delivery: settled, still completed.
    const verified = await send(client, { verify: true, qualityScore: 90 }, task.id);
    expect(stateOf(verified)).toBe('TASK_STATE_COMPLETED');
    expect(verified.metadata).toMatchObject({ transactionStatus: 'settled' });
    expect(unwrap(await consumer.client.getTransaction(task.id))).toMatchObject({ status: 'settled', qualityScore: 90 });
  });

  it('buys once for a message sent again with the same messageId (an A2A retry), and refuses that messageId on another message (D5)', async ({ exchange, provider, service, consumer }) => {
    const client = await a2aClient(exchange, provider.agentId, credentialsOf(consumer));
    const message = dataMessage(purchase(service));
    const ask = (m: typeof message) => client.sendMessage({ tenant: '', message: m, configuration: undefined, metadata: undefined });
    const first = (await ask(message)) as Task;
    const again = (await ask(message)) as Task;
    expect(again.id).toBe(first.id);
    expect(unwrap(await consumer.client.listTransactions({})).map((t) => t.id)).toEqual([first.id]);
    const reused = await refusal(ask(dataMessage(purchase(service, { units: 2 }), undefined, message.messageId)));
    expect(reused).toMatchObject({ code: -32602, message: expect.stringContaining('messageId was already sent with another message') });
  });

  it('cancels a task (the request signed with X-AE headers): the transaction is cancelled and the task canceled', async ({ exchange, provider, service, consumer }) => {
    // Signed with D3's X-AE headers, which the endpoint takes as every signed route does.
    const client = await a2aClient(exchange, provider.agentId, credentialsOf(consumer, 'x-ae'));
    const task = await send(client, purchase(service));
    await waitForStatus(consumer, task.id, 'funds_held');
    const cancelled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(cancelled.id).toBe(task.id);
    const canceled = await waitForState(client, task.id, TaskState.TASK_STATE_CANCELED);
    expect(canceled.metadata).toMatchObject({ transactionStatus: 'cancelled', statusReason: 'cancelled_by_consumer' });
    expect(unwrap(await consumer.client.getTransaction(task.id)).status).toBe('cancelled');
    // A task that has ended cannot be cancelled again.
    const again = await refusal(client.cancelTask({ tenant: '', id: task.id, metadata: undefined }));
    expect(again.code).toBe(-32002);
  });

  it('shows a purchase waiting for the owner\'s approval as auth-required, then working once approved (D10.3)', async ({ exchange, provider, service }) => {
    const buyer = await funded(exchange, 3000);
    unwrap(await buyer.owner.client.setAgentDelegation(buyer.agentId, { requireHumanApprovalAboveCents: 500 }));
    const client = await a2aClient(exchange, provider.agentId, credentialsOf(buyer));
    const task = await send(client, purchase(service));
    expect(stateOf(task)).toBe('TASK_STATE_AUTH_REQUIRED');
    expect(task.status!.message!.parts[0]!.content).toEqual({ $case: 'text', value: expect.stringContaining(`/v1/transactions/${task.id}/approve`) });
    unwrap(await buyer.owner.client.approve(task.id));
    await waitForState(client, task.id, TaskState.TASK_STATE_WORKING);
  });
});

describe('who may buy and see tasks over A2A (D21.2, D2, D3)', () => {
  it('answers another account\'s agent, and the endpoint of another provider, task not found', async ({ exchange, provider, consumer, trade }) => {
    const stranger = await funded(exchange, 500);
    const theirs = await a2aClient(exchange, provider.agentId, credentialsOf(stranger));
    expect((await refusal(theirs.getTask({ tenant: '', id: trade.id, historyLength: undefined }))).code).toBe(-32001);
    expect((await refusal(theirs.cancelTask({ tenant: '', id: trade.id, metadata: undefined }))).code).toBe(-32001);
    const elsewhere = await a2aClient(exchange, (await party(exchange)).agentId, credentialsOf(consumer));
    expect((await refusal(elsewhere.getTask({ tenant: '', id: trade.id, historyLength: undefined }))).code).toBe(-32001);
    expect((await refusal(elsewhere.getTask({ tenant: '', id: 'not-a-task', historyLength: undefined }))).code).toBe(-32001);
    // The buyer itself, at the provider's endpoint, sees it.
    const own = await a2aClient(exchange, provider.agentId, credentialsOf(consumer));
    expect(stateOf(await own.getTask({ tenant: '', id: trade.id, historyLength: undefined }))).toBe('TASK_STATE_WORKING');
  });

  it('refuses a call without an API key 401, and an unsigned or wrongly signed one with the D3 error, as JSON-RPC errors', async ({ exchange, provider, service, consumer }) => {
    const anonymous = await a2aClient(exchange, provider.agentId, {});
    const noKey = await refusal(send(anonymous, purchase(service)));
    expect(noKey).toMatchObject({ code: -32000, message: expect.stringMatching(/^UNAUTHENTICATED: /) });
    const unsigned = await a2aClient(exchange, provider.agentId, { apiKey: consumer.apiKey });
    const noSignature = await refusal(send(unsigned, purchase(service)));
    expect(noSignature).toMatchObject({ code: -32000, message: expect.stringMatching(/^SIGNATURE_REQUIRED: /) });
    const forged = await a2aClient(exchange, provider.agentId, { apiKey: consumer.apiKey, signer: { agentId: consumer.agentId, keys: generateSigningKey(), scheme: 'rfc9421' } });
    expect(await refusal(send(forged, purchase(service)))).toMatchObject({ code: -32000, message: expect.stringMatching(/^SIGNATURE_INVALID: /) });
    // On the wire: the HTTP status of the REST routes, the D1.4 code as the ErrorInfo's reason.
    const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'GetTask', params: { id: service } });
    const res = await exchangeFetch(exchange, { apiKey: consumer.apiKey })(`http://exchange.test:8080/a2a/agents/${provider.agentId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(401);
    const wire = (await res.json()) as { error: { data: Array<{ metadata: Record<string, string> }> } };
    expect(wire).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32000, data: [{ reason: 'SIGNATURE_REQUIRED', metadata: { method: 'POST', format: '{timestamp}:{METHOD}:{path}:{bodyHash}' } }] } });
    // ErrorInfo's metadata holds strings only; what the exchange could not read (no timestamp) is left out, not "null".
    expect(Object.values(wire.error.data[0]!.metadata).every((v) => typeof v === 'string' && v !== 'null')).toBe(true);
    const anon = await fetch(`${exchange.url}/a2a/agents/${provider.agentId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(anon.status).toBe(401);
    expect(await anon.json()).toMatchObject({ id: 7, error: { data: [{ reason: 'UNAUTHENTICATED' }] } });
    expect(await wallet(consumer)).toMatchObject({ heldCents: 0 });
  });

  it('refuses a request of another A2A version, a request without A2A-Version being of 0.3', async ({ exchange, provider, service, consumer }) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'v', method: 'GetTask', params: { id: service } });
    const call = (headers: Record<string, string>) => exchangeFetch(exchange, credentialsOf(consumer))(`http://exchange.test:8080/a2a/agents/${provider.agentId}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    for (const headers of [{}, { 'a2a-version': '0.3' }] as Array<Record<string, string>>) {
      const res = await call(headers);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id: 'v', error: { code: -32009, message: expect.stringContaining('A2A-Version: 1.0') } });
    }
    expect(await (await call({ 'a2a-version': '1.0' })).json()).toMatchObject({ id: 'v', error: { code: -32001 } });
  });

  it('answers bad parameters with a JSON-RPC error that says what is wrong', async ({ exchange, provider, service, consumer }) => {
    const client = await a2aClient(exchange, provider.agentId, credentialsOf(consumer));
    const noService = await refusal(send(client, { input: INPUT }));
    expect(noService).toMatchObject({ code: -32602, message: expect.stringContaining('serviceId') });
    const badPrice = await refusal(send(client, purchase(service, { maxPriceCents: 'ten' })));
    expect(badPrice).toMatchObject({ code: -32602, message: expect.stringContaining('maxPriceCents') });
    const unknownField = await refusal(send(client, purchase(service, { colour: 'red' })));
    expect(unknownField).toMatchObject({ code: -32602, message: expect.stringContaining('colour') });
    const notData = await refusal(send(client, 'buy it please'));
    expect(notData).toMatchObject({ code: -32602, message: expect.stringContaining('data part') });
    // A body that is not JSON: JSON-RPC's parse error, with the REST routes' status.
    const garbled = await exchangeFetch(exchange, credentialsOf(consumer))(`http://exchange.test:8080/a2a/agents/${provider.agentId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc": "2.0", "method": ' });
    expect(garbled.status).toBe(400);
    expect(await garbled.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700, data: [{ reason: 'INVALID_JSON' }] } });
    const badInput = await refusal(send(client, purchase(service, { input: { payload: '' } })));
    expect(badInput).toMatchObject({ code: -32602, message: expect.stringMatching(/^SCHEMA_VALIDATION_FAILED: .*\/input\/payload/) });
  });

  it('refuses a service that is not this provider\'s, naming the endpoint that sells it', async ({ exchange, provider, consumer }) => {
    const other = await party(exchange);
    const theirs = unwrap(await other.client.createService(serviceBody())).id;
    const client = await a2aClient(exchange, provider.agentId, credentialsOf(consumer));
    const wrong = await refusal(send(client, purchase(theirs)));
    expect(wrong).toMatchObject({ code: -32602, message: expect.stringContaining(`is not sold by agent ${provider.agentId}`) });
    expect(wrong.message).toContain(`/a2a/agents/${other.agentId}`);
    expect(unwrap(await consumer.client.listTransactions({}))).toEqual([]);
  });
});
