import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildGateway } from '@aex/gateway';
import { testLogger } from '@aex/platform/testing';
import { ADMIN_TOKEN, startTestExchange, type Member, type TestExchange } from './harness.js';

// D24.1: every check of a bearer secret that fails — API keys, the operator token, the metrics
// token, the console's sign-in — takes from one failed-authentication limit per client address,
// shared by the gateway replicas. Past it, every such check from that address answers 429, a right
// secret included, until the limit refills. Each test guesses from an address of its own
// (X-Forwarded-For with TRUST_PROXY), so their budgets are apart.

/** Failed checks an address may make per minute here: one token back every two seconds. */
const LIMIT = 30;
const METRICS_TOKEN = 'e2e-metrics-token-not-secret';

let ex: TestExchange;
let second: FastifyInstance;
let secondUrl: string;
let owner: Member;
let lastAddress = 0;
/** An address of the test's own (documentation range, RFC 5737). */
const address = () => `203.0.113.${++lastAddress}`;

beforeAll(async () => {
  ex = await startTestExchange({ RATE_LIMIT_AUTH_FAILURES_PER_MIN_PER_IP: String(LIMIT), TRUST_PROXY: 'true', METRICS_TOKEN });
  // A second replica on the same bus: the limit is the replicas' together.
  second = await buildGateway({ bus: ex.bus, config: ex.config, logger: testLogger() });
  secondUrl = await second.listen({ host: '127.0.0.1', port: 0 });
  owner = await ex.signUp();
});
afterAll(async () => {
  await second?.close();
  await ex?.stop();
});

interface Answer {
  status: number;
  code: string | undefined;
  retryAfter: string | null;
}

async function call(from: string, path: string, opts: { bearer?: string; body?: object; base?: string } = {}): Promise<Answer> {
  const res = await fetch((opts.base ?? ex.url) + path, {
    method: opts.body ? 'POST' : 'GET',
    headers: { 'x-forwarded-for': from, ...(opts.bearer !== undefined ? { authorization: `Bearer ${opts.bearer}` } : {}), ...(opts.body ? { 'content-type': 'application/json' } : {}) },
    body: opts.body ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  const code = res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as { errors: { code: string }[] | null }).errors?.[0]?.code : undefined;
  return { status: res.status, code, retryAfter: res.headers.get('retry-after') };
}

const wrongKey = () => `ae_live_${randomBytes(32).toString('base64url')}`;
const wrongToken = () => randomBytes(16).toString('hex');
const operator = (from: string, token: string, base?: string) => call(from, '/admin/v1/figures', { bearer: token, ...(base ? { base } : {}) });
const metrics = (from: string, token: string) => call(from, '/metrics', { bearer: token });
const agentRead = (from: string, key: string, base?: string) => call(from, `/v1/agents/${owner.agentId}`, { bearer: key, ...(base ? { base } : {}) });
const signIn = (from: string, body: object) => call(from, '/console/api/session', { body });

/** `n` failed checks made one after the other (each answered before the next is sent). */
async function fail(n: number, attempt: () => Promise<Answer>): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let i = 0; i < n; i++) answers.push(await attempt());
  return answers;
}

/**
 * Failed checks one after the other until the first 429 (a slow machine may see a token come back
 * meanwhile, so a few more than the limit may be 401): the statuses before it, and the 429.
 */
async function untilLimited(attempt: () => Promise<Answer>): Promise<{ before: number[]; limited: Answer }> {
  const before: number[] = [];
  for (let i = 0; i < LIMIT + 10; i++) {
    const a = await attempt();
    if (a.status === 429) {
      expectLimited(a);
      return { before, limited: a };
    }
    before.push(a.status);
  }
  throw new Error(`no 429 after ${before.length} failed checks`);
}

/** The address was refused after at least `LIMIT` failed checks, each answered 401 until then. */
function expectLimitReached(before: number[]): void {
  expect(before.length).toBeGreaterThanOrEqual(LIMIT);
  expect(new Set(before)).toEqual(new Set([401]));
}

function expectLimited(a: Answer): void {
  expect(a).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
  expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
}

