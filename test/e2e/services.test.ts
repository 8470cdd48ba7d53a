import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap, type Failure, type Outcome } from '@agent-exchange/client';
import { catalogOps, type CreateServiceBody, type ServiceView } from '@aex/contracts';
import { callOrThrow } from '@aex/platform';
import { eventually } from '@aex/platform/testing';
import { expectError, startTestExchange, type Member, type TestExchange } from './harness.js';

// Service contracts, listing and their authorization (spec "Services"; D7) through the gateway.
let ex: TestExchange;
let provider: Member;
let sibling: Member;
let stranger: Member;

const DRAFT = 'https://json-schema.org/draft/2020-12/schema';
const inputSchema = { $schema: DRAFT, type: 'object', properties: { text: { type: 'string', maxLength: 1000 }, targetLanguage: { type: 'string' } }, required: ['text', 'targetLanguage'], additionalProperties: false };
const outputSchema = { type: 'object', properties: { translatedText: { type: 'string' } }, required: ['translatedText'] };

function body(over: Partial<CreateServiceBody> = {}): CreateServiceBody {
  return {
    name: 'Neural Translator',
    description: 'Translates text between many human languages.',
    version: '1.0.0',
    category: 'language',
    tags: ['translation'],
    inputSchema,
    outputSchema,
    pricing: { model: 'fixed', basePriceCents: 100 },
    sla: { maxLatencyMs: 800, timeoutMs: 5000 },
    ...over,
  };
}

function fieldsOf(r: Outcome<unknown>): string[] {
  expect(r.ok).toBe(false);
  return (r as Failure).error.errors.map((e) => e.field ?? '');
}

beforeAll(async () => {
  ex = await startTestExchange({ MAX_SERVICES_PER_AGENT: '3', RATE_LIMIT_WRITE_PER_MIN: '100000', RATE_LIMIT_READ_PER_MIN: '100000' });
  provider = await ex.signUp();
  sibling = await ex.addAgent(provider);
  stranger = await ex.signUp();
});
afterAll(async () => ex?.stop());

