import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap, type Outcome } from '@agent-exchange/client';
import { catalogOps, type CreateServiceBody } from '@aex/contracts';
import { callOrThrow } from '@aex/platform';
import { expectError, startTestExchange, type Member, type TestExchange } from './harness.js';

// D22.5: a contract's sample needs — phrases its provider says the service answers — through the
// gateway: checked, stored, shown, changed, and matched like the description.
let ex: TestExchange;
let provider: Member;
let consumer: Member;

const body = (category: string, over: Partial<CreateServiceBody> = {}): CreateServiceBody => ({
  name: 'String Symmetry Check',
  description: 'Tells whether a string is symmetric.',
  version: '1.0.0',
  category,
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  outputSchema: { type: 'object', properties: { result: { type: 'boolean' } } },
  pricing: { model: 'fixed', basePriceCents: 3 },
  sla: { maxLatencyMs: 100, timeoutMs: 1000 },
  ...over,
});
const category = () => `samples-${randomUUID().slice(0, 8)}`;
const fields = (r: Outcome<unknown>) => (r.ok ? [] : r.error.errors.map((e) => e.field));

beforeAll(async () => {
  ex = await startTestExchange({ RATE_LIMIT_WRITE_PER_MIN: '100000', RATE_LIMIT_DISCOVERY_PER_MIN: '99999' });
  provider = await ex.signUp();
  consumer = await ex.signUp();
});
afterAll(async () => ex?.stop());

describe('sampleNeeds on a contract (D22.5)', () => {
  it('are stored trimmed and shown by create, get and list; a contract without them shows none', async () => {
    const cat = category();
    const s = unwrap(await provider.client.createService(body(cat, { sampleNeeds: ['  is this a palindrome ', 'does this read the same backwards'] })));
    expect(s.sampleNeeds).toEqual(['is this a palindrome', 'does this read the same backwards']);
    expect(unwrap(await consumer.client.getService(s.id)).sampleNeeds).toEqual(s.sampleNeeds);
    const plain = unwrap(await provider.client.createService(body(cat, { name: 'Plain' })));
    expect(plain.sampleNeeds).toEqual([]);
    const listed = unwrap(await consumer.client.listServices({ category: cat }));
    expect(Object.fromEntries(listed.map((x) => [x.name, x.sampleNeeds]))).toEqual({ 'String Symmetry Check': s.sampleNeeds, Plain: [] });
    // The provider's A2A card offers them as the skill's example prompts.
    const card = (await (await fetch(`${ex.url}/agents/${provider.agentId}/agent-card.json`)).json()) as { skills: { id: string; examples?: string[] }[] };
    expect(card.skills.find((k) => k.id === s.id)!.examples).toEqual(s.sampleNeeds);
  });

  it('are refused with 400 VALIDATION_ERROR pointing at each bad phrase, on create and on change', async () => {
    const cat = category();
    const bad = await provider.client.createService(body(cat, { sampleNeeds: ['no', 'is this a palindrome', 'read\u202Ebackwards', 'IS THIS A PALINDROME'] }));
    expectError(bad, 400, 'VALIDATION_ERROR');
    expect(fields(bad)).toEqual(['/body/sampleNeeds/0', '/body/sampleNeeds/2', '/body/sampleNeeds/3']);
    expect(bad.ok ? '' : bad.error.errors[1]!.message).toContain('U+202E');
    const many = await provider.client.createService(body(cat, { sampleNeeds: Array.from({ length: 11 }, (_, i) => `sample need ${i}`) }));
    expectError(many, 400, 'VALIDATION_ERROR');
    expect(fields(many)).toEqual(['/body/sampleNeeds']);
    const notText = await provider.client.createService(body(cat, { sampleNeeds: [42 as unknown as string] }));
    expectError(notText, 400, 'VALIDATION_ERROR');
    expect(fields(notText)).toEqual(['/body/sampleNeeds/0']);
    const s = unwrap(await provider.client.createService(body(cat)));
    const change = await provider.client.updateService(s.id, { sampleNeeds: ['a\u200Bb c'] });
    expectError(change, 400, 'VALIDATION_ERROR');
    expect(fields(change)).toEqual(['/body/sampleNeeds/0']);
    // Nothing was registered or changed by a refused request.
    expect(unwrap(await consumer.client.listServices({ category: cat })).map((x) => [x.id, x.sampleNeeds])).toEqual([[s.id, []]]);
  });

  it('make a service found for a need only they match, ahead of its twin without them', async () => {
    const cat = category();
    const withSamples = unwrap(await provider.client.createService(body(cat, { sampleNeeds: ['does this word read the same backwards', 'is this a palindrome'] })));
    const twin = unwrap(await provider.client.createService(body(cat)));
    const r = unwrap(await consumer.client.discover({ need: 'does racecar read the same backwards', category: cat }));
    expect(r.matches[0]).toMatchObject({ serviceId: withSamples.id });
    expect(r.matches[0]).not.toHaveProperty('lowConfidence');
    const twinMatch = r.matches.find((m) => m.serviceId === twin.id);
    expect(twinMatch === undefined || twinMatch.lowConfidence === true).toBe(true);
  });

  it('change with the service, without a new contract revision, and change what finds it', async () => {
    const cat = category();
    const s = unwrap(await provider.client.createService(body(cat, { sampleNeeds: ['is this a palindrome'] })));
    const revision = (await callOrThrow(ex.bus, catalogOps.getContract, { ctx: { requestId: randomUUID(), principal: null }, input: { path: { serviceId: s.id }, query: {}, body: {} } }, 5000)).revision;
    const need = 'how many syllables does this verse have';
    const before = unwrap(await consumer.client.discover({ need, category: cat }));
    expect(before.matches.every((m) => m.lowConfidence === true)).toBe(true);

    const changed = unwrap(await provider.client.updateService(s.id, { sampleNeeds: ['count the syllables in a verse of poetry'] }));
    expect(changed.sampleNeeds).toEqual(['count the syllables in a verse of poetry']);
    expect(unwrap(await consumer.client.getService(s.id)).sampleNeeds).toEqual(changed.sampleNeeds);
    // Descriptive, like the description: no new revision of the contract.
    expect((await callOrThrow(ex.bus, catalogOps.getContract, { ctx: { requestId: randomUUID(), principal: null }, input: { path: { serviceId: s.id }, query: {}, body: {} } }, 5000)).revision).toBe(revision);
    const after = unwrap(await consumer.client.discover({ need, category: cat }));
    expect(after.matches[0]).toMatchObject({ serviceId: s.id });
    expect(after.matches[0]).not.toHaveProperty('lowConfidence');
    // An update that leaves them out keeps them; an empty list removes them.
    expect(unwrap(await provider.client.updateService(s.id, { version: '1.0.1' })).sampleNeeds).toEqual(changed.sampleNeeds);
    expect(unwrap(await provider.client.updateService(s.id, { sampleNeeds: [] })).sampleNeeds).toEqual([]);
  });
});
