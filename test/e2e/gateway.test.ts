import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { ERROR_STATUS } from '@aex/contracts';
import { startTestExchange, type Member, type TestExchange } from './harness.js';

// The gateway's own behaviour: envelope and errors (D1), request ids, JSON only, body limit,
// protocol (D15.1), health, OpenAPI, rate limits (D4) and idempotency (D5).
let ex: TestExchange;
let owner: Member;

beforeAll(async () => {
  ex = await startTestExchange({ RATE_LIMIT_READ_PER_MIN: '5', BODY_LIMIT_BYTES: '4096' });
  owner = await ex.signUp();
});
afterAll(async () => ex?.stop());

const raw = (path: string, init: RequestInit = {}) => fetch(ex.url + path, init);
const json = async (res: Response) => (await res.json()) as { data: unknown; meta: { requestId: string; timestamp: string }; errors: { code: string; message: string; field?: string; details?: Record<string, unknown> }[] | null };

describe('D15.1 protocol', () => {
  it('describes name, version, features, limits from configuration and fee tiers', async () => {
    const p = await ex.anon.protocol();
    expect(p.ok && p.status).toBe(200);
    if (!p.ok) return;
    expect(p.data.name).toBe('agent-exchange');
    expect(p.data.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(p.data.features).toEqual(expect.arrayContaining(['disputes', 'discovery', 'child_agents', 'did_web', 'idempotency', 'request_signatures']));
    expect(p.data.limits.maxAgentsPerAccount).toBe(20);
    expect(p.data.platformFees.tiers).toEqual([
      { upToCents: 1_000_000, feePercent: 5 },
      { upToCents: 10_000_000, feePercent: 3 },
      { aboveCents: 10_000_000, feePercent: 1.5 },
    ]);
  });
});

describe('D1 envelope, request ids and error model', () => {
  it('echoes a UUID X-Request-Id in meta and in the header (D1.2)', async () => {
    const id = randomUUID();
    const res = await raw('/v1/protocol', { headers: { 'x-request-id': id } });
    expect(res.headers.get('x-request-id')).toBe(id);
    expect((await json(res)).meta.requestId).toBe(id);
  });

  it('replaces a request id that is not a UUID with a new UUIDv4 (D1.2)', async () => {
    const res = await raw('/v1/protocol', { headers: { 'x-request-id': 'not-a-uuid' } });
    const body = await json(res);
    expect(body.meta.requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(res.headers.get('x-request-id')).toBe(body.meta.requestId);
  });

  it('answers an unknown path with 404 NOT_FOUND in the envelope', async () => {
    const res = await raw('/v1/nothing-here');
    const body = await json(res);
    expect(res.status).toBe(404);
    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.code).toBe('NOT_FOUND');
  });

  it('answers a known path with another method with 405 METHOD_NOT_ALLOWED', async () => {
    const res = await raw('/v1/protocol', { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect((await json(res)).errors?.[0]?.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('rejects unparseable JSON with 400 INVALID_JSON', async () => {
    const res = await raw('/v1/accounts', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"accountType":' });
    expect(res.status).toBe(400);
    expect((await json(res)).errors?.[0]?.code).toBe('INVALID_JSON');
  });

  it('rejects a body that is not JSON with 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const res = await raw('/v1/accounts', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect(res.status).toBe(415);
    expect((await json(res)).errors?.[0]?.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('rejects a body over the configured limit with 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await raw('/v1/accounts', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pad: 'x'.repeat(5000) }) });
    expect(res.status).toBe(413);
    expect((await json(res)).errors?.[0]?.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('answers 413 to a large upload only after reading it, so the client gets the answer, not a reset', async () => {
    const body = JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024) });
    const upload = () => new Promise<{ status: number | undefined; code: string | undefined }>((resolve, reject) => {
      const req = http.request(`${ex.url}/v1/accounts`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode, code: (JSON.parse(text) as { errors: { code: string }[] }).errors[0]?.code }));
      });
      req.on('error', reject);
      req.end(body);
    });
    for (let i = 0; i < 10; i++) expect(await upload()).toEqual({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
  });

  it('drops __proto__ keys instead of polluting prototypes, then validates the rest', async () => {
    const res = await raw('/v1/accounts', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"__proto__":{"isAdmin":true}}' });
    expect(res.status).toBe(400);
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect((await json(res)).errors?.map((e) => e.code)).toContain('VALIDATION_ERROR');
  });

  it('lists one VALIDATION_ERROR entry per violation with JSON pointers (D1.3)', async () => {
    const r = await ex.anon.createAccount({ accountType: 'nope', displayName: '', agent: {}, extra: 1 } as never);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.status).toBe(400);
    const fields = r.error.errors.map((e) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['/body/accountType', '/body/email', '/body/displayName', '/body/agent/name', '/body/extra']));
    expect(r.error.errors.every((e) => e.code === 'VALIDATION_ERROR' && e.message.length > 0)).toBe(true);
  });

  it('rejects a malformed path parameter with 400 naming the field', async () => {
    const r = await owner.client.getAgent('not-a-uuid');
    expect(!r.ok && r.error.code).toBe('VALIDATION_ERROR');
    expect(!r.ok && r.error.errors[0]?.field).toBe('/path/agentId');
  });

  it('rejects a query parameter out of bounds with 400 naming the field', async () => {
    const r = await owner.client.ledger(owner.agentId, { limit: 1000 });
    expect(!r.ok && r.error.errors[0]?.field).toBe('/query/limit');
  });

  it('uses only codes of D1.4 with their statuses', async () => {
    const res = await raw('/v1/accounts/' + randomUUID());
    const body = await json(res);
    const code = body.errors?.[0]?.code as keyof typeof ERROR_STATUS;
    expect(code).toBe('UNAUTHENTICATED');
    expect(res.status).toBe(ERROR_STATUS[code]);
  });
});

describe('D2 authentication', () => {
  it.each([
    ['no Authorization header', undefined],
    ['a malformed header', 'Token abc'],
    ['an unknown key', `Bearer ae_live_${'A'.repeat(43)}`],
    ['a key of the wrong shape', 'Bearer hello'],
  ])('answers 401 UNAUTHENTICATED for %s', async (_label, authorization) => {
    const res = await raw(`/v1/agents/${owner.agentId}`, { headers: authorization ? { authorization } : {} });
    expect(res.status).toBe(401);
    expect((await json(res)).errors?.[0]?.code).toBe('UNAUTHENTICATED');
  });
});

describe('health and OpenAPI', () => {
  it('reports liveness and readiness', async () => {
    expect((await raw('/healthz')).status).toBe(200);
    const ready = await raw('/readyz');
    expect(ready.status).toBe(200);
    const checks = ['bus', 'identity.database', 'wallet.database', 'catalog.database', 'catalog.discovery-meaning', 'transactions.database', 'webhooks.database'].map((name) => ({ name, ok: true }));
    expect((await json(ready)).data).toEqual({ status: 'ready', bus: 'jetstream', checks });
  });

  it('serves an OpenAPI 3.1 document built from the schemas the routes validate with', async () => {
    const res = await raw('/v1/openapi.json');
    type Schema = { $ref?: string; required?: string[]; additionalProperties?: boolean; properties?: Record<string, Schema> };
    const doc = (await res.json()) as {
      openapi: string;
      servers: { url: string }[];
      components: { schemas: Record<string, Schema> };
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Schema }> }; responses: Record<string, { content?: Record<string, { schema: Schema }> }> }>>;
    };
    const resolve = (s: Schema | undefined): Schema | undefined => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()!] : s);
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.servers).toEqual([expect.objectContaining({ url: ex.config.PUBLIC_BASE_URL })]);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/accounts', '/v1/agents/{agentId}', '/v1/wallets/{agentId}/fund', '/admin/v1/ledger/check']));
    const create = resolve(doc.paths['/v1/accounts']?.post?.requestBody?.content['application/json']?.schema);
    expect(create?.required).toEqual(expect.arrayContaining(['accountType', 'email', 'displayName', 'agent']));
    expect(create?.additionalProperties).toBe(false);
    const protocol = doc.paths['/v1/protocol']?.get?.responses['200']?.content?.['application/json']?.schema;
    expect(resolve(protocol?.properties?.data)?.required).toEqual(expect.arrayContaining(['name', 'version', 'features', 'limits', 'platformFees']));
  });
});

