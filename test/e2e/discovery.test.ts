import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap, type Failure } from '@agent-exchange/client';
import type { CreateServiceBody, DiscoverBody, ServiceView } from '@aex/contracts';
import { expectError, startTestExchange, type Member, type TestExchange } from './harness.js';

// POST /v1/services/discover (D8) through the gateway: meaning, compatibility, filters, errors.
let ex: TestExchange;
let provider: Member;
let consumer: Member;

const obj = (props: Record<string, string>, required = Object.keys(props)) => ({
  type: 'object',
  properties: Object.fromEntries(Object.entries(props).map(([k, t]) => [k, { type: t }])),
  required,
});

function service(category: string, over: Partial<CreateServiceBody> = {}): CreateServiceBody {
  return {
    name: 'Generic service',
    description: 'Does a generic thing for agents that ask.',
    version: '1.0.0',
    category,
    inputSchema: obj({ text: 'string' }),
    outputSchema: obj({ result: 'string' }),
    pricing: { model: 'fixed', basePriceCents: 100 },
    sla: { maxLatencyMs: 1000, timeoutMs: 5000 },
    ...over,
  };
}

async function register(...bodies: CreateServiceBody[]): Promise<ServiceView[]> {
  const created: ServiceView[] = [];
  // Discovery reads its writes: no waiting for the index.
  for (const b of bodies) created.push(unwrap(await provider.client.createService(b)));
  return created;
}

const find = async (body: DiscoverBody) => unwrap(await consumer.client.discover(body));
const names = async (body: DiscoverBody) => (await find(body)).matches.map((m) => m.serviceName);

beforeAll(async () => {
  ex = await startTestExchange({ RATE_LIMIT_WRITE_PER_MIN: '100000', RATE_LIMIT_READ_PER_MIN: '100000', RATE_LIMIT_DISCOVERY_PER_MIN: '99999' });
  provider = await ex.signUp();
  consumer = await ex.signUp();
});
afterAll(async () => ex?.stop());

describe('ranking by meaning (D8.2)', () => {
  const category = `meaning-${randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    await register(
      service(category, { name: 'Automobile Valuation', description: 'Estimates the resale value of used automobiles from make, model and mileage.', tags: ['vehicles'] }),
      service(category, { name: 'Language Translation', description: 'Translates documents between human languages.', tags: ['translation'] }),
      service(category, { name: 'Weather Forecast', description: 'Hourly forecasts of temperature and precipitation.', tags: ['forecast'] }),
      service(category, { name: 'Invoice Reader', description: 'Reads supplier documents.', inputSchema: { type: 'object', properties: { invoiceUrl: { type: 'string', description: 'Link to the vendor bill' } } } }),
    );
  });

  it('finds a service through a synonym it never uses ("car" → automobile)', async () => {
    expect((await names({ need: 'what is my old car worth', category }))[0]).toBe('Automobile Valuation');
  });
  it('finds a service through another form of the word (stemming)', async () => {
    expect((await names({ need: 'translating a letter', category }))[0]).toBe('Language Translation');
  });
  it('corrects typos against the catalog’s words', async () => {
    expect((await names({ need: 'tranlsate a leter', category }))[0]).toBe('Language Translation');
    expect((await names({ need: 'wether forcast', category }))[0]).toBe('Weather Forecast');
  });
  it('matches words inside the schemas (property names and descriptions)', async () => {
    expect((await names({ need: 'vendor bill', category }))[0]).toBe('Invoice Reader');
  });
  it('returns nothing for a need unrelated to every service, with totalMatches 0', async () => {
    const r = await find({ need: 'zyxwvut qqqq', category });
    expect(r).toMatchObject({ matches: [], totalMatches: 0 });
  });
  it('answers each match in the spec’s shape with a score in [0,1], best first', async () => {
    const r = await find({ need: 'car value', category });
    expect(r.queryId).toMatch(/^[0-9a-f-]{36}$/);
    const m = r.matches[0]!;
    // The spec's fields, and `liveness` (EXT, D22.3).
    expect(Object.keys(m).sort()).toEqual(['agentId', 'agentName', 'compatibilityScore', 'estimatedLatencyMs', 'inputSchema', 'liveness', 'outputSchema', 'priceCents', 'serviceId', 'serviceName', 'sla', 'trustScore'].sort());
    expect(m).toMatchObject({ agentId: provider.agentId, agentName: 'owner', trustScore: 50, priceCents: 100, estimatedLatencyMs: 1000, liveness: { state: 'unproven', score: 1, recentDelivered: 0, recentUndelivered: 0 } });
    for (const x of r.matches) expect(x.compatibilityScore).toBeGreaterThan(0);
    for (const x of r.matches) expect(x.compatibilityScore).toBeLessThanOrEqual(1);
    const scores = r.matches.map((x) => x.compatibilityScore);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  });
});

describe('input and output compatibility (D8.3)', () => {
  const category = `io-${randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    await register(
      service(category, { name: 'Text tool', inputSchema: { ...obj({ text: 'string', lang: 'string' }), additionalProperties: false }, outputSchema: obj({ summary: 'string', words: 'integer' }) }),
      service(category, { name: 'Image tool', inputSchema: obj({ imageUrl: 'string' }), outputSchema: obj({ url: 'string' }) }),
      service(category, { name: 'Half tool', inputSchema: obj({ text: 'string', style: 'string' }), outputSchema: obj({ summary: 'number' }) }),
    );
  });

  it('scores full input compatibility when the inputSchema accepts the input', async () => {
    const r = await find({ inputAvailable: { text: 'hi', lang: 'en' }, category });
    expect(r.matches.map((m) => m.serviceName)).toEqual(['Text tool', 'Half tool']);
    expect(r.matches[0]!.compatibilityScore).toBeGreaterThan(r.matches[1]!.compatibilityScore);
    expect(r.totalMatches).toBe(2);
  });
  it('otherwise scores the fraction of required properties supplied with a fitting value', async () => {
    // `lang: 5` is the wrong type: the Text tool's validator rejects it, so it is half compatible like Half tool.
    const r = await find({ inputAvailable: { text: 'hi', lang: 5 }, category });
    const [a, b] = r.matches.map((m) => m.compatibilityScore);
    expect(r.matches).toHaveLength(2);
    expect(a).toBeCloseTo(b!, 1);
  });
  it('takes outputRequired as a JSON Schema: name and type must match', async () => {
    expect(await names({ outputRequired: { type: 'object', properties: { summary: { type: 'string' }, words: { type: 'integer' } } }, category })).toEqual(['Text tool']);
  });
  it('takes outputRequired as an example object', async () => {
    const r = await find({ outputRequired: { summary: 'a text', words: 3 }, category });
    expect(r.matches.map((m) => m.serviceName)).toEqual(['Text tool']);
    expect((await names({ outputRequired: { url: 'https://x' }, category }))).toEqual(['Image tool']);
  });
});