describe('POST /v1/services (D7.1–D7.4)', () => {
  it('registers a contract with the caller as provider, status active and the spec defaults', async () => {
    const s = unwrap(await provider.client.createService(body({ examples: [{ input: { text: 'hi', targetLanguage: 'de' }, output: { translatedText: 'hallo' } }] })));
    expect(s).toMatchObject({ agentId: provider.agentId, status: 'active', version: '1.0.0', subcategory: null, capabilities: [], metadata: {} });
    expect(s.pricing).toEqual({ model: 'fixed', basePriceCents: 100, currency: 'USD' });
    expect(s.sla).toEqual({ maxLatencyMs: 800, timeoutMs: 5000, maxRetries: 2 });
    expect(s.inputSchema).toEqual(inputSchema);
    await provider.client.deleteService(s.id);
  });

  it('answers 201', async () => {
    const r = await sibling.client.createService(body());
    expect(r.status).toBe(201);
    if (r.ok) await sibling.client.deleteService(r.data.id);
  });

  it('needs authentication', async () => expectError(await ex.anon.createService(body()), 401, 'UNAUTHENTICATED'));

  it('refuses a deactivated agent with 403 AGENT_INACTIVE (D6.5)', async () => {
    const gone = await ex.addAgent(provider);
    unwrap(await provider.client.deactivateAgent(gone.agentId));
    expectError(await gone.client.createService(body()), 403, 'AGENT_INACTIVE');
  });

  it('rejects unknown properties, bad semver, too many tags and out-of-range prices (VALIDATION_ERROR)', async () => {
    expect(fieldsOf(await provider.client.request('POST', '/v1/services', { body: { ...body(), owner: 'me' } }))).toContain('/body/owner');
    expect(fieldsOf(await provider.client.createService(body({ version: '1.0' })))).toEqual(['/body/version']);
    expect(fieldsOf(await provider.client.createService(body({ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) })))).toEqual(['/body/tags']);
    expect(fieldsOf(await provider.client.createService(body({ pricing: { model: 'fixed', basePriceCents: 0 } })))).toEqual(['/body/pricing/basePriceCents']);
    expect(fieldsOf(await provider.client.createService(body({ pricing: { model: 'fixed', basePriceCents: 1_000_001 } })))).toEqual(['/body/pricing/basePriceCents']);
    expect(fieldsOf(await provider.client.request('POST', '/v1/services', { body: body({ pricing: { model: 'fixed', basePriceCents: 5, currency: 'EUR' } as never }) }))).toEqual(['/body/pricing/currency']);
    expect(fieldsOf(await provider.client.createService(body({ description: 'too short' })))).toEqual(['/body/description']);
  });

  it('checks negotiable bounds and the SLA (D7.3)', async () => {
    const neg = await provider.client.createService(body({ pricing: { model: 'negotiable', basePriceCents: 100, minimumCents: 150, maximumCents: 90 } }));
    expectError(neg, 400, 'VALIDATION_ERROR');
    expect(fieldsOf(neg)).toEqual(['/body/pricing/minimumCents', '/body/pricing/maximumCents']);
    expect(fieldsOf(await provider.client.createService(body({ pricing: { model: 'fixed', basePriceCents: 100, minimumCents: 50 } })))).toEqual(['/body/pricing/minimumCents']);
    expect(fieldsOf(await provider.client.createService(body({ sla: { maxLatencyMs: 5000, timeoutMs: 1000 } })))).toEqual(['/body/sla/timeoutMs']);
    expect(fieldsOf(await provider.client.createService(body({ sla: { maxLatencyMs: 100, timeoutMs: 1000, maxRetries: 11 } })))).toEqual(['/body/sla/maxRetries']);
    expect(fieldsOf(await provider.client.createService(body({ sla: { maxLatencyMs: 100, timeoutMs: 1000, availability: 1.5 } })))).toEqual(['/body/sla/availability']);
  });

  it('validates examples against the schemas, one entry per violation (D7.4)', async () => {
    const r = await provider.client.createService(body({ examples: [{ input: { text: 'hi', targetLanguage: 'de' }, output: { translatedText: 'hallo' } }, { input: { text: 5 }, output: {} }] }));
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(fieldsOf(r)).toEqual(expect.arrayContaining(['/body/examples/1/input/text', '/body/examples/1/input/targetLanguage', '/body/examples/1/output/translatedText']));
  });

  describe('untrusted schemas answer 400 INVALID_SCHEMA (D7.2)', () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['another draft', { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' }, '/body/inputSchema/$schema'],
      ['a remote $ref (never fetched)', { type: 'object', properties: { a: { $ref: 'https://evil.example/schema.json' } } }, '/body/inputSchema/properties/a/$ref'],
      ['a relative $ref', { $ref: 'other.json#/x' }, '/body/inputSchema/$ref'],
      ['an embedded resource', { type: 'object', $defs: { x: { $id: 'https://example.com/x', type: 'string' } } }, '/body/inputSchema/$defs/x/$id'],
      ['a type that does not exist', { type: 'strng' }, '/body/inputSchema/type'],
      ['a local $ref to nothing', { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } }, '/body/inputSchema'],
      ['a pattern with exponential backtracking', { type: 'string', pattern: '^(a+)+$' }, '/body/inputSchema/pattern'],
      ['a quadratic pattern on unbounded strings', { type: 'string', pattern: '^\\s*\\S+\\s*\\S+$' }, '/body/inputSchema/pattern'],
      ['an invalid pattern', { type: 'string', pattern: '([a-z]' }, '/body/inputSchema/pattern'],
      ['a schema over 64 KiB', { type: 'object', description: 'x'.repeat(70_000) }, '/body/inputSchema'],
    ];
    for (const [what, schema, field] of cases) {
      it(`refuses ${what}`, async () => {
        const r = await provider.client.createService(body({ inputSchema: schema }));
        expectError(r, 400, 'INVALID_SCHEMA');
        expect(fieldsOf(r)).toContain(field);
      });
    }

    it('accepts local references, property names that look like keywords, and a quadratic pattern on bounded strings', async () => {
      const schema = {
        $schema: DRAFT, $id: 'https://provider.example/in.json', type: 'object',
        $defs: { lang: { type: 'string', pattern: '^[a-z]{2}(-[A-Z]{2})?$' } },
        properties: { $ref: { type: 'string' }, target: { $ref: '#/$defs/lang' }, words: { type: 'string', maxLength: 200, pattern: '^\\s*\\S+\\s*\\S+$' } },
      };
      const s = unwrap(await provider.client.createService(body({ inputSchema: schema })));
      expect(s.inputSchema).toEqual(schema);
      await provider.client.deleteService(s.id);
    });

    it('reports a missing schema as VALIDATION_ERROR', async () => {
      const { outputSchema: _omit, ...rest } = body();
      expectError(await provider.client.request('POST', '/v1/services', { body: rest }), 400, 'VALIDATION_ERROR');
    });
  });

  it('keeps at most MAX_SERVICES_PER_AGENT services that are not deleted (D7.1, 409 LIMIT_REACHED)', async () => {
    const m = await ex.signUp();
    const made = await Promise.all([1, 2, 3, 4].map(() => m.client.createService(body())));
    expect(made.filter((r) => r.ok)).toHaveLength(3);
    const refused = made.find((r) => !r.ok) as Failure;
    expect(refused.status).toBe(409);
    expect(refused.error.errors[0]).toMatchObject({ code: 'LIMIT_REACHED', details: { limit: 3 } });
    // A paused service still counts; a deleted one frees its place.
    const first = made.find((r) => r.ok)! as { data: ServiceView };
    unwrap(await m.client.updateService(first.data.id, { status: 'paused' }));
    expectError(await m.client.createService(body()), 409, 'LIMIT_REACHED');
    unwrap(await m.client.deleteService(first.data.id));
    unwrap(await m.client.createService(body()));
  });
});

