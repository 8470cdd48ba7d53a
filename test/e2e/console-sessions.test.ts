import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { unwrap } from '@agent-exchange/client';
import { names } from '@aex/contracts';
import { buildGateway } from '@aex/gateway';
import { testLogger } from '@aex/platform/testing';
import { ADMIN_TOKEN, startTestExchange, type Member, type TestExchange } from './harness.js';

// D24.3: a console session is as alive as what it signed in with. The owner agent's key rotated,
// the owner agent suspended, or the operator token changed ends it: the session read and every
// request it authorizes answer 401, clear the cookie, and the session is gone from the KV bucket
// every replica shares.

let ex: TestExchange;

beforeAll(async () => {
  ex = await startTestExchange();
});
afterAll(async () => ex?.stop());

interface Signed {
  cookie: string;
  id: string;
  csrf: string;
}

async function signIn(body: object, base = ex.url): Promise<Signed> {
  const res = await fetch(`${base}/console/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status).toBe(201);
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
  const csrf = ((await res.json()) as { data: { csrfToken: string } }).data.csrfToken;
  return { cookie, id: cookie.slice(cookie.indexOf('=') + 1), csrf };
}

async function withSession(s: Signed, path: string, base = ex.url, method = 'GET') {
  const res = await fetch(base + path, { method, headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } });
  const body = (await res.json()) as { errors: { code: string }[] | null };
  return { status: res.status, code: body.errors?.[0]?.code, setCookie: res.headers.get('set-cookie') };
}

/** Whether the session is still in the shared bucket. */
async function stored(s: Signed): Promise<boolean> {
  const kv = await ex.bus.kv(names.bucket(ex.bus.namespace, 'console_sessions'));
  return (await kv.get(createHash('sha256').update(s.id).digest('hex'))) !== null;
}

/** The session ended: 401, its cookie cleared, and nothing left of it in the bucket. */
async function expectEnded(answer: { status: number; code: string | undefined; setCookie: string | null }, s: Signed): Promise<void> {
  expect(answer).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
  expect(answer.setCookie).toMatch(/^aex_console=; Max-Age=0; Path=\/; HttpOnly; SameSite=Strict/);
  expect(await stored(s)).toBe(false);
}

describe('a console session ends with what it signed in with (D24.3)', () => {
  it('D24.3: the owner agent\'s key rotated: the session read answers 401 and clears the cookie', async () => {
    const owner: Member = await ex.signUp();
    const s = await signIn({ apiKey: owner.apiKey });
    expect((await withSession(s, '/console/api/session')).status).toBe(200);
    unwrap(await owner.client.rotateKey(owner.agentId));
    await expectEnded(await withSession(s, '/console/api/session'), s);
    // Nothing it authorized before works with it now.
    expect((await withSession(s, `/v1/accounts/${owner.accountId}/agents`)).status).toBe(401);
  });

  it('D24.3: the owner agent\'s key rotated: an API request of the session ends it too', async () => {
    const owner: Member = await ex.signUp();
    const s = await signIn({ apiKey: owner.apiKey });
    expect((await withSession(s, `/v1/accounts/${owner.accountId}/agents`)).status).toBe(200);
    unwrap(await owner.client.rotateKey(owner.agentId));
    await expectEnded(await withSession(s, `/v1/accounts/${owner.accountId}/agents`), s);
    expect((await withSession(s, '/console/api/session')).status).toBe(401);
  });

  it('D24.3: the owner agent suspended by the operator: the session read and its requests answer 401', async () => {
    const owner: Member = await ex.signUp();
    const s = await signIn({ apiKey: owner.apiKey });
    const t = await signIn({ apiKey: owner.apiKey });
    unwrap(await ex.admin.suspendAgent(owner.agentId));
    await expectEnded(await withSession(s, '/console/api/session'), s);
    await expectEnded(await withSession(t, `/v1/agents/${owner.agentId}`), t);
  });

  it('D24.3: an owner\'s session unchanged keeps working, and another owner\'s rotation leaves it be', async () => {
    const owner: Member = await ex.signUp();
    const other: Member = await ex.signUp();
    const s = await signIn({ apiKey: owner.apiKey });
    unwrap(await other.client.rotateKey(other.agentId));
    expect((await withSession(s, '/console/api/session')).status).toBe(200);
    expect((await withSession(s, `/v1/accounts/${owner.accountId}/agents`)).status).toBe(200);
    expect(await stored(s)).toBe(true);
  });

  describe('the operator token changed', () => {
    let changed: FastifyInstance;
    let changedUrl: string;

    beforeAll(async () => {
      // A replica started with a new ADMIN_TOKEN (a deployment rolling its secret) on the same bus.
      changed = await buildGateway({ bus: ex.bus, config: { ...ex.config, ADMIN_TOKEN: 'e2e-the-next-admin-token' }, logger: testLogger() });
      changedUrl = await changed.listen({ host: '127.0.0.1', port: 0 });
    });
    afterAll(async () => changed?.close());

    it('D24.3: the operator\'s session read answers 401 and clears the cookie, on every replica', async () => {
      const s = await signIn({ operatorToken: ADMIN_TOKEN });
      expect((await withSession(s, '/admin/v1/figures')).status).toBe(200);
      await expectEnded(await withSession(s, '/console/api/session', changedUrl), s);
      expect((await withSession(s, '/console/api/session')).status).toBe(401);
    });

    it('D24.3: an operator route of the session ends it too', async () => {
      const s = await signIn({ operatorToken: ADMIN_TOKEN });
      await expectEnded(await withSession(s, '/admin/v1/figures', changedUrl), s);
    });
  });
});
