import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKey, unwrap } from '@agent-exchange/client';
import { ADMIN_TOKEN, startTestExchange, uniqueEmail, type Member, type TestExchange } from './harness.js';

// D5 through the gateway: on every route that changes something, a repeat with the same
// Idempotency-Key gets the first answer byte for byte (with Idempotent-Replayed: true), another
// request under the key gets 422, and the effect happens once — recorded by the owning service in its
// own schema (D5.5), not by the gateway.

let ex: TestExchange;
let owner: Member;
let sql: pg.Client;

beforeAll(async () => {
  ex = await startTestExchange({ RATE_LIMIT_WRITE_PER_MIN: '100000', RATE_LIMIT_DISCOVERY_PER_MIN: '100000', TRUST_PROXY: 'true' });
  owner = await ex.signUp();
  unwrap(await owner.client.fund(owner.agentId, 100_000));
  sql = new pg.Client({ connectionString: ex.databaseUrl });
  await sql.connect();
});
afterAll(async () => {
  await sql?.end();
  await ex?.stop();
});

interface Sent {
  status: number;
  text: string;
  replayed: string | null;
}

async function send(method: string, path: string, o: { key?: string; body?: unknown; apiKey?: string; admin?: boolean; ip?: string } = {}): Promise<Sent> {
  const headers: Record<string, string> = {};
  if (o.key) headers['idempotency-key'] = o.key;
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;
  if (o.admin) headers.authorization = `Bearer ${ADMIN_TOKEN}`;
  if (o.ip) headers['x-forwarded-for'] = o.ip;
  const res = await fetch(ex.url + path, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
  return { status: res.status, text: await res.text(), replayed: res.headers.get('idempotent-replayed') };
}

const serviceBody = (name: string) => ({
  name, description: 'A service used to test idempotency keys.', version: '1.0.0', category: 'testing',
  inputSchema: { type: 'object' }, outputSchema: { type: 'object' }, pricing: { model: 'fixed', basePriceCents: 100 }, sla: { maxLatencyMs: 100, timeoutMs: 1000 },
});

/** Each mutating route: a request, and another request under the same key (another body or path). */
interface Case {
  route: string;
  prepare(): Promise<{ method: string; path: string; body?: unknown; other: { path?: string; body?: unknown }; as: { apiKey?: string; admin?: boolean } }>;
}

const cases: Case[] = [
  { route: 'POST /v1/accounts', prepare: async () => ({ method: 'POST', path: '/v1/accounts', body: { accountType: 'individual', email: uniqueEmail(), displayName: 'K', agent: { name: 'a' } }, other: { body: { accountType: 'individual', email: uniqueEmail(), displayName: 'K', agent: { name: 'a' } } }, as: {} }) },
  { route: 'PATCH /v1/accounts/{id}', prepare: async () => ({ method: 'PATCH', path: `/v1/accounts/${owner.accountId}`, body: { displayName: 'Renamed' }, other: { body: { displayName: 'Other' } }, as: { apiKey: owner.apiKey } }) },
  { route: 'PUT /v1/accounts/{id}/delegation', prepare: async () => ({ method: 'PUT', path: `/v1/accounts/${owner.accountId}/delegation`, body: { maxTransactionCents: 500 }, other: { body: { maxTransactionCents: 600 } }, as: { apiKey: owner.apiKey } }) },
  { route: 'POST /v1/agents', prepare: async () => ({ method: 'POST', path: '/v1/agents', body: { name: 'keyed', agentType: 'persistent' }, other: { body: { name: 'keyed-2', agentType: 'persistent' } }, as: { apiKey: owner.apiKey } }) },
  {
    route: 'PATCH /v1/agents/{id}',
    prepare: async () => ({ method: 'PATCH', path: `/v1/agents/${(await ex.addAgent(owner)).agentId}`, body: { description: 'd1' }, other: { body: { description: 'd2' } }, as: { apiKey: owner.apiKey } }),
  },
  {
    route: 'DELETE /v1/agents/{id}',
    prepare: async () => ({ method: 'DELETE', path: `/v1/agents/${(await ex.addAgent(owner)).agentId}`, other: { path: `/v1/agents/${(await ex.addAgent(owner)).agentId}` }, as: { apiKey: owner.apiKey } }),
  },
  {
    route: 'PUT /v1/agents/{id}/delegation',
    prepare: async () => ({ method: 'PUT', path: `/v1/agents/${(await ex.addAgent(owner)).agentId}/delegation`, body: { maxDailySpendCents: 10 }, other: { body: { maxDailySpendCents: 20 } }, as: { apiKey: owner.apiKey } }),
  },
  {
    // Rotated by the owner agent: an agent rotating its own key can no longer authenticate a repeat.
    route: 'POST /v1/agents/{id}/keys/rotate',
    prepare: async () => ({ method: 'POST', path: `/v1/agents/${(await ex.addAgent(owner)).agentId}/keys/rotate`, other: { path: `/v1/agents/${(await ex.addAgent(owner)).agentId}/keys/rotate` }, as: { apiKey: owner.apiKey } }),
  },
  { route: 'POST /v1/services', prepare: async () => ({ method: 'POST', path: '/v1/services', body: serviceBody('keyed service'), other: { body: serviceBody('other service') }, as: { apiKey: owner.apiKey } }) },
  {
    route: 'PATCH /v1/services/{id}',
    prepare: async () => {
      const s = unwrap(await owner.client.createService(serviceBody(`patched ${randomUUID()}`) as never));
      return { method: 'PATCH', path: `/v1/services/${s.id}`, body: { description: 'A changed description.' }, other: { body: { description: 'Another description.' } }, as: { apiKey: owner.apiKey } };
    },
  },
  {
    route: 'DELETE /v1/services/{id}',
    prepare: async () => {
      const [a, b] = [unwrap(await owner.client.createService(serviceBody(`del ${randomUUID()}`) as never)), unwrap(await owner.client.createService(serviceBody(`del ${randomUUID()}`) as never))];
      return { method: 'DELETE', path: `/v1/services/${a.id}`, other: { path: `/v1/services/${b.id}` }, as: { apiKey: owner.apiKey } };
    },
  },
  { route: 'POST /v1/services/discover', prepare: async () => ({ method: 'POST', path: '/v1/services/discover', body: { need: 'testing idempotency' }, other: { body: { need: 'something else' } }, as: { apiKey: owner.apiKey } }) },
  { route: 'POST /v1/wallets/{id}/fund', prepare: async () => ({ method: 'POST', path: `/v1/wallets/${owner.agentId}/fund`, body: { amountCents: 700 }, other: { body: { amountCents: 800 } }, as: { apiKey: owner.apiKey } }) },
  { route: 'POST /v1/wallets/{id}/withdraw', prepare: async () => ({ method: 'POST', path: `/v1/wallets/${owner.agentId}/withdraw`, body: { amountCents: 2500 }, other: { body: { amountCents: 2600 } }, as: { apiKey: owner.apiKey } }) },
  {
    route: 'POST /admin/v1/agents/{id}/suspend',
    prepare: async () => ({ method: 'POST', path: `/admin/v1/agents/${(await ex.addAgent(owner)).agentId}/suspend`, other: { path: `/admin/v1/agents/${(await ex.addAgent(owner)).agentId}/suspend` }, as: { admin: true } }),
  },
];

describe('D5.3 on every route that changes something', () => {
  it.each(cases.map((c) => [c.route, c] as const))('%s: replays the first answer byte for byte; 422 for another request under the key', async (_route, c) => {
    const r = await c.prepare();
    const key = randomUUID();
    const first = await send(r.method, r.path, { key, body: r.body, ...r.as });
    expect(first.status).toBeLessThan(300);
    expect(first.replayed).toBeNull();
    const second = await send(r.method, r.path, { key, body: r.body, ...r.as });
    expect(second).toEqual({ status: first.status, text: first.text, replayed: 'true' });
    const other = await send(r.method, r.other.path ?? r.path, { key, body: r.other.body ?? r.body, ...r.as });
    expect([other.status, JSON.parse(other.text).errors[0].code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
  });
});

describe('D5.5 the effect happens once, recorded at its owner', () => {
  it('funds once for two requests under one key, and the wallet service holds the record', async () => {
    const before = unwrap(await owner.client.getWallet(owner.agentId)).balanceCents;
    const records = async () => (await sql.query('select count(*)::int as n from wallet.idempotency_keys')).rows[0].n as number;
    const recordsBefore = await records();
    const key = randomUUID();
    const answers = await Promise.all([owner.client.fund(owner.agentId, 900, { idempotencyKey: key }), owner.client.fund(owner.agentId, 900, { idempotencyKey: key })]);
    // Sent together: one runs, the other waits for it (409 IN_USE) or replays its answer.
    expect(answers.map((a) => a.status).sort()).toSatisfy((s: number[]) => s[0] === 200 && (s[1] === 200 || s[1] === 409));
    unwrap(await owner.client.fund(owner.agentId, 900, { idempotencyKey: key }));
    expect(unwrap(await owner.client.getWallet(owner.agentId)).balanceCents).toBe(before + 900);
    expect(await records()).toBe(recordsBefore + 1);
  });

  it('creates one agent for two requests under one key', async () => {
    const key = randomUUID();
    const name = `once-${randomUUID()}`;
    const a = unwrap(await owner.client.createAgent({ name, agentType: 'persistent' }, { idempotencyKey: key }));
    const b = unwrap(await owner.client.createAgent({ name, agentType: 'persistent' }, { idempotencyKey: key }));
    expect(b).toEqual(a);
    const { rows } = await sql.query('select count(*)::int as n from identity.agents where name = $1', [name]);
    expect(rows[0].n).toBe(1);
  });

  it('stores a refusal too: a repeat of a refused withdrawal is refused the same way, even once funds exist', async () => {
    const m = await ex.signUp();
    const key = randomUUID();
    const refused = await m.client.withdraw(m.agentId, 5000, { idempotencyKey: key });
    expect(!refused.ok && refused.error.code).toBe('INSUFFICIENT_FUNDS');
    unwrap(await m.client.fund(m.agentId, 10_000));
    const again = await m.client.withdraw(m.agentId, 5000, { idempotencyKey: key });
    expect(!again.ok && [again.status, again.error.code, again.headers?.get('idempotent-replayed')]).toEqual([402, 'INSUFFICIENT_FUNDS', 'true']);
    expect(unwrap(await m.client.getWallet(m.agentId)).balanceCents).toBe(10_000);
  });

  it('keeps keys of different agents apart', async () => {
    const other = await ex.signUp();
    unwrap(await other.client.fund(other.agentId, 1000));
    const key = randomUUID();
    unwrap(await owner.client.fund(owner.agentId, 500, { idempotencyKey: key }));
    const theirs = unwrap(await other.client.fund(other.agentId, 500, { idempotencyKey: key }));
    expect(theirs.newBalanceCents).toBe(1500);
  });

  it('refuses an Idempotency-Key that is not 1–255 printable ASCII characters', async () => {
    for (const key of ['x'.repeat(256), 'with space', 'é']) {
      const r = await send('POST', `/v1/wallets/${owner.agentId}/fund`, { key, body: { amountCents: 600 }, apiKey: owner.apiKey });
      expect([r.status, JSON.parse(r.text).errors[0]]).toEqual([400, expect.objectContaining({ code: 'VALIDATION_ERROR', field: '/headers/idempotency-key' })]);
    }
  });
});

describe('D5.6 a key is bound to one request across the whole exchange', () => {
  it('refuses a key reused on a route of another service with 422, and nothing runs', async () => {
    const key = randomUUID();
    const first = await send('POST', '/v1/services', { key, body: serviceBody(`bound ${key}`), apiKey: owner.apiKey });
    expect(first.status).toBe(201);
    const before = unwrap(await owner.client.getWallet(owner.agentId)).balanceCents;
    const reused = await send('POST', `/v1/wallets/${owner.agentId}/fund`, { key, body: { amountCents: 900 }, apiKey: owner.apiKey });
    expect(reused.status).toBe(422);
    expect(JSON.parse(reused.text)).toMatchObject({ data: null, errors: [{ code: 'IDEMPOTENCY_KEY_REUSED', field: '/headers/idempotency-key' }] });
    expect(unwrap(await owner.client.getWallet(owner.agentId)).balanceCents).toBe(before);
    // The first request, repeated, is still answered from its owner's record.
    const again = await send('POST', '/v1/services', { key, body: serviceBody(`bound ${key}`), apiKey: owner.apiKey });
    expect([again.status, again.replayed, again.text]).toEqual([201, 'true', first.text]);
  });

  it('refuses the other request whichever of the two came first, and whichever services own them', async () => {
    const key = randomUUID();
    const agent = await ex.addAgent(owner);
    expect((await send('PATCH', `/v1/agents/${agent.agentId}`, { key, body: { description: 'first' }, apiKey: owner.apiKey })).status).toBe(200);
    expect((await send('POST', '/v1/services/discover', { key, body: { need: 'anything' }, apiKey: owner.apiKey })).status).toBe(422);
    expect((await send('PUT', `/v1/accounts/${owner.accountId}/delegation`, { key, body: { maxTransactionCents: 700 }, apiKey: owner.apiKey })).status).toBe(422);
  });

  it('does not bind a key to a request the gateway refused: the corrected request runs under it', async () => {
    const key = randomUUID();
    const invalid = await send('POST', `/v1/wallets/${owner.agentId}/fund`, { key, body: { amountCents: 'lots' }, apiKey: owner.apiKey });
    expect(invalid.status).toBe(400);
    const corrected = await send('POST', `/v1/wallets/${owner.agentId}/fund`, { key, body: { amountCents: 600 }, apiKey: owner.apiKey });
    expect([corrected.status, corrected.replayed]).toEqual([200, null]);
  });

  it('keeps the same key of another agent apart', async () => {
    const key = randomUUID();
    const other = await ex.signUp();
    expect((await send('POST', '/v1/services', { key, body: serviceBody(`mine ${key}`), apiKey: owner.apiKey })).status).toBe(201);
    expect((await send('POST', `/v1/wallets/${other.agentId}/fund`, { key, body: { amountCents: 600 }, apiKey: other.apiKey })).status).toBe(200);
  });
});

describe('sign-up replays and credentials', () => {
  it('gives the stored answer, API key included, only to a repeat from the same client address', async () => {
    const body = { accountType: 'individual', email: uniqueEmail(), displayName: 'Replay', agent: { name: 'a' } };
    const key = randomUUID();
    const first = await send('POST', '/v1/accounts', { key, body, ip: '198.51.100.10' });
    expect(first.status).toBe(201);
    const apiKey = JSON.parse(first.text).data.apiKey as string;
    const same = await send('POST', '/v1/accounts', { key, body, ip: '198.51.100.10' });
    expect(same).toEqual({ status: 201, text: first.text, replayed: 'true' });
    // Someone else repeating key and body gets no credentials: the request runs as theirs, and the
    // email is taken.
    const elsewhere = await send('POST', '/v1/accounts', { key, body, ip: '203.0.113.77' });
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.text).not.toContain(apiKey);
    expect(JSON.parse(elsewhere.text).errors[0].code).toBe('CONFLICT');
  });

  it('never stores the API key readably: the identity record is sealed', async () => {
    const key = randomUUID();
    const created = unwrap(await ex.anon.createAccount({ accountType: 'individual', email: uniqueEmail(), displayName: 'Sealed', agent: { name: 'a' } }, { idempotencyKey: key }));
    const { rows } = await sql.query<{ reply: Buffer }>('select reply from identity.idempotency_keys');
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.some((r) => r.reply.toString('latin1').includes(created.apiKey))).toBe(false);
    expect(rows.some((r) => r.reply.toString('latin1').includes(created.id))).toBe(false);
  });

  it('takes a signing key with the created agent exactly once', async () => {
    const keys = generateSigningKey();
    const key = randomUUID();
    const a = unwrap(await owner.client.createAgent({ name: 'signer', agentType: 'persistent', signingKeyPublic: keys.publicKey }, { idempotencyKey: key }));
    const b = unwrap(await owner.client.createAgent({ name: 'signer', agentType: 'persistent', signingKeyPublic: keys.publicKey }, { idempotencyKey: key }));
    expect(b.id).toBe(a.id);
  });
});