describe('GET /v1/services/{id}', () => {
  it('shows any agent the full contract', async () => {
    const s = unwrap(await provider.client.createService(body()));
    const seen = unwrap(await stranger.client.getService(s.id));
    expect(seen).toEqual(s);
    await provider.client.deleteService(s.id);
    expect(unwrap(await stranger.client.getService(s.id)).status).toBe('inactive');
  });
  it('answers an unknown service with 404', async () => expectError(await provider.client.getService(randomUUID()), 404, 'NOT_FOUND'));
  it('answers a malformed id with 400', async () => expectError(await provider.client.getService('nope'), 400, 'VALIDATION_ERROR'));
  it('needs authentication', async () => expectError(await ex.anon.getService(randomUUID()), 401, 'UNAUTHENTICATED'));
});

describe('PATCH /v1/services/{id} (D7.6)', () => {
  let s: ServiceView;
  beforeAll(async () => {
    s = unwrap(await sibling.client.createService(body({ examples: [{ input: { text: 'hi', targetLanguage: 'de' }, output: { translatedText: 'hallo' } }] })));
  });
  afterAll(async () => void (await sibling.client.deleteService(s.id)));

  it('lets the provider change the contract; a contract change is a new revision', async () => {
    const before = await contract(s.id);
    const changed = unwrap(await sibling.client.updateService(s.id, { version: '1.1.0', pricing: { model: 'negotiable', basePriceCents: 200, minimumCents: 150 }, description: 'Translates text quickly between languages.' }));
    expect(changed).toMatchObject({ version: '1.1.0', description: 'Translates text quickly between languages.', pricing: { model: 'negotiable', basePriceCents: 200, minimumCents: 150, currency: 'USD' } });
    expect(new Date(changed.updatedAt).getTime()).toBeGreaterThanOrEqual(new Date(s.updatedAt).getTime());
    const after = await contract(s.id);
    expect(after.revision).toBe(before.revision + 1);
    // The earlier revision stays readable: a transaction keeps the contract it was created with.
    expect(await contract(s.id, before.revision)).toMatchObject({ revision: before.revision, version: '1.0.0', pricing: { basePriceCents: 100 } });
    // A change of description only is not a new contract.
    unwrap(await sibling.client.updateService(s.id, { metadata: { team: 'x' } }));
    expect((await contract(s.id)).revision).toBe(after.revision);
  });

  it('forbids the owner agent of the same account and other accounts (403), needs authentication (401)', async () => {
    expectError(await provider.client.updateService(s.id, { description: 'Hijacked description text' }), 403, 'FORBIDDEN');
    expectError(await stranger.client.updateService(s.id, { description: 'Hijacked description text' }), 403, 'FORBIDDEN');
    expectError(await ex.anon.updateService(s.id, { description: 'Hijacked description text' }), 401, 'UNAUTHENTICATED');
    expectError(await sibling.client.updateService(randomUUID(), { description: 'Nothing to change here' }), 404, 'NOT_FOUND');
  });

  it('rejects fields the spec does not let change (name, category) and bad statuses', async () => {
    expect(fieldsOf(await sibling.client.request('PATCH', `/v1/services/${s.id}`, { body: { name: 'New name' } }))).toEqual(['/body/name']);
    expect(fieldsOf(await sibling.client.request('PATCH', `/v1/services/${s.id}`, { body: { status: 'inactive' } }))).toEqual(['/body/status']);
  });

  it('re-checks schemas, and refuses a schema its stored examples no longer pass', async () => {
    expectError(await sibling.client.updateService(s.id, { outputSchema: { type: 'object', properties: { a: { $ref: 'http://x.example/a' } } } }), 400, 'INVALID_SCHEMA');
    const strict = { type: 'object', properties: { translatedText: { type: 'string', minLength: 10 } }, required: ['translatedText'] };
    const r = await sibling.client.updateService(s.id, { outputSchema: strict });
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(fieldsOf(r)).toEqual(['/body/outputSchema']);
    // With new examples sent along, the change goes through.
    unwrap(await sibling.client.updateService(s.id, { outputSchema: strict, examples: [{ input: { text: 'hi', targetLanguage: 'de' }, output: { translatedText: 'hallo welt!' } }] }));
  });

  it('pauses and resumes; a deleted service cannot change (409 INVALID_STATE)', async () => {
    expect(unwrap(await sibling.client.updateService(s.id, { status: 'paused' })).status).toBe('paused');
    expect(unwrap(await sibling.client.updateService(s.id, { status: 'active' })).status).toBe('active');
    const gone = unwrap(await sibling.client.createService(body()));
    unwrap(await sibling.client.deleteService(gone.id));
    const r = await sibling.client.updateService(gone.id, { status: 'active' });
    expectError(r, 409, 'INVALID_STATE');
    expect((r as Failure).error.errors[0]!.details).toEqual({ status: 'inactive' });
  });
});