describe('D4 rate limits', () => {
  it('limits reads per agent with RateLimit headers, then 429 with Retry-After', async () => {
    const member = await ex.signUp();
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 6; i++) {
      last = await raw(`/v1/agents/${member.agentId}`, { headers: { authorization: `Bearer ${member.apiKey}` } });
      statuses.push(last.status);
      if (i === 0) {
        expect(last.headers.get('ratelimit-limit')).toBe('5');
        expect(last.headers.get('ratelimit-remaining')).toBe('4');
        expect(Number(last.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(0);
      }
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await json(last!)).errors?.[0]?.code).toBe('RATE_LIMITED');
    // Writes are another bucket (D4.1).
    expect((await member.client.updateAgent(member.agentId, { description: 'still allowed' })).status).toBe(200);
  });

  it('keeps one bucket per agent: another agent is not limited by the first', async () => {
    const a = await ex.signUp();
    const b = await ex.signUp();
    for (let i = 0; i < 5; i++) await a.client.getAgent(a.agentId);
    expect((await a.client.getAgent(a.agentId)).status).toBe(429);
    expect((await b.client.getAgent(b.agentId)).status).toBe(200);
  });
});

describe('D4.2 limits per client IP on unauthenticated routes', () => {
  it('limits sign-ups and public reads per IP, each group on its own', async () => {
    const small = await startTestExchange({ RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP: '2', RATE_LIMIT_PUBLIC_PER_MIN_PER_IP: '3' });
    try {
      const signUps = [];
      for (let i = 0; i < 3; i++) signUps.push(await small.anon.createAccount({ accountType: 'individual', email: `ip-${randomUUID()}@example.com`, displayName: 'x', agent: { name: 'a' } }));
      expect(signUps.map((r) => r.status)).toEqual([201, 201, 429]);
      const reads: number[] = [];
      for (let i = 0; i < 4; i++) reads.push((await small.anon.protocol()).status);
      expect(reads).toEqual([200, 200, 200, 429]);
      // DID documents share the public group.
      expect((await fetch(`${small.url}/agents/${randomUUID()}/did.json`)).status).toBe(429);
      // Without TRUST_PROXY a client cannot pick another IP with X-Forwarded-For.
      expect((await fetch(`${small.url}/v1/protocol`, { headers: { 'x-forwarded-for': '203.0.113.9' } })).status).toBe(429);
      // Authenticated routes are limited per agent, not per IP.
      const first = unwrap(signUps[0]!);
      expect((await small.anon.as({ apiKey: first.apiKey }).getAgent(first.agent.id)).status).toBe(200);
    } finally {
      await small.stop();
    }
  });
});

