import { describe, expect } from 'vitest';
import { AGENT_ID, cliTest } from './cli-test.js';
import { isSignedBy } from './fake-exchange.js';
import { PROVIDER_ID, serviceView, SERVICE_ID } from './views.js';

const CONTRACT = { name: 'Word counter', description: 'Counts words.', version: '1.0.0', category: 'text', pricing: { model: 'fixed', basePriceCents: 250 } };

describe('services register', () => {
  cliTest('POSTs the JSON file as it is, signed, with an idempotency key', async ({ aex, exchange, file, profile }) => {
    exchange.on('POST', '/v1/services', { status: 201, data: serviceView() });
    const r = await aex(['services', 'register', file('service.json', CONTRACT)]);
    const [sent] = exchange.requests;
    expect([sent!.method, sent!.path, sent!.body, isSignedBy(sent!, profile.signingSecretKey)]).toEqual(['POST', '/v1/services', CONTRACT, true]);
    expect(sent!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.stdout).toBe(`Registered ${SERVICE_ID} (Word counter 1.0.0, $2.50).\n`);
  });

  cliTest('refuses a file it cannot read, naming it, and sends nothing', async ({ aex, exchange, dir, profile: _ }) => {
    const r = await aex(['services', 'register', `${dir}/missing.json`]);
    expect([r.code, r.stderr]).toEqual([2, `aex: Cannot read the service file ${dir}/missing.json: ENOENT.\n`]);
    expect(exchange.requests).toEqual([]);
  });

  cliTest('refuses a file that is not a JSON object', async ({ aex, file, profile: _ }) => {
    const path = file('service.json', '[1, 2]');
    const r = await aex(['services', 'register', path]);
    expect([r.code, r.stderr]).toEqual([2, `aex: The service file ${path} is not a JSON object (not an object).\n`]);
  });
});

describe('services list', () => {
  cliTest('lists active services as a table with whether each provider delivers (D22.3), 20 unless --limit says otherwise', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', '/v1/services', { data: [serviceView({ liveness: { state: 'stalled', score: 0.2, recentDelivered: 0, recentUndelivered: 3 } })] });
    const r = await aex(['services', 'list', '--category', 'text']);
    expect(exchange.requests.map((q) => q.target)).toEqual(['/v1/services?limit=20&category=text']);
    expect(r.stdout).toBe(`ID                                    NAME          PRICE  STATUS  TRUST  PROVIDER  DELIVERS\n${SERVICE_ID}  Word counter  $2.50  active  80     Seller    stalled\n`);
  });

  cliTest('--mine asks for this agent\'s services, --agent for another provider\'s', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', '/v1/services', { data: [] });
    await aex(['services', 'list', '--mine']);
    await aex(['services', 'list', '--agent', PROVIDER_ID, '--limit', '3']);
    expect(exchange.requests.map((q) => q.target)).toEqual([`/v1/services?limit=20&agentId=${AGENT_ID}`, `/v1/services?limit=3&agentId=${PROVIDER_ID}`]);
  });
});

describe('services show, pause and resume', () => {
  cliTest('show prints the whole contract as JSON', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/services/${SERVICE_ID}`, { data: serviceView() });
    expect((await aex(['services', 'show', SERVICE_ID])).stdout).toBe(`${JSON.stringify(serviceView(), null, 2)}\n`);
  });

  cliTest('pause PATCHes the status to paused', async ({ aex, exchange, profile: _ }) => {
    exchange.on('PATCH', `/v1/services/${SERVICE_ID}`, { data: serviceView({ status: 'paused' }) });
    const r = await aex(['services', 'pause', SERVICE_ID]);
    expect(exchange.requests.map((q) => [q.method, q.path, q.body])).toEqual([['PATCH', `/v1/services/${SERVICE_ID}`, { status: 'paused' }]]);
    expect(r.stdout).toBe('Word counter is paused.\n');
  });

  cliTest('resume PATCHes the status to active', async ({ aex, exchange, profile: _ }) => {
    exchange.on('PATCH', `/v1/services/${SERVICE_ID}`, { data: serviceView() });
    const r = await aex(['services', 'resume', SERVICE_ID]);
    expect(exchange.requests.map((q) => q.body)).toEqual([{ status: 'active' }]);
    expect(r.stdout).toBe('Word counter is active.\n');
  });
});
