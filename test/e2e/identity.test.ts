import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExchangeClient, generateSigningKey, signingKeyProof, signRequest, unwrap } from '@agent-exchange/client';
import { expectError, startTestExchange, uniqueEmail, type Member, type TestExchange } from './harness.js';

// Accounts and agents through the gateway (D2, D6.1–D6.7), each route with its errors and the
// authorization matrix: owner agent, other agent of the account, other account, anonymous, revoked key.
let ex: TestExchange;
let owner: Member; // owner agent of account A
let sibling: Member; // another agent of account A (has a signing key)
let stranger: Member; // owner agent of account B

beforeAll(async () => {
  ex = await startTestExchange();
  owner = await ex.signUp({ displayName: 'Account A' });
  sibling = await ex.addAgent(owner, { name: 'sibling', capabilities: ['translate'], metadata: { tier: 'gold' } });
  stranger = await ex.signUp({ displayName: 'Account B' });
});
afterAll(async () => ex?.stop());

const PUBLIC_FIELDS = ['id', 'name', 'agentType', 'status', 'description', 'capabilities', 'didWeb', 'signingKeyPublic', 'trustScore', 'createdAt'].sort();
const FULL_FIELDS = [...PUBLIC_FIELDS, 'accountId', 'webhookUrl', 'delegation', 'metadata', 'parentAgentId', 'expiresAt', 'keyPrefix', 'updatedAt'].sort();

describe('POST /v1/accounts (D6.1, D6.2)', () => {
  it('creates the account with its owner agent, API key, wallet and trust score of 50', async () => {
    const email = uniqueEmail();
    const r = await ex.anon.createAccount({ accountType: 'organization', email, displayName: 'Org', agent: { name: 'first', description: 'does things', capabilities: ['a'] } });
    expect(r.status).toBe(201);
    const acc = unwrap(r);
    expect(acc.apiKey).toMatch(/^ae_live_[A-Za-z0-9_-]{43}$/);
    expect(acc.accountType).toBe('organization');
    expect(acc.verificationStatus).toBe('unverified');
    expect(Object.keys(acc.agent).sort()).toEqual(FULL_FIELDS);
    expect(acc.agent).toMatchObject({ accountId: acc.id, name: 'first', agentType: 'persistent', status: 'active', trustScore: 50, keyPrefix: acc.apiKey.slice(0, 12), parentAgentId: null });
    expect(acc.agent.didWeb).toBe(`did:web:exchange.test%3A8080:agents:${acc.agent.id}`);
    // D6.1: the wallet exists when the account answers.
    const client = ex.anon.as({ apiKey: acc.apiKey });
    const wallet = unwrap(await client.getWallet(acc.agent.id));
    expect(wallet).toMatchObject({ agentId: acc.agent.id, balanceCents: 0, heldCents: 0, availableCents: 0 });
  });

  it('rejects a duplicate email case-insensitively and after trimming with 409 CONFLICT', async () => {
    const email = uniqueEmail();
    unwrap(await ex.anon.createAccount({ accountType: 'individual', email, displayName: 'x', agent: { name: 'a' } }));
    const r = await ex.anon.createAccount({ accountType: 'individual', email: `  ${email.toUpperCase()} `, displayName: 'y', agent: { name: 'b' } });
    expectError(r, 409, 'CONFLICT');
    expect(!r.ok && r.error.errors[0]?.field).toBe('/body/email');
  });

  it.each([
    ['an email without @', { email: 'nobody.example.com' }, '/body/email'],
    ['an email over 320 characters', { email: `${'a'.repeat(320)}@x.io` }, '/body/email'],
    ['an empty display name', { displayName: '' }, '/body/displayName'],
    ['an unknown account type', { accountType: 'company' }, '/body/accountType'],
    ['an unknown property', { nickname: 'n' }, '/body/nickname'],
    ['an unknown agent property', { agent: { name: 'a', power: 9 } }, '/body/agent/power'],
    ['an agent without a name', { agent: {} }, '/body/agent/name'],
    ['an agent of unknown type', { agent: { name: 'a', agentType: 'robot' } }, '/body/agent/agentType'],
    ['a webhook URL that is not http(s)', { agent: { name: 'a', webhookUrl: 'ftp://example.com/hook' } }, '/body/agent/webhookUrl'],
  ])('rejects %s with 400 VALIDATION_ERROR at its field', async (_label, over, field) => {
    const r = await ex.anon.createAccount({ accountType: 'individual', email: uniqueEmail(), displayName: 'ok', agent: { name: 'a' }, ...over } as never);
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(!r.ok && r.error.errors.map((e) => e.field)).toContain(field);
  });

  it('keeps metadata as a free-form object', async () => {
    const acc = unwrap(await ex.anon.createAccount({ accountType: 'individual', email: uniqueEmail(), displayName: 'm', metadata: { any: { nested: [1, 2] } }, agent: { name: 'a' } }));
    const got = unwrap(await ex.anon.as({ apiKey: acc.apiKey }).getAccount(acc.id));
    expect(got.metadata).toEqual({ any: { nested: [1, 2] } });
  });
});

