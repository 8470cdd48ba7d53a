import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { startTestExchange, type TestExchange } from './harness.js';
import { a2aClient, credentialsOf, exchangeFetch, refusal, send } from './a2a-kit.js';
import { funded, INPUT, party, serviceBody } from './transaction-kit.js';

// D21.2, D4.1: the A2A endpoint counts in the rate-limit groups of the REST routes — GetTask in
// `read`, every other method in `write` — per calling agent. An exchange whose agents may read 3
// times a minute.

let ex: TestExchange;
beforeAll(async () => {
  ex = await startTestExchange({ RATE_LIMIT_READ_PER_MIN: '3' });
});
afterAll(() => ex.stop());

describe('rate limits on the A2A endpoint (D21.2, D4.1)', () => {
  it('limits GetTask in the read group, with a 429 naming RATE_LIMITED, while messages still buy', async () => {
    const [provider, consumer] = await Promise.all([party(ex), funded(ex, 5000)]);
    const serviceId = unwrap(await provider.client.createService(serviceBody())).id;
    const client = await a2aClient(ex, provider.agentId, credentialsOf(consumer));
    const task = await send(client, { serviceId, input: INPUT });
    const read = () => client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    for (let i = 0; i < 3; i++) expect((await read()).id).toBe(task.id);
    expect(await refusal(read())).toMatchObject({ code: -32000, message: expect.stringMatching(/^RATE_LIMITED: /) });
    const raw = await exchangeFetch(ex, credentialsOf(consumer))(`http://exchange.test:8080/a2a/agents/${provider.agentId}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 'r', method: 'GetTask', params: { id: task.id } }),
    });
    expect(raw.status).toBe(429);
    expect(Number(raw.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await raw.json()).toMatchObject({ id: 'r', error: { data: [{ reason: 'RATE_LIMITED' }] } });
    // Writes are counted apart: the same agent still buys.
    expect((await send(client, { serviceId, input: INPUT })).id).not.toBe(task.id);
  });
});