describe('one failed-authentication limit per address (D24.1)', () => {
  it('D24.1: wrong operator tokens are answered 401 up to the limit, then 429 — the right token too, until the limit refills', async () => {
    const from = address();
    const { before, limited } = await untilLimited(() => operator(from, wrongToken()));
    expectLimitReached(before);
    // Past the limit a right token is not told from a wrong one.
    expectLimited(await operator(from, ADMIN_TOKEN));
    // Another address is not affected.
    expect((await operator(address(), ADMIN_TOKEN)).status).toBe(200);
    // Once a token has come back, the right token works again.
    await new Promise((r) => setTimeout(r, Number(limited.retryAfter) * 1000 + 100));
    expect((await operator(from, ADMIN_TOKEN)).status).toBe(200);
  });

  it('D24.1: wrong metrics tokens take from the limit', async () => {
    const from = address();
    expectLimitReached((await untilLimited(() => metrics(from, wrongToken()))).before);
    expectLimited(await metrics(from, METRICS_TOKEN));
    expect((await metrics(address(), METRICS_TOKEN)).status).toBe(200);
  });

  it('D24.1: wrong API keys take from the limit; past it, a right key (held in memory) is refused too', async () => {
    const from = address();
    // The key is certainly in this replica's memory: its checks cost no lookup.
    expect((await agentRead(address(), owner.apiKey)).status).toBe(200);
    expectLimitReached((await untilLimited(() => agentRead(from, wrongKey()))).before);
    expectLimited(await agentRead(from, owner.apiKey));
    expect((await agentRead(address(), owner.apiKey)).status).toBe(200);
  });

  it('D24.1: a malformed key is a failed check too; a request without any secret is not', async () => {
    const from = address();
    expectLimitReached((await untilLimited(() => agentRead(from, `not-a-key-${wrongToken()}`))).before);
    expectLimited(await agentRead(from, owner.apiKey));
    const quiet = address();
    expect((await fail(LIMIT + 5, () => call(quiet, `/v1/agents/${owner.agentId}`))).map((a) => a.status)).toEqual(Array(LIMIT + 5).fill(401));
    expect((await agentRead(quiet, owner.apiKey)).status).toBe(200);
  });

  it('D24.1: the console sign-in takes from the limit, with a wrong key or a wrong operator token', async () => {
    const from = address();
    let i = 0;
    expectLimitReached((await untilLimited(() => signIn(from, i++ % 2 === 0 ? { apiKey: wrongKey() } : { operatorToken: wrongToken() }))).before);
    expectLimited(await signIn(from, { operatorToken: ADMIN_TOKEN }));
    expectLimited(await signIn(from, { apiKey: owner.apiKey }));
    expect((await signIn(address(), { apiKey: owner.apiKey })).status).toBe(201);
  });

  it('D24.1: the operator token, the metrics token, API keys and the sign-in share one budget', async () => {
    const from = address();
    const kinds = [() => operator(from, wrongToken()), () => metrics(from, wrongToken()), () => agentRead(from, wrongKey()), () => signIn(from, { operatorToken: wrongToken() })];
    let i = 0;
    expectLimitReached((await untilLimited(() => kinds[i++ % kinds.length]!())).before);
    for (const kind of kinds) expectLimited(await kind());
    expectLimited(await operator(from, ADMIN_TOKEN));
    expectLimited(await metrics(from, METRICS_TOKEN));
    expectLimited(await agentRead(from, owner.apiKey));
  });

  it('D24.1: the limit is the replicas\' together: guesses on one, a right secret refused on the other', async () => {
    const from = address();
    // Both replicas hold the key in memory.
    expect((await agentRead(address(), owner.apiKey, secondUrl)).status).toBe(200);
    expect((await agentRead(address(), owner.apiKey)).status).toBe(200);
    // Half the budget spent on the second replica counts on the first.
    const half = LIMIT / 2;
    expect((await fail(half, () => operator(from, wrongToken(), secondUrl))).map((a) => a.status)).toEqual(Array(half).fill(401));
    const { before } = await untilLimited(() => operator(from, wrongToken()));
    expect(before.length).toBeLessThan(LIMIT - half + 5);
    // The replica that refused told the other, whose memory of the key does not let it through.
    await expect.poll(async () => (await agentRead(from, owner.apiKey, secondUrl)).status, { timeout: 2_000 }).toBe(429);
    expectLimited(await operator(from, ADMIN_TOKEN, secondUrl));
    expectLimited(await agentRead(from, owner.apiKey));
  });
});