describe('GET /v1/accounts/{id} (D6.3, D2.4)', () => {
  it('gives the owner agent the account representation', async () => {
    const acc = unwrap(await owner.client.getAccount(owner.accountId));
    expect(Object.keys(acc).sort()).toEqual(['accountType', 'createdAt', 'defaultDelegation', 'displayName', 'id', 'metadata', 'updatedAt', 'verificationStatus']);
    expect(acc).toMatchObject({ id: owner.accountId, displayName: 'Account A', defaultDelegation: {} });
  });
  it('lets any agent of the account read it', async () => {
    expect(unwrap(await sibling.client.getAccount(owner.accountId)).id).toBe(owner.accountId);
  });
  it('hides another account as 404', async () => expectError(await stranger.client.getAccount(owner.accountId), 404, 'NOT_FOUND'));
  it('answers an unknown account with 404', async () => expectError(await owner.client.getAccount(randomUUID()), 404, 'NOT_FOUND'));
  it('needs authentication', async () => expectError(await ex.anon.getAccount(owner.accountId), 401, 'UNAUTHENTICATED'));
});

describe('PATCH /v1/accounts/{id} (D2.2, D6.3)', () => {
  it('lets the owner agent change name, email and metadata', async () => {
    const email = uniqueEmail();
    const acc = unwrap(await owner.client.updateAccount(owner.accountId, { displayName: 'Account A2', email, metadata: { k: 'v' } }));
    expect(acc).toMatchObject({ displayName: 'Account A2', metadata: { k: 'v' } });
    expect(Date.parse(acc.updatedAt)).toBeGreaterThanOrEqual(Date.parse(acc.createdAt));
  });
  it('refuses another agent of the account with 403', async () => expectError(await sibling.client.updateAccount(owner.accountId, { displayName: 'x' }), 403, 'FORBIDDEN'));
  it('hides another account as 404', async () => expectError(await stranger.client.updateAccount(owner.accountId, { displayName: 'x' }), 404, 'NOT_FOUND'));
  it('needs authentication', async () => expectError(await ex.anon.updateAccount(owner.accountId, { displayName: 'x' }), 401, 'UNAUTHENTICATED'));
  it('refuses an email another account uses with 409', async () => {
    const other = await ex.signUp();
    const theirs = uniqueEmail();
    unwrap(await other.client.updateAccount(other.accountId, { email: theirs }));
    expectError(await owner.client.updateAccount(owner.accountId, { email: theirs.toUpperCase() }), 409, 'CONFLICT');
  });
  it('rejects fields that cannot be changed', async () => {
    const r = await owner.client.updateAccount(owner.accountId, { accountType: 'organization' } as never);
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(!r.ok && r.error.errors[0]?.field).toBe('/body/accountType');
  });
});

