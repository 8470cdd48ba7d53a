import { describe, expect } from 'vitest';
import { publicKeyOf } from '@agent-exchange/client';
import { readProfiles } from '@aex/agent-kit';
import { ACCOUNT_ID, AGENT_ID, cliTest } from './cli-test.js';
import { isSignedBy } from './fake-exchange.js';
import { agentView, PROVIDER_ID, WHEN } from './views.js';

const CHILD_ID = 'c0000000-0000-4000-8000-0000000000c0';

describe('agents show', () => {
  cliTest('reads this agent by default and prints it without its delegation rules', async ({ aex, exchange, profile }) => {
    exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: agentView({ delegation: { maxTransactionCents: 100 } }) });
    const r = await aex(['agents', 'show']);
    expect(exchange.requests.map((q) => [q.method, q.path, isSignedBy(q, profile.signingSecretKey)])).toEqual([['GET', `/v1/agents/${AGENT_ID}`, true]]);
    expect(r.stdout).toBe(`id                ${AGENT_ID}\naccountId         ${ACCOUNT_ID}\nname              Buyer\nstatus            active\nsigningKeyPublic  -\nwebhookUrl        -\n`);
  });

  cliTest('reads the agent named', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/agents/${PROVIDER_ID}`, { data: { id: PROVIDER_ID, name: 'Seller' } });
    expect((await aex(['agents', 'show', PROVIDER_ID])).stdout).toBe(`id    ${PROVIDER_ID}\nname  Seller\n`);
  });
});

describe('agents create', () => {
  cliTest('sends the name, type and a new signing key\'s public half, and prints both secrets once', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', '/v1/agents', { status: 201, data: { id: CHILD_ID, accountId: ACCOUNT_ID, name: 'Worker', apiKey: 'ae_live_worker' } });
    const r = await aex(['agents', 'create', '--name', 'Worker', '--type', 'ephemeral']);
    const [sent] = exchange.requests;
    const secret = /signing key {2}(\S+)\n/.exec(r.stdout)![1]!;
    expect(sent!.body).toEqual({ name: 'Worker', agentType: 'ephemeral', signingKeyPublic: publicKeyOf(secret) });
    expect(r.stdout).toBe(`agent        ${CHILD_ID}\napi key      ae_live_worker\nsigning key  ${secret}\nShown once: keep both secret.\n`);
  });

  cliTest('--save-as keeps its credentials as a profile that does not become the current one', async ({ aex, exchange, configPath, profile: _ }) => {
    exchange.on('POST', '/v1/agents', { status: 201, data: { id: CHILD_ID, accountId: ACCOUNT_ID, name: 'Worker', apiKey: 'ae_live_worker' } });
    const r = await aex(['agents', 'create', '--name', 'Worker', '--save-as', 'worker']);
    const file = readProfiles(configPath);
    expect(file.current).toBe('me');
    expect(file.profiles.worker).toEqual({ url: exchange.url, accountId: ACCOUNT_ID, agentId: CHILD_ID, apiKey: 'ae_live_worker', signingSecretKey: expect.any(String) });
    expect(r.stdout).toBe(`Agent ${CHILD_ID} (Worker) saved as profile worker.\n`);
  });
});

describe('agents deactivate', () => {
  cliTest('sends a DELETE for the agent and prints its status', async ({ aex, exchange, profile: _ }) => {
    exchange.on('DELETE', `/v1/agents/${CHILD_ID}`, { data: agentView({ id: CHILD_ID, status: 'inactive' }) });
    const r = await aex(['agents', 'deactivate', CHILD_ID]);
    expect(exchange.requests.map((q) => [q.method, q.path])).toEqual([['DELETE', `/v1/agents/${CHILD_ID}`]]);
    expect(r.stdout).toBe(`Agent ${CHILD_ID} is inactive.\n`);
  });
});

describe('agents spawn', () => {
  const spawned = { status: 201, data: { id: CHILD_ID, accountId: ACCOUNT_ID, apiKey: 'ae_live_child', expiresAt: WHEN } };

  /** The child's own registration of its new key (D3.3: it buys with signed requests): unsigned, with its API key, proved. */
  function registration(exchange: { sent: (m: string, p: string) => Array<{ body: unknown; headers: Record<string, unknown> }> }) {
    const [patch] = exchange.sent('PATCH', `/v1/agents/${CHILD_ID}`);
    const body = patch!.body as { signingKeyPublic: string; signingKeyProof: string };
    return { body, authorization: patch!.headers.authorization, signed: patch!.headers['x-ae-signature'] !== undefined };
  }

  cliTest('sends the budget and lifetime under this agent, registers a signing key for the child, and prints both secrets once', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', `/v1/agents/${AGENT_ID}/spawn`, spawned);
    exchange.on('GET', `/v1/agents/${CHILD_ID}`, { data: agentView({ id: CHILD_ID }) });
    exchange.on('PATCH', `/v1/agents/${CHILD_ID}`, { data: agentView({ id: CHILD_ID }) });
    const r = await aex(['agents', 'spawn', '--name', 'Child', '--budget-cents', '500', '--hours', '2']);
    const [sent] = exchange.requests;
    expect([sent!.body, sent!.headers['idempotency-key']]).toEqual([{ name: 'Child', budgetCents: 500, maxLifetimeHours: 2 }, expect.stringMatching(/^[0-9a-f-]{36}$/)]);
    const secret = /signing key {2}(\S+)\n/.exec(r.stdout)![1]!;
    expect(registration(exchange)).toEqual({ body: { signingKeyPublic: publicKeyOf(secret), signingKeyProof: expect.any(String) }, authorization: 'Bearer ae_live_child', signed: false });
    expect(r.stdout).toBe(`agent        ${CHILD_ID}\nbudget       $5.00, moved from this agent's wallet\nexpires      ${WHEN}\napi key      ae_live_child\nsigning key  ${secret}\nShown once: keep both secret.\n`);
  });

  cliTest('--save-as keeps the child as a profile with its signing key, registered', async ({ aex, exchange, configPath, profile: _ }) => {
    exchange.on('POST', `/v1/agents/${AGENT_ID}/spawn`, spawned);
    exchange.on('GET', `/v1/agents/${CHILD_ID}`, { data: agentView({ id: CHILD_ID }) });
    exchange.on('PATCH', `/v1/agents/${CHILD_ID}`, { data: agentView({ id: CHILD_ID }) });
    const r = await aex(['agents', 'spawn', '--name', 'Child', '--budget-cents', '500', '--save-as', 'child']);
    const saved = readProfiles(configPath).profiles.child!;
    expect(saved).toEqual({ url: exchange.url, accountId: ACCOUNT_ID, agentId: CHILD_ID, apiKey: 'ae_live_child', signingSecretKey: expect.any(String) });
    expect(registration(exchange).body.signingKeyPublic).toBe(publicKeyOf(saved.signingSecretKey!));
    expect(r.stdout).toBe(`agent    ${CHILD_ID}\nbudget   $5.00, moved from this agent's wallet\nexpires  ${WHEN}\nprofile  child\n`);
  });

  cliTest('keeps the credentials when the key\'s registration fails, and says so with the exchange\'s error', async ({ aex, exchange, configPath, profile: _ }) => {
    exchange.on('POST', `/v1/agents/${AGENT_ID}/spawn`, spawned);
    exchange.on('GET', `/v1/agents/${CHILD_ID}`, { data: agentView({ id: CHILD_ID }) });
    exchange.on('PATCH', `/v1/agents/${CHILD_ID}`, { status: 503, errors: [{ code: 'SERVICE_UNAVAILABLE', message: 'Identity is not answering.' }] });
    const r = await aex(['agents', 'spawn', '--name', 'Child', '--budget-cents', '500', '--save-as', 'child']);
    expect(readProfiles(configPath).profiles.child).toMatchObject({ agentId: CHILD_ID, apiKey: 'ae_live_child', signingSecretKey: expect.any(String) });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('Identity is not answering.');
  });
});