describe('D5 idempotency', () => {
  it('replays the stored answer byte for byte with Idempotent-Replayed', async () => {
    const owner = await ex.signUp();
    const key = randomUUID();
    const init = { method: 'POST', headers: { authorization: `Bearer ${owner.apiKey}`, 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify({ amountCents: 500 }) };
    const first = await raw(`/v1/wallets/${owner.agentId}/fund`, init);
    const firstBody = await first.text();
    const again = await raw(`/v1/wallets/${owner.agentId}/fund`, init);
    expect(again.status).toBe(first.status);
    expect(await again.text()).toBe(firstBody);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // Funded once.
    const wallet = await owner.client.getWallet(owner.agentId);
    expect(wallet.ok && wallet.data.balanceCents).toBe(500);
  });

  it('refuses the same key for a different request with 422 IDEMPOTENCY_KEY_REUSED', async () => {
    const key = randomUUID();
    expect((await owner.client.fund(owner.agentId, 600, { idempotencyKey: key })).status).toBe(200);
    const r = await owner.client.fund(owner.agentId, 700, { idempotencyKey: key });
    expect(!r.ok && [r.status, r.error.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
  });

  it('scopes keys to the agent: another agent may use the same key', async () => {
    const other = await ex.signUp();
    const key = randomUUID();
    expect((await owner.client.fund(owner.agentId, 500, { idempotencyKey: key })).ok).toBe(true);
    const r = await other.client.fund(other.agentId, 500, { idempotencyKey: key });
    expect(r.ok && r.headers.get('idempotent-replayed')).toBeNull();
  });

  it('stores 4xx answers of handlers too (D5.4)', async () => {
    const key = randomUUID();
    const first = await owner.client.withdraw(owner.agentId, 10_000_000, { idempotencyKey: key });
    expect(first.status).toBe(402);
    const again = await owner.client.withdraw(owner.agentId, 10_000_000, { idempotencyKey: key });
    expect(again.status).toBe(402);
    expect(again.headers?.get('idempotent-replayed')).toBe('true');
  });

  it('does not store 401: the key stays free for the authenticated retry', async () => {
    const key = randomUUID();
    const body = JSON.stringify({ amountCents: 500 });
    const bad = await raw(`/v1/wallets/${owner.agentId}/fund`, { method: 'POST', headers: { authorization: 'Bearer nope', 'content-type': 'application/json', 'idempotency-key': key }, body });
    expect(bad.status).toBe(401);
    const good = await raw(`/v1/wallets/${owner.agentId}/fund`, { method: 'POST', headers: { authorization: `Bearer ${owner.apiKey}`, 'content-type': 'application/json', 'idempotency-key': key }, body });
    expect(good.status).toBe(200);
    expect(good.headers.get('idempotent-replayed')).toBeNull();
  });

  it('rejects a key that is not 1–255 printable ASCII characters', async () => {
    const r = await owner.client.fund(owner.agentId, 500, { idempotencyKey: 'x'.repeat(256) });
    expect(!r.ok && r.error.code).toBe('VALIDATION_ERROR');
  });

  it('makes POST /v1/accounts idempotent in a global scope', async () => {
    const key = randomUUID();
    const body = { accountType: 'individual' as const, email: `idem-${randomUUID()}@example.com`, displayName: 'Idem', agent: { name: 'a' } };
    const first = await ex.anon.createAccount(body, { idempotencyKey: key });
    const again = await ex.anon.createAccount(body, { idempotencyKey: key });
    expect(first.ok && again.ok && again.data.id === first.data.id).toBe(true);
    expect(again.headers?.get('idempotent-replayed')).toBe('true');
  });
});