describe('PUT /v1/accounts/{id}/delegation', () => {
  const rules = { maxTransactionCents: 5000, maxDailySpendCents: 20000, allowedCategories: ['data'], requireHumanApprovalAboveCents: 10000 };
  it('stores the owner agent’s rules and returns them', async () => {
    expect(unwrap(await owner.client.setAccountDelegation(owner.accountId, rules))).toEqual(rules);
    expect(unwrap(await owner.client.getAccount(owner.accountId)).defaultDelegation).toEqual(rules);
  });
  it('refuses another agent of the account with 403', async () => expectError(await sibling.client.setAccountDelegation(owner.accountId, rules), 403, 'FORBIDDEN'));
  it('hides another account as 404', async () => expectError(await stranger.client.setAccountDelegation(owner.accountId, rules), 404, 'NOT_FOUND'));
  it('needs authentication', async () => expectError(await ex.anon.setAccountDelegation(owner.accountId, rules), 401, 'UNAUTHENTICATED'));
  it('rejects negative limits and unknown rules', async () => {
    const r = await owner.client.setAccountDelegation(owner.accountId, { maxTransactionCents: -1, sometimes: true } as never);
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(!r.ok && r.error.errors.map((e) => e.field).sort()).toEqual(['/body/maxTransactionCents', '/body/sometimes']);
  });
});

describe('POST /v1/agents (D6.4)', () => {
  it('lets the owner agent create an agent with a key, wallet and trust score', async () => {
    const r = await owner.client.createAgent({ name: 'new', agentType: 'platform_managed', description: 'd', capabilities: ['x', 'y'], webhookUrl: 'https://hooks.example.com/a' });
    expect(r.status).toBe(201);
    const agent = unwrap(r);
    expect(agent).toMatchObject({ accountId: owner.accountId, agentType: 'platform_managed', status: 'active', trustScore: 50, webhookUrl: 'https://hooks.example.com/a' });
    expect(agent.apiKey.slice(0, 12)).toBe(agent.keyPrefix);
    expect(unwrap(await owner.client.getWallet(agent.id)).balanceCents).toBe(0);
  });
  it('refuses another agent of the account with 403', async () => expectError(await sibling.client.createAgent({ name: 'x', agentType: 'persistent' }), 403, 'FORBIDDEN'));
  it('needs authentication', async () => expectError(await ex.anon.createAgent({ name: 'x', agentType: 'persistent' }), 401, 'UNAUTHENTICATED'));
  it('requires agentType', async () => {
    const r = await owner.client.createAgent({ name: 'x' } as never);
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(!r.ok && r.error.errors[0]?.field).toBe('/body/agentType');
  });
  it('rejects a signing key that is not a 32-byte Ed25519 key', async () => {
    const r = await owner.client.createAgent({ name: 'x', agentType: 'persistent', signingKeyPublic: 'AAAA' });
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(!r.ok && r.error.errors[0]?.field).toBe('/body/signingKeyPublic');
  });
  it('stops at 20 active agents with 409 LIMIT_REACHED, and counts only active ones', async () => {
    const boss = await ex.signUp();
    const made: string[] = [];
    for (let i = 1; i < 20; i++) made.push(unwrap(await boss.client.createAgent({ name: `a${i}`, agentType: 'persistent' })).id);
    const r = await boss.client.createAgent({ name: 'one too many', agentType: 'persistent' });
    expectError(r, 409, 'LIMIT_REACHED');
    expect(!r.ok && r.error.errors[0]?.details).toEqual({ limit: 20 });
    unwrap(await boss.client.deactivateAgent(made[0]!));
    expect((await boss.client.createAgent({ name: 'fits again', agentType: 'persistent' })).status).toBe(201);
  });
});