describe('DELETE /v1/services/{id} (D7.6)', () => {
  it('soft-deactivates for the provider only, and is repeatable', async () => {
    const s = unwrap(await sibling.client.createService(body()));
    expectError(await provider.client.deleteService(s.id), 403, 'FORBIDDEN');
    expectError(await stranger.client.deleteService(s.id), 403, 'FORBIDDEN');
    expectError(await ex.anon.deleteService(s.id), 401, 'UNAUTHENTICATED');
    const gone = unwrap(await sibling.client.deleteService(s.id));
    expect(gone).toMatchObject({ id: s.id, status: 'inactive' });
    expect(unwrap(await sibling.client.deleteService(s.id)).status).toBe('inactive');
    expectError(await sibling.client.deleteService(randomUUID()), 404, 'NOT_FOUND');
  });
});

describe('GET /v1/services (D7.5)', () => {
  const category = `list-${randomUUID().slice(0, 8)}`;
  let a: Member;
  let b: Member;
  let tagged: ServiceView;
  let paused: ServiceView;

  beforeAll(async () => {
    a = await ex.signUp();
    b = await ex.signUp();
    unwrap(await a.client.createService(body({ category, name: 'Cheap', tags: ['x'], pricing: { model: 'fixed', basePriceCents: 5 }, sla: { maxLatencyMs: 5000, timeoutMs: 6000 } })));
    unwrap(await a.client.createService(body({ category, name: 'Fast', tags: ['x', 'y'], pricing: { model: 'fixed', basePriceCents: 900 }, sla: { maxLatencyMs: 50, timeoutMs: 6000 } })));
    tagged = unwrap(await b.client.createService(body({ category, name: 'Tagged', tags: ['x', 'y', 'z'], pricing: { model: 'fixed', basePriceCents: 300 }, sla: { maxLatencyMs: 800, timeoutMs: 6000 } })));
    paused = unwrap(await b.client.createService(body({ category, name: 'Paused' })));
    unwrap(await b.client.updateService(paused.id, { status: 'paused' }));
  });

  const ids = async (query: Record<string, string | number>) => unwrap(await stranger.client.listServices({ category, ...query })).map((s) => s.name);

  it('lists active services only, with trustScore and providerName and without schemas', async () => {
    const r = unwrap(await stranger.client.listServices({ category }));
    expect(r.map((s) => s.name).sort()).toEqual(['Cheap', 'Fast', 'Tagged']);
    const item = r.find((s) => s.id === tagged.id)!;
    expect(item).toMatchObject({ trustScore: 50, providerName: 'owner', agentId: b.agentId, status: 'active' });
    for (const k of ['inputSchema', 'outputSchema', 'examples']) expect(item).not.toHaveProperty(k);
  });

  it('filters by tags (all of them), price, latency and trust', async () => {
    expect((await ids({ tags: 'x,y' })).sort()).toEqual(['Fast', 'Tagged']);
    expect(await ids({ tags: ' z , y,' })).toEqual(['Tagged']);
    expect((await ids({ maxPriceCents: 300 })).sort()).toEqual(['Cheap', 'Tagged']);
    expect((await ids({ maxLatencyMs: 800 })).sort()).toEqual(['Fast', 'Tagged']);
    expect(await ids({ minTrustScore: 51 })).toEqual([]);
    expect(await ids({ minTrustScore: 50 })).toHaveLength(3);
  });

  it('sorts by price, trust, creation and composite rank (cheap, fast, trusted first)', async () => {
    expect(await ids({ sortBy: 'price_asc' })).toEqual(['Cheap', 'Tagged', 'Fast']);
    expect(await ids({ sortBy: 'price_desc' })).toEqual(['Fast', 'Tagged', 'Cheap']);
    // Equal trust: ties broken by createdAt desc.
    expect(await ids({ sortBy: 'trust_score' })).toEqual(['Tagged', 'Fast', 'Cheap']);
    expect(await ids({ sortBy: 'created_at' })).toEqual(['Tagged', 'Fast', 'Cheap']);
    expect(await ids({})).toEqual(await ids({ sortBy: 'composite_rank' }));
  });

  it('paginates exactly', async () => {
    const page = await stranger.client.listServices({ category, sortBy: 'price_asc', limit: 2, offset: 1 });
    expect(unwrap(page).map((s) => s.name)).toEqual(['Tagged', 'Fast']);
    expect(page.ok && page.pagination).toEqual({ total: 3, limit: 2, offset: 1, hasMore: false });
    const first = await stranger.client.listServices({ category, limit: 1 });
    expect(first.ok && first.pagination).toEqual({ total: 3, limit: 1, offset: 0, hasMore: true });
    expect(await ids({ offset: 10 })).toEqual([]);
  });

  it('lists one provider’s services with agentId; its own paused ones only to itself (EXT)', async () => {
    expect(unwrap(await b.client.listServices({ agentId: b.agentId })).map((s) => s.name).sort()).toEqual(['Paused', 'Tagged']);
    expect(unwrap(await stranger.client.listServices({ agentId: b.agentId })).map((s) => s.name)).toEqual(['Tagged']);
  });

  it('rejects bad parameters with the query field', async () => {
    for (const [q, field] of [[{ limit: 0 }, '/query/limit'], [{ limit: 101 }, '/query/limit'], [{ sortBy: 'name' }, '/query/sortBy'], [{ minTrustScore: 101 }, '/query/minTrustScore'], [{ offset: -1 }, '/query/offset'], [{ agentId: 'x' }, '/query/agentId'], [{ color: 'red' }, '/query/color']] as const) {
      const r = await stranger.client.request('GET', '/v1/services', { query: q as Record<string, string | number> });
      expectError(r, 400, 'VALIDATION_ERROR');
      expect(fieldsOf(r)).toEqual([field]);
    }
  });

  it('needs authentication', async () => expectError(await ex.anon.listServices(), 401, 'UNAUTHENTICATED'));

  it('lists from memory exactly what the tables say, in the same order, page by page', async () => {
    const cat = `mem-${randomUUID().slice(0, 8)}`;
    const providers = await Promise.all(Array.from({ length: 8 }, () => ex.signUp()));
    for (let i = 0; i < 24; i++) {
      const price = [5, 300, 900, 300][i % 4]!;
      const latency = [50, 800, 5000][i % 3]!;
      unwrap(await providers[i % 8]!.client.createService(body({ category: cat, name: `S${i}`, tags: i % 2 ? ['odd', 'n'] : ['n'], pricing: { model: 'fixed', basePriceCents: price }, sla: { maxLatencyMs: latency, timeoutMs: 6000 } })));
    }
    const sql = new pg.Client({ connectionString: ex.databaseUrl });
    await sql.connect();
    try {
      // Some providers stopped delivering (D22.3): as the catalog's liveness sweep would write it.
      for (const [i, liveness] of [[1, 0.4291], [4, 0.6364], [6, 0.2]] as const) {
        await sql.query(`update catalog.providers set liveness = $2, liveness_state = 'stalled' where agent_id = $1`, [providers[i]!.agentId, liveness]);
      }
      // The order D7.5 defines (scaled by the provider's liveness, D22.3), computed by Postgres over the tables.
      const ORDER: Record<string, string> = {
        composite_rank: `((0.5 * p.trust_score / 100.0 + 0.3 * greatest(0, 1 - ln(greatest(1, s.price_cents)) / ln(1000000)) + 0.2 * greatest(0, 1 - ln(greatest(1, s.max_latency_ms)) / ln(86400000))) * (0.5 + 0.5 * p.liveness)) desc`,
        price_asc: 's.price_cents asc', price_desc: 's.price_cents desc', trust_score: 'p.trust_score desc', created_at: 's.created_at desc',
      };
      const expected = async (sortBy: string, where: string, limit: number, offset: number) => (await sql.query<{ name: string }>(
        `select s.name from catalog.services s join catalog.providers p on p.agent_id = s.agent_id
         where s.category = $1 and s.status = 'active' and p.status = 'active' ${where}
         order by ${ORDER[sortBy]}, s.created_at desc, s.id limit ${limit} offset ${offset}`, [cat])).rows.map((r) => r.name);
      for (const sortBy of Object.keys(ORDER)) {
        for (const [query, where] of [[{}, ''], [{ tags: 'odd' }, `and s.tags @> '{odd}'`], [{ maxPriceCents: 300, maxLatencyMs: 800 }, 'and s.price_cents <= 300 and s.max_latency_ms <= 800']] as const) {
          for (const [limit, offset] of [[5, 0], [5, 5], [7, 20], [100, 0]] as const) {
            const got = await stranger.client.listServices({ category: cat, sortBy, limit, offset, ...query });
            expect(unwrap(got).map((x) => x.name), `${sortBy} ${JSON.stringify(query)} ${limit}/${offset}`).toEqual(await expected(sortBy, where, limit, offset));
          }
        }
      }
    } finally {
      await sql.end();
    }
  });

  it('drops a deactivated provider’s services from listing and discovery within a second (D6.5)', async () => {
    const doomed = await ex.signUp();
    const s = unwrap(await doomed.client.createService(body({ category, name: 'Doomed', description: 'Quantum flux capacitor calibration for time travellers.' })));
    await eventually(async () => unwrap(await stranger.client.discover({ need: 'flux capacitor calibration' })).matches.some((m) => m.serviceId === s.id));
    unwrap(await ex.admin.suspendAgent(doomed.agentId));
    const started = Date.now();
    await eventually(async () => {
      const listed = (await ids({})).includes('Doomed');
      const found = unwrap(await stranger.client.discover({ need: 'flux capacitor calibration' })).matches.some((m) => m.serviceId === s.id);
      return !listed && !found;
    }, 5000, 20);
    expect(Date.now() - started).toBeLessThan(1000);
    // The contract itself stays readable (transactions refer to it).
    expect(unwrap(await stranger.client.getService(s.id)).status).toBe('active');
  });
});

async function contract(serviceId: string, revision?: number) {
  return callOrThrow(ex.bus, catalogOps.getContract, { ctx: { requestId: randomUUID(), principal: null }, input: { path: { serviceId }, query: revision ? { revision } : {}, body: {} } }, 5000);
}

describe('queries are stored with their queryId (D8.5)', () => {
  it('records the query, the caller and what it returned', async () => {
    const r = unwrap(await stranger.client.discover({ need: 'translate a sentence', limit: 5 }));
    const client = new pg.Client({ connectionString: ex.databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query('select agent_id, request, total_matches, results, scorer from catalog.discovery_queries where id = $1', [r.queryId]);
      expect(rows[0]).toMatchObject({ agent_id: stranger.agentId, request: { need: 'translate a sentence', limit: 5 }, total_matches: r.totalMatches, scorer: 'lexical-semantic-v1' });
      expect(rows[0].results).toEqual(r.matches.map((m) => ({ serviceId: m.serviceId, compatibilityScore: m.compatibilityScore })));
    } finally {
      await client.end();
    }
  });
});