describe('filters and preferences (D8.1, D8.4)', () => {
  const category = `filter-${randomUUID().slice(0, 8)}`;
  let paused: ServiceView;
  let deleted: ServiceView;
  beforeAll(async () => {
    const made = await register(
      service(category, { name: 'Fast pricey', description: 'Geocodes postal addresses to coordinates.', pricing: { model: 'fixed', basePriceCents: 900 }, sla: { maxLatencyMs: 20, timeoutMs: 1000 } }),
      service(category, { name: 'Slow cheap', description: 'Geocodes postal addresses to coordinates.', pricing: { model: 'fixed', basePriceCents: 2 }, sla: { maxLatencyMs: 60_000, timeoutMs: 90_000 } }),
      service(category, { name: 'Haggler', description: 'Geocodes postal addresses to coordinates.', pricing: { model: 'negotiable', basePriceCents: 5000, minimumCents: 50 } }),
      service(category, { name: 'Paused one', description: 'Geocodes postal addresses to coordinates.' }),
      service(category, { name: 'Deleted one', description: 'Geocodes postal addresses to coordinates.' }),
    );
    paused = made[3]!;
    deleted = made[4]!;
    unwrap(await provider.client.updateService(paused.id, { status: 'paused' }));
    unwrap(await provider.client.deleteService(deleted.id));
  });

  it('only finds active services', async () => {
    expect((await names({ need: 'geocode an address', category })).sort()).toEqual(['Fast pricey', 'Haggler', 'Slow cheap']);
  });
  it('keeps what the budget affords: the negotiable minimum counts', async () => {
    expect((await names({ need: 'geocode an address', category, maxBudgetCents: 100 })).sort()).toEqual(['Haggler', 'Slow cheap']);
  });
  it('filters on trust (every provider here has 50)', async () => {
    expect(await names({ need: 'geocode an address', category, minTrustScore: 51 })).toEqual([]);
    expect(await names({ need: 'geocode an address', category, minTrustScore: 50 })).toHaveLength(3);
  });
  it('matches the category whatever its case', async () => {
    expect(await names({ need: 'geocode an address', category: category.toUpperCase() })).toHaveLength(3);
  });
  it('favours low latency when urgent and low price when not', async () => {
    expect((await names({ need: 'geocode an address', category, urgency: 'high' }))[0]).toBe('Fast pricey');
    expect((await names({ need: 'geocode an address', category, urgency: 'low' }))[0]).toBe('Slow cheap');
  });
  it('honours limit and counts every match in totalMatches', async () => {
    const r = await find({ need: 'geocode an address', category, limit: 1 });
    expect(r.matches).toHaveLength(1);
    expect(r.totalMatches).toBe(3);
  });
  it('with no criteria at all, every active service matches (ranked by preference)', async () => {
    const r = await find({ category });
    expect(r.totalMatches).toBe(3);
    expect(r.matches.every((m) => m.compatibilityScore > 0.8)).toBe(true);
  });
});

describe('errors and access', () => {
  it('rejects bad fields with their pointer (400 VALIDATION_ERROR)', async () => {
    for (const [b, field] of [[{ limit: 51 }, '/body/limit'], [{ limit: 0 }, '/body/limit'], [{ urgency: 'asap' }, '/body/urgency'], [{ minTrustScore: 101 }, '/body/minTrustScore'], [{ need: 'x'.repeat(2001) }, '/body/need'], [{ sortBy: 'price' }, '/body/sortBy'], [{ inputAvailable: 'text' }, '/body/inputAvailable']] as const) {
      const r = await consumer.client.request('POST', '/v1/services/discover', { body: b });
      expectError(r, 400, 'VALIDATION_ERROR');
      expect((r as Failure).error.errors.map((e) => e.field)).toEqual([field]);
    }
  });
  it('needs authentication', async () => expectError(await ex.anon.discover({ need: 'anything' }), 401, 'UNAUTHENTICATED'));
  it('counts against the discovery rate-limit group (D4.1)', async () => {
    const r = await consumer.client.discover({ need: 'anything' });
    expect(r.ok && r.headers.get('ratelimit-limit')).toBe('99999');
    const read = await consumer.client.listServices({ limit: 1 });
    expect(read.ok && read.headers.get('ratelimit-limit')).toBe('100000');
  });
});