describe('GET /v1/agents/{id} (D2.3)', () => {
  it('shows the full representation to agents of the same account', async () => {
    const a = unwrap(await owner.client.getAgent(sibling.agentId));
    expect(Object.keys(a).sort()).toEqual(FULL_FIELDS);
    expect(a).toMatchObject({ name: 'sibling', capabilities: ['translate'], metadata: { tier: 'gold' }, signingKeyPublic: sibling.keys!.publicKey });
    expect(Object.keys(unwrap(await sibling.client.getAgent(owner.agentId))).sort()).toEqual(FULL_FIELDS);
  });
  it('shows only the public profile to another account', async () => {
    const a = unwrap(await stranger.client.getAgent(sibling.agentId));
    expect(Object.keys(a).sort()).toEqual(PUBLIC_FIELDS);
  });
  it('answers an unknown agent with 404', async () => expectError(await owner.client.getAgent(randomUUID()), 404, 'NOT_FOUND'));
  it('needs authentication', async () => expectError(await ex.anon.getAgent(owner.agentId), 401, 'UNAUTHENTICATED'));
});

describe('PATCH /v1/agents/{id} (D2.2)', () => {
  // Agents of their own for the changes: the file's cast stays as it was made.
  it('lets an agent change its own profile', async () => {
    const agent = await ex.addAgent(owner, { capabilities: ['translate'] });
    const a = unwrap(await agent.client.updateAgent(agent.agentId, { description: 'translates', capabilities: ['translate', 'summarize'] }));
    expect(a).toMatchObject({ description: 'translates', capabilities: ['translate', 'summarize'] });
  });
  it('lets the owner agent change another agent of the account', async () => {
    const agent = await ex.addAgent(owner);
    expect(unwrap(await owner.client.updateAgent(agent.agentId, { name: 'renamed' })).name).toBe('renamed');
  });
  it('refuses a non-owner agent changing a sibling with 403', async () => {
    expectError(await sibling.client.updateAgent(owner.agentId, { name: 'hijack' }), 403, 'FORBIDDEN');
  });
  it('refuses another account with 403', async () => expectError(await stranger.client.updateAgent(sibling.agentId, { name: 'x' }), 403, 'FORBIDDEN'));
  it('needs authentication', async () => expectError(await ex.anon.updateAgent(sibling.agentId, { name: 'x' }), 401, 'UNAUTHENTICATED'));
  it('rejects fields that are not editable', async () => {
    const r = await sibling.client.updateAgent(sibling.agentId, { status: 'active', accountId: randomUUID() } as never);
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(!r.ok && r.error.errors.map((e) => e.field).sort()).toEqual(['/body/accountId', '/body/status']);
  });
  it('refuses a private-network webhook URL when the configuration forbids it (D14.5)', async () => {
    const strict = await startTestExchange({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
    try {
      const m = await strict.signUp();
      for (const url of ['http://127.0.0.1/hook', 'http://10.1.2.3/hook', 'http://[::1]/hook', 'http://localhost/hook', 'http://169.254.169.254/latest']) {
        expectError(await m.client.updateAgent(m.agentId, { webhookUrl: url }), 400, 'VALIDATION_ERROR');
      }
      expect(unwrap(await m.client.updateAgent(m.agentId, { webhookUrl: 'https://hooks.example.com/x' })).webhookUrl).toBe('https://hooks.example.com/x');
    } finally {
      await strict.stop();
    }
  });
});

describe('PUT /v1/agents/{id}/delegation (D2.2)', () => {
  it('lets the owner agent set rules of another agent', async () => {
    expect(unwrap(await owner.client.setAgentDelegation(sibling.agentId, { maxTransactionCents: 100 }))).toEqual({ maxTransactionCents: 100 });
    expect(unwrap(await owner.client.getAgent(sibling.agentId))).toMatchObject({ delegation: { maxTransactionCents: 100 } });
  });
  it('lets the owner agent set its own rules', async () => {
    expect(unwrap(await owner.client.setAgentDelegation(owner.agentId, { autoApproveBelow: 50 }))).toEqual({ autoApproveBelow: 50 });
  });
  it('refuses an agent changing its own rules with 403', async () => expectError(await sibling.client.setAgentDelegation(sibling.agentId, {}), 403, 'FORBIDDEN'));
  it('D24.5: answers another account with 404, as if the agent did not exist', async () => expectError(await stranger.client.setAgentDelegation(sibling.agentId, {}), 404, 'NOT_FOUND'));
  it('needs authentication', async () => expectError(await ex.anon.setAgentDelegation(sibling.agentId, {}), 401, 'UNAUTHENTICATED'));
});

describe('DELETE /v1/agents/{id} (D6.5)', () => {
  it('deactivates: the key still authenticates, the agent can no longer start anything new', async () => {
    const victim = await ex.addAgent(owner, { name: 'retiring' });
    const r = await owner.client.deactivateAgent(victim.agentId);
    expect(r.status).toBe(200);
    expect(unwrap(r).status).toBe('deactivated');
    // Its key still authenticates (in-flight work completes, D6.5).
    expect(unwrap(await victim.client.getAgent(victim.agentId)).status).toBe('deactivated');
    // Deactivating twice is harmless.
    expect(unwrap(await owner.client.deactivateAgent(victim.agentId)).status).toBe('deactivated');
  });
  it('refuses to deactivate the owner agent', async () => expectError(await owner.client.deactivateAgent(owner.agentId), 403, 'FORBIDDEN'));
  it('refuses a non-owner agent with 403', async () => expectError(await sibling.client.deactivateAgent(owner.agentId), 403, 'FORBIDDEN'));
  it('refuses another account with 403', async () => expectError(await stranger.client.deactivateAgent(sibling.agentId), 403, 'FORBIDDEN'));
  it('needs authentication', async () => expectError(await ex.anon.deactivateAgent(sibling.agentId), 401, 'UNAUTHENTICATED'));
  it('answers an unknown agent with 404', async () => expectError(await owner.client.deactivateAgent(randomUUID()), 404, 'NOT_FOUND'));
});

describe('POST /admin/v1/agents/{id}/suspend (D15.3)', () => {
  it('lets the operator deactivate any agent, owner agents included, at once', async () => {
    const m = await ex.signUp();
    unwrap(await m.client.getAgent(m.agentId));
    const r = await ex.admin.suspendAgent(m.agentId);
    expect(r.status).toBe(200);
    expect(unwrap(r)).toMatchObject({ id: m.agentId, status: 'deactivated' });
    // The cached principal is refreshed: the agent now reads its own status as deactivated.
    expect(unwrap(await m.client.getAgent(m.agentId)).status).toBe('deactivated');
    expect(unwrap(await ex.admin.suspendAgent(m.agentId)).status).toBe('deactivated');
  });
  it('refuses agents, wrong tokens and no token with 401', async () => {
    expectError(await owner.client.request('POST', `/admin/v1/agents/${sibling.agentId}/suspend`), 401, 'UNAUTHENTICATED');
    expectError(await ex.anon.suspendAgent(sibling.agentId), 401, 'UNAUTHENTICATED');
    expectError(await ex.anon.as({ adminToken: 'wrong-token-wrong-token' }).suspendAgent(sibling.agentId), 401, 'UNAUTHENTICATED');
    expect(unwrap(await owner.client.getAgent(sibling.agentId)).status).toBe('active');
  });
  it('answers an unknown agent with 404', async () => expectError(await ex.admin.suspendAgent(randomUUID()), 404, 'NOT_FOUND'));
});

describe('POST /v1/agents/{id}/keys/rotate (D2.5)', () => {
  it('revokes the old key before answering: the very next request with it gets 401', async () => {
    const m = await ex.signUp();
    // Warm every cache with the old key first.
    unwrap(await m.client.getAgent(m.agentId));
    const rotated = unwrap(await m.client.rotateKey(m.agentId));
    expect(rotated.apiKey).toMatch(/^ae_live_/);
    expect(rotated).toMatchObject({ keyPrefix: rotated.apiKey.slice(0, 12), expiresAt: null });
    expectError(await m.client.getAgent(m.agentId), 401, 'UNAUTHENTICATED');
    const fresh = ex.anon.as({ apiKey: rotated.apiKey });
    expect(unwrap(await fresh.getAgent(m.agentId))).toMatchObject({ keyPrefix: rotated.keyPrefix });
  });
  it('revokes on every gateway replica (shared KV cache)', async () => {
    const replica = await (await import('@aex/gateway')).buildGateway({ bus: ex.bus, config: ex.config, logger: (await import('@aex/platform/testing')).testLogger() });
    const url = await replica.listen({ host: '127.0.0.1', port: 0 });
    try {
      const m = await ex.signUp();
      const viaReplica = new ExchangeClient({ baseUrl: url, apiKey: m.apiKey });
      unwrap(await viaReplica.getAgent(m.agentId));
      unwrap(await m.client.rotateKey(m.agentId));
      expectError(await viaReplica.getAgent(m.agentId), 401, 'UNAUTHENTICATED');
    } finally {
      await replica.close();
    }
  });
  it('lets the owner agent rotate another agent’s key', async () => {
    const worker = await ex.addAgent(owner, { name: 'rotated-by-owner' });
    unwrap(await owner.client.rotateKey(worker.agentId));
    expectError(await worker.client.getAgent(worker.agentId), 401, 'UNAUTHENTICATED');
  });
  it('refuses a non-owner agent rotating a sibling’s key', async () => expectError(await sibling.client.rotateKey(owner.agentId), 403, 'FORBIDDEN'));
  it('D24.5: answers another account with 404, as if the agent did not exist', async () => expectError(await stranger.client.rotateKey(sibling.agentId), 404, 'NOT_FOUND'));
  it('needs authentication', async () => expectError(await ex.anon.rotateKey(sibling.agentId), 401, 'UNAUTHENTICATED'));
  it('limits rotations per agent to the key_rotation group (D4.1)', async () => {
    const m = await ex.signUp();
    let client = m.client;
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      const r = await client.rotateKey(m.agentId);
      statuses.push(r.status);
      if (r.ok) client = ex.anon.as({ apiKey: r.data.apiKey });
    }
    expect(statuses.slice(0, 10).every((s) => s === 200)).toBe(true);
    expect(statuses[10]).toBe(429);
  });
});

describe('D3 request signatures', () => {
  it('accepts a request signed with the registered key', async () => {
    expect((await sibling.client.getAgent(sibling.agentId)).status).toBe(200);
    expect((await sibling.client.updateAgent(sibling.agentId, { description: 'signed write' })).status).toBe(200);
  });
  it('accepts base64url signatures too (D3.2)', async () => {
    const target = `/v1/agents/${sibling.agentId}`;
    const h = signRequest(sibling.keys!.secretKey, { method: 'GET', target });
    const res = await fetch(ex.url + target, { headers: { authorization: `Bearer ${sibling.apiKey}`, 'x-ae-signature': h['x-ae-signature'].replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''), 'x-ae-signature-timestamp': h['x-ae-signature-timestamp'] } });
    expect(res.status).toBe(200);
  });
  it('answers a signature made with another key with 401 SIGNATURE_INVALID', async () => {
    const forger = ex.anon.as({ apiKey: sibling.apiKey, signingSecretKey: generateSigningKey().secretKey });
    expectError(await forger.getAgent(sibling.agentId), 401, 'SIGNATURE_INVALID');
  });
  it('answers a signature over another body with 401 SIGNATURE_INVALID', async () => {
    const target = `/v1/agents/${sibling.agentId}`;
    const h = signRequest(sibling.keys!.secretKey, { method: 'PATCH', target, body: JSON.stringify({ description: 'a' }) });
    const res = await fetch(ex.url + target, { method: 'PATCH', headers: { authorization: `Bearer ${sibling.apiKey}`, 'content-type': 'application/json', ...h }, body: JSON.stringify({ description: 'b' }) });
    expect(res.status).toBe(401);
  });
  it.each([
    ['older than 300 s', -301_000],
    ['more than 300 s ahead', 301_000],
  ])('answers a timestamp %s with 401 SIGNATURE_EXPIRED', async (_label, offset) => {
    const target = `/v1/agents/${sibling.agentId}`;
    const h = signRequest(sibling.keys!.secretKey, { method: 'GET', target, timestamp: new Date(Date.now() + offset).toISOString() });
    const res = await fetch(ex.url + target, { headers: { authorization: `Bearer ${sibling.apiKey}`, ...h } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('SIGNATURE_EXPIRED');
  });
  it('answers a present signature of an agent without a registered key with 401 SIGNATURE_INVALID', async () => {
    const unsigned = ex.anon.as({ apiKey: owner.apiKey, signingSecretKey: generateSigningKey().secretKey });
    expectError(await unsigned.getAgent(owner.agentId), 401, 'SIGNATURE_INVALID');
  });
  it('answers a timestamp without a zone with 401 SIGNATURE_INVALID', async () => {
    const target = `/v1/agents/${sibling.agentId}`;
    const h = signRequest(sibling.keys!.secretKey, { method: 'GET', target, timestamp: '2026-01-01T00:00:00' });
    const res = await fetch(ex.url + target, { headers: { authorization: `Bearer ${sibling.apiKey}`, ...h } });
    expect(res.status).toBe(401);
  });
  it('verifies against a newly registered key at once, and the old key stops working', async () => {
    const m = await ex.addAgent(owner, { name: 'key-changer' });
    unwrap(await m.client.getAgent(m.agentId));
    const next = generateSigningKey();
    unwrap(await m.client.updateAgent(m.agentId, { signingKeyPublic: next.publicKey, signingKeyProof: signingKeyProof(next.secretKey, m.accountId) }));
    expectError(await m.client.getAgent(m.agentId), 401, 'SIGNATURE_INVALID');
    expect((await ex.anon.as({ apiKey: m.apiKey, signingSecretKey: next.secretKey }).getAgent(m.agentId)).status).toBe(200);
  });
});

describe('DID documents (D6.6, D6.7)', () => {
  it('serves the document in the envelope and raw as application/did+json, with key history', async () => {
    const m = await ex.addAgent(owner, { name: 'did-agent' });
    const first = m.keys!.publicKey;
    const second = generateSigningKey();
    unwrap(await m.client.updateAgent(m.agentId, { signingKeyPublic: second.publicKey, signingKeyProof: signingKeyProof(second.secretKey, m.accountId) }));

    const doc = unwrap(await ex.anon.didDocument(m.agentId));
    const did = `did:web:exchange.test%3A8080:agents:${m.agentId}`;
    expect(doc['@context']).toEqual(['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/multikey/v1']);
    expect(doc.id).toBe(did);
    expect(doc.controller).toBe(did);
    expect(doc.verificationMethod).toHaveLength(2);
    const [old, current] = doc.verificationMethod;
    expect(old!.revoked).toBeDefined();
    expect(current!.revoked).toBeUndefined();
    expect(doc.verificationMethod.every((v) => v.type === 'Multikey' && v.controller === did && v.publicKeyMultibase.startsWith('z6Mk'))).toBe(true);
    expect(doc.authentication).toEqual([current!.id]);
    expect(doc.assertionMethod).toEqual([current!.id]);
    expect(doc.service[0]?.serviceEndpoint).toBe(`http://exchange.test:8080/v1/agents/${m.agentId}`);
    expect(first).not.toBe(second.publicKey);

    const res = await fetch(`${ex.url}/agents/${m.agentId}/did.json`);
    expect(res.headers.get('content-type')).toMatch(/^application\/did\+json/);
    expect(await res.json()).toEqual(doc);
  });
  it('answers an unknown agent with 404 on both paths', async () => {
    expectError(await ex.anon.didDocument(randomUUID()), 404, 'NOT_FOUND');
    expect((await fetch(`${ex.url}/agents/${randomUUID()}/did.json`)).status).toBe(404);
  });
  it('has no verification method for an agent without a key', async () => {
    const doc = unwrap(await ex.anon.didDocument(owner.agentId));
    expect(doc.verificationMethod).toEqual([]);
    expect(doc.authentication).toEqual([]);
  });
});
