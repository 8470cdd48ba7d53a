import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { ERROR_STATUS } from '@aex/contracts';
import { routes } from '@aex/gateway';
import { startTestExchange, type Member, type TestExchange } from './harness.js';

// Hostile input at volume: at least 10,000 generated bad requests across every route — JSON from a
// grammar, odd Unicode, huge numbers, deep nesting, big bodies, broken headers, malformed HTTP —
// must give no 5xx, an envelope on every answer, and no change to the ledger. The generator is
// seeded (the seed is printed) so a failure can be replayed.

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000_007);
const REQUESTS = 10_000;

function mulberry32(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const chance = (p: number) => rnd() < p;
const int = (n: number) => Math.floor(rnd() * n);

const ODD_STRINGS = [
  '', ' ', 'a', 'Ω≈ç√', '😀🚀', 'e\u0301', '\u200b\u200d\ufeff', '\u202eRTL', 'ﷺ', '\uffff', '\u{10ffff}', 'a'.repeat(5000), '../../etc/passwd',
  '<script>alert(1)</script>', "' or 1=1 --", '%00', '${jndi:ldap://x}', '\\', '"', 'null', '0', '-1', 'true', '1e308', 'NaN',
];
/** JSON text fragments (not values): escapes JSON.stringify would never write. */
const RAW_STRINGS = ['"\\u0000"', '"a\\u0000b"', '"\\ud800"', '"\\udfff"', '"\\udbff\\u0041"', '"\\u0041\\udc00"'];
const RAW_NUMBERS = ['1e308', '-1e308', '1e400', '-0', '0.0000000000000000001', '92233720368547758070', '9007199254740993', '2147483648', '-2147483649', '1.5', '1E2'];

/** A JSON value from a small grammar, as text (so it can hold what JSON.stringify cannot make). */
function jsonText(depth: number, fields: readonly string[]): string {
  const r = rnd();
  if (depth <= 0 || r < 0.35) {
    const leaf = rnd();
    if (leaf < 0.25) return JSON.stringify(pick(ODD_STRINGS));
    if (leaf < 0.4) return pick(RAW_STRINGS);
    if (leaf < 0.6) return pick(RAW_NUMBERS);
    if (leaf < 0.75) return String(int(2_000_000) - 1000);
    return pick(['true', 'false', 'null', '[]', '{}']);
  }
  if (r < 0.55) return `[${Array.from({ length: int(4) }, () => jsonText(depth - 1, fields)).join(',')}]`;
  const n = 1 + int(4);
  const keys = Array.from({ length: n }, () => (chance(0.7) && fields.length ? pick(fields) : pick(['x', 'metadata', '__proto__', 'constructor', 'a\\u0000', '\\ud800', ''])));
  return `{${keys.map((k) => `${JSON.stringify(k).replace(/\\\\u/g, '\\u')}:${jsonText(depth - 1, fields)}`).join(',')}}`;
}

const deep = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;

let ex: TestExchange;
let owner: Member;
let other: Member;
let serviceId: string;
let sql: pg.Client;

beforeAll(async () => {
  const unlimited = '100000000';
  ex = await startTestExchange({
    RATE_LIMIT_READ_PER_MIN: unlimited, RATE_LIMIT_WRITE_PER_MIN: unlimited, RATE_LIMIT_DISCOVERY_PER_MIN: unlimited, RATE_LIMIT_KEY_ROTATION_PER_MIN: unlimited,
    RATE_LIMIT_PUBLIC_PER_MIN_PER_IP: unlimited, RATE_LIMIT_AUTH_FAILURES_PER_MIN_PER_IP: unlimited,
  });
  owner = await ex.signUp();
  other = await ex.signUp();
  unwrap(await owner.client.fund(owner.agentId, 50_000));
  serviceId = unwrap(await owner.client.createService({
    name: 'Fuzz target', description: 'A service the fuzzer aims at.', version: '1.0.0', category: 'fuzz',
    inputSchema: { type: 'object', properties: { text: { type: 'string', maxLength: 100 } } }, outputSchema: { type: 'object' },
    pricing: { model: 'fixed', basePriceCents: 100 }, sla: { maxLatencyMs: 100, timeoutMs: 1000 },
  })).id;
  sql = new pg.Client({ connectionString: ex.databaseUrl });
  await sql.connect();
});
afterAll(async () => {
  await sql?.end();
  await ex?.stop();
});

interface Attempt {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

const MONEY = /\/wallets\/:agentId\/(fund|withdraw)$/;

function pathFor(url: string, money: boolean): string {
  return url.replace(/:([A-Za-z]+)/g, (_m, name: string) => {
    if (money) return owner.agentId;
    const r = rnd();
    if (r < 0.3) return pick([other.agentId, randomUUID(), other.accountId, serviceId]);
    if (r < 0.4 && name !== 'agentId' && name !== 'accountId') return name === 'serviceId' ? serviceId : randomUUID();
    if (r < 0.5 && !url.includes('keys/rotate') && !url.includes('suspend') && name === 'agentId' && !url.endsWith(':agentId')) return owner.agentId;
    return pick(['%00', '%ED%A0%80', '%zz', 'a'.repeat(300), '..%2F..', '00000000-0000-0000-0000-000000000000', 'null', '%F0%9F%98%80', '-1', '1e308', encodeURIComponent(pick(ODD_STRINGS)) || 'x']);
  });
}

function queryFor(fields: string[]): string {
  if (!chance(0.6)) return '';
  const names = [...fields, 'limit', 'offset', 'x', '__proto__', 'a%00'];
  const parts = Array.from({ length: 1 + int(4) }, () => `${pick(names)}=${pick(['1e308', '99999999999999999999', '-1', '0x10', '%00', '%ED%BF%BF', '%zz', '', 'true', ' 12', '12', encodeURIComponent(pick(ODD_STRINGS))])}`);
  return `?${parts.join('&')}`;
}

/** Amounts neither route accepts as a movement: out of range, the wrong type, or beyond the balance. */
const BAD_AMOUNTS = {
  fund: ['0', '-1', '499', '1000001', '1e308', '1.5', '"600"', 'null', '[]', '92233720368547758070', '10000000'],
  withdraw: ['0', '-1', '499', '2499', '1e308', '1.5', '"6000"', 'null', '[]', '92233720368547758070', '10000000', '9007199254740991'],
};

function bodyFor(fields: string[], money: 'fund' | 'withdraw' | null): string | Buffer | undefined {
  const r = rnd();
  if (money) {
    // Never a request that could move money: an amount out of range, of the wrong type, or company.
    const amount = pick(BAD_AMOUNTS[money]);
    const extra = chance(0.5) ? `,${JSON.stringify(pick(['x', 'amountCents', 'metadata']))}:${jsonText(2, fields)}` : '';
    // Random JSON without the amount's name: random values for it could be a valid amount.
    const unnamed = fields.filter((f) => f !== 'amountCents');
    return pick([`{"amountCents":${amount}${extra}}`, `{"amountCents":600,"unknown":1}`, `{"amountCents":600,"amountCents":700}`, jsonText(3, unnamed), `{"amountCents":"\\u0000"}`]);
  }
  if (r < 0.55) return jsonText(4, fields);
  if (r < 0.62) return deep(60 + int(5000));
  if (r < 0.68) return `{"metadata":${JSON.stringify({ blob: 'x'.repeat(int(1_200_000)) })}}`;
  if (r < 0.74) return Buffer.from(Array.from({ length: 1 + int(64) }, () => int(256)));
  if (r < 0.8) return pick(['', 'null', '[]', '"x"', '{', '{"a":}', '{"a":1,}', "{'a':1}", '\ufeff{}', '{"a":1}{"b":2}']);
  if (r < 0.86) return `{${fields.map((f) => `${JSON.stringify(f)}:${jsonText(2, fields)}`).join(',')}}`;
  return undefined;
}

function headersFor(auth: string, body: unknown): Record<string, string> {
  const h: Record<string, string> = {};
  const a = rnd();
  if (auth === 'agent' || a < 0.3) {
    h.authorization = a < 0.7 ? `Bearer ${owner.apiKey}` : a < 0.8 ? `Bearer ${other.apiKey}` : pick(['Bearer ', 'Basic abc', `Bearer ae_live_${'A'.repeat(43)}`, 'Bearer ae_live_x', `bearer ${owner.apiKey}`, `Bearer ${owner.apiKey} extra`]);
  }
  if (auth === 'admin') h.authorization = pick(['Bearer wrong-token-0000000', 'Bearer ', `Bearer ${owner.apiKey}`]);
  if (body !== undefined) h['content-type'] = pick(['application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'application/vnd.api+json', 'multipart/form-data; boundary=x']);
  if (chance(0.25)) h['idempotency-key'] = pick([randomUUID(), 'k', 'x'.repeat(255), 'with space', '']);
  if (chance(0.2)) {
    h['x-ae-signature'] = pick(['', 'AAAA', 'x'.repeat(88), '!!!', Buffer.alloc(64).toString('base64')]);
    h['x-ae-signature-timestamp'] = pick(['', 'yesterday', '1970-01-01T00:00:00Z', new Date().toISOString(), '9999-12-31T23:59:59Z']);
  }
  if (chance(0.15)) h['x-request-id'] = pick(['not-a-uuid', randomUUID(), 'x'.repeat(500)]);
  return h;
}

function generate(): Attempt {
  if (chance(0.03)) return { method: pick(['GET', 'POST', 'PUT', 'OPTIONS', 'PATCH']), path: pick(['/', '/v1', '/v1/nothing', '/v1/agents', `/v1/agents/${owner.agentId}/unknown`, '/admin/v1/x']), headers: {} };
  const route = pick(routes);
  const op = route.op;
  const props = (part: string) => Object.keys(((op?.input.properties as Record<string, { properties?: object }> | undefined)?.[part]?.properties) ?? {});
  const money = (MONEY.exec(route.url)?.[1] ?? null) as 'fund' | 'withdraw' | null;
  const body = route.method === 'GET' || route.method === 'DELETE' ? (chance(0.1) ? '{}' : undefined) : bodyFor(props('body'), money);
  const method = chance(0.05) && !money ? pick(['GET', 'POST', 'PATCH', 'PUT', 'DELETE']) : route.method;
  return { method, path: pathFor(route.url, money !== null) + queryFor(props('query')), headers: headersFor(route.auth, body), body };
}

interface Envelope {
  data: unknown;
  meta: { requestId: string; timestamp: string };
  errors: { code: keyof typeof ERROR_STATUS; message: string }[] | null;
}

function checkAnswer(a: Attempt, status: number, text: string, type: string | null, problems: string[]) {
  const what = `${a.method} ${a.path.slice(0, 120)} → ${status}`;
  if (status >= 500) problems.push(`${what}: ${text.slice(0, 300)}`);
  // The raw documents a resolver or a JOSE library fetches (D6.7, D18.1) are not in the envelope.
  if (status === 200 && (type?.startsWith('application/did+json') || type?.startsWith('application/jwk-set+json'))) return;
  // x402's facilitator API answers x402's own JSON (D19.2); its refusals of the request are in the envelope.
  if (status === 200 && a.path.startsWith('/x402/')) return;
  let env: Envelope;
  try {
    env = JSON.parse(text) as Envelope;
  } catch {
    problems.push(`${what}: not JSON: ${text.slice(0, 120)}`);
    return;
  }
  if (!env || typeof env !== 'object' || !('data' in env) || !('errors' in env) || typeof env.meta?.requestId !== 'string' || typeof env.meta?.timestamp !== 'string') {
    problems.push(`${what}: not the envelope: ${text.slice(0, 120)}`);
    return;
  }
  if (status >= 400) {
    const first = env.errors?.[0];
    if (env.data !== null || !first || ERROR_STATUS[first.code] !== status || !first.message) problems.push(`${what}: error not per D1.3/D1.4: ${text.slice(0, 200)}`);
  }
}

function rawRequest(bytes: Buffer): Promise<string> {
  const { hostname, port } = new URL(ex.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let out = '';
    const done = () => resolve(out);
    socket.setTimeout(3000, () => socket.destroy());
    socket.on('data', (c) => (out += c.toString('latin1')));
    socket.on('close', done);
    socket.on('error', done);
    socket.end(bytes);
  });
}

async function ledgerState() {
  const { rows } = await sql.query('select count(*)::int as n, coalesce(sum(amount_cents), 0)::bigint as sum, (select coalesce(sum(balance_cents), 0) from wallet.wallets)::bigint as balances from wallet.ledger_entries');
  return rows[0] as { n: number; sum: string; balances: string };
}

describe(`fuzz: ${REQUESTS} bad requests across every route (seed ${SEED}; FUZZ_SEED replays it)`, () => {
  it('answers every one below 500, in the envelope, and moves no money', async () => {
    const before = await ledgerState();
    const problems: string[] = [];
    const statuses = new Map<number, number>();
    let sent = 0;
    let refusedByFetch = 0;
    const worker = async () => {
      while (sent < REQUESTS) {
        const a = generate();
        let res: Response;
        try {
          res = await fetch(ex.url + a.path, { method: a.method, headers: a.headers, body: a.body });
        } catch (err) {
          // fetch refuses some inputs itself (a body on GET, a header it will not send): not a request.
          if (err instanceof TypeError && refusedByFetch++ < REQUESTS) continue;
          throw err;
        }
        sent++;
        const text = await res.text();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        checkAnswer(a, res.status, text, res.headers.get('content-type'), problems);
      }
    };
    await Promise.all(Array.from({ length: 12 }, worker));

    // Malformed HTTP, written to the socket as bytes.
    const host = new URL(ex.url).host;
    const malformed = [
      `GET /v1/protocol HTTP/1.1\r\nHost: ${host}\r\nContent-Length: -1\r\n\r\n`,
      `POST /v1/accounts HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{}`,
      `POST /v1/accounts HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nzz\r\n`,
      `GET /v1/protocol HTTP/1.1\r\nHost: ${host}\r\nX: ${'a'.repeat(20_000)}\r\n\r\n`,
      `GET /v1/\u0000 HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
      `GET /v1/protocol HTTP/9.9\r\nHost: ${host}\r\n\r\n`,
      `GET /v1/protocol HTTP/1.1\r\nHo st: x\r\n\r\n`,
    ];
    for (let i = 0; i < 300; i++) {
      const bytes = i < malformed.length ? Buffer.from(malformed[i]!, 'latin1') : Buffer.from(Array.from({ length: 1 + int(200) }, () => int(256)));
      const raw = await rawRequest(bytes);
      if (!raw) continue; // the connection was closed without an answer (not HTTP at all)
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
      checkAnswer({ method: 'RAW', path: JSON.stringify(bytes.subarray(0, 40).toString('latin1')), headers: {} }, status, raw.slice(raw.indexOf('\r\n\r\n') + 4), null, problems);
    }

    expect(sent).toBeGreaterThanOrEqual(REQUESTS);
    expect(problems.slice(0, 20)).toEqual([]);
    expect([...statuses.keys()].every((s) => s < 500)).toBe(true);
    // The generator reaches deep: validation, authorization and the services' own refusals all answer.
    const histogram = JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])));
    expect([...statuses.keys()], histogram).toEqual(expect.arrayContaining([400, 401, 403, 404, 405, 413, 415]));
    // Many requests get past authentication into validation and the services (about half, by seed).
    expect((statuses.get(400) ?? 0) + (statuses.get(403) ?? 0) + (statuses.get(404) ?? 0), histogram).toBeGreaterThan(REQUESTS / 3);
    expect(await ledgerState()).toEqual(before);
    expect(unwrap(await ex.admin.checkLedger()).ok).toBe(true);
  }, 180_000); // 10,000 requests on 2 cores next to the rest of the suite: up to 45 s measured
});
