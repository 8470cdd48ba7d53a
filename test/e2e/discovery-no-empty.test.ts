import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import type { CreateServiceBody, DiscoverBody } from '@aex/contracts';
import { startTestExchange, type Member, type TestExchange } from './harness.js';

// D22.4: a discover never answers an empty list without saying why. Through the gateway, on one
// small catalog registered for the file (read by every test, changed by none): weak answers are
// marked, a misspelled need gets a suggestion, and an empty answer says what emptied it.
let ex: TestExchange;
let consumer: Member;

const service = (name: string, category: string, description: string, tags: string[], priceCents: number, input = 'text'): CreateServiceBody => ({
  name, description, version: '1.0.0', category, tags,
  inputSchema: { type: 'object', properties: { [input]: { type: 'string' } }, required: [input] },
  outputSchema: { type: 'object', properties: { result: { type: 'string' } } },
  pricing: { model: 'fixed', basePriceCents: priceCents }, sla: { maxLatencyMs: 1000, timeoutMs: 5000 },
});

beforeAll(async () => {
  ex = await startTestExchange({ RATE_LIMIT_DISCOVERY_PER_MIN: '99999' });
  const provider = await ex.signUp();
  consumer = await ex.signUp();
  for (const s of [
    service('Currency Converter', 'finance', 'Converts amounts between currencies at current exchange rates.', ['currency', 'fx'], 5),
    service('Stock Quotes', 'finance', 'Latest share prices of companies listed on stock markets.', ['stocks', 'shares'], 40),
    service('Weather Forecast', 'weather', 'Hourly forecasts of temperature and precipitation for any city.', ['forecast', 'weather'], 2),
    service('Image Resizer', 'images', 'Resizes photos to exact pixel dimensions.', ['resize', 'thumbnails'], 1, 'imageUrl'),
    service('Speech Transcription', 'speech', 'Transcribes recorded interviews and meetings into text.', ['transcription', 'audio'], 20),
  ]) unwrap(await provider.client.createService(s));
});
afterAll(async () => ex?.stop());

const find = async (body: DiscoverBody) => unwrap(await consumer.client.discover(body));

describe('weak answers are marked (D22.4)', () => {
  it('answers a confident match as before, with no warning and no lowConfidence on it', async () => {
    const r = await find({ need: 'convert 250 euros to yen' });
    expect(r.matches[0]!.serviceName).toBe('Currency Converter');
    expect(r.matches[0]).not.toHaveProperty('lowConfidence');
    expect(r.warnings).toEqual([]);
    // The weaker ones after it are marked one by one.
    expect(r.matches.slice(1).every((m) => m.lowConfidence === true)).toBe(true);
  });

  it('shows the closest few, marked low-confidence and not counted, when nothing clears the relevance floor', async () => {
    const r = await find({ need: 'plan the seating at my wedding reception' });
    expect(r.matches).toHaveLength(3);
    expect(r.matches.every((m) => m.lowConfidence === true)).toBe(true);
    expect(r.totalMatches).toBe(0);
    expect(r.warnings).toEqual([{ code: 'NO_CONFIDENT_MATCH', message: expect.stringContaining('the 3 closest are shown') }]);
    // Never more than the limit asked for.
    expect((await find({ need: 'plan the seating at my wedding reception', limit: 1 })).matches).toHaveLength(1);
  });

  it('warns when the matches clear the floor but none relates confidently', async () => {
    const r = await find({ need: 'design a knitting pattern for a scarf' });
    expect(r.matches.length).toBeGreaterThan(0);
    expect(r.totalMatches).toBe(r.matches.length);
    expect(r.matches.every((m) => m.lowConfidence === true)).toBe(true);
    expect(r.warnings).toEqual([{ code: 'NO_CONFIDENT_MATCH', message: expect.stringContaining('only weakly') }]);
  });
});

describe('a weak answer whose confident matches the filters removed (D22.4)', () => {
  it('says which filter turned the confident ones away', async () => {
    // The converter (5 cents) answers it; only a weak match fits a budget of 2.
    const r = await find({ need: 'design a knitting pattern for a scarf or convert 250 euros to yen', maxBudgetCents: 2 });
    expect(r.matches.length).toBeGreaterThan(0);
    expect(r.matches.every((m) => m.lowConfidence === true && m.serviceName !== 'Currency Converter')).toBe(true);
    expect(r.warnings).toEqual([{
      code: 'NO_CONFIDENT_MATCH',
      message: expect.stringContaining('The filters removed 1 service that relates to it confidently: 1 costs more than maxBudgetCents 2 (the cheapest costs 5).'),
      details: { removedBy: [{ filter: 'maxBudgetCents', services: 1, cheapestCents: 5 }] },
    }]);
  });
});

describe('a misspelled need (D22.4)', () => {
  it('is answered as corrected, with the corrected need suggested', async () => {
    const r = await find({ need: 'trasncribe this intervew audio' });
    expect(r.matches[0]!.serviceName).toBe('Speech Transcription');
    expect(r.warnings).toEqual([{
      code: 'SPELLING_SUGGESTION',
      message: expect.stringContaining('Did you mean "transcribe this interview audio"?'),
      details: { suggestedNeed: 'transcribe this interview audio', corrections: [{ word: 'trasncribe', suggestion: 'transcribe' }, { word: 'intervew', suggestion: 'interview' }] },
    }]);
  });
});

describe('an empty answer says what emptied it (D22.4)', () => {
  it('names the budget filter, how many it removed and the cheapest price it turned away', async () => {
    const r = await find({ need: 'transcribe an interview', maxBudgetCents: 10 });
    expect(r).toMatchObject({ matches: [], totalMatches: 0 });
    const w = r.warnings[0]!;
    expect(w.code).toBe('NO_MATCH');
    expect(w.details!.removedBy).toEqual([{ filter: 'maxBudgetCents', services: w.details!.candidates, cheapestCents: 20 }]);
    expect(w.message).toContain(`${w.details!.candidates} cost more than maxBudgetCents 10 (the cheapest costs 20)`);
  });

  it('names the categories a category filter turned away', async () => {
    const r = await find({ need: 'weather forecast for Oslo', category: 'images' });
    expect(r.matches).toEqual([]);
    expect(r.warnings[0]).toMatchObject({
      code: 'NO_MATCH',
      message: '1 service relates to the need, but the filters removed every one: 1 is not in category "images" (it is in weather).',
      details: { activeServices: 5, candidates: 1, removedBy: [{ filter: 'category', services: 1, categories: ['weather'] }] },
    });
  });

  it('names the trust filter and the highest trust score it turned away', async () => {
    const r = await find({ need: 'currency converter', minTrustScore: 90 });
    expect(r.matches).toEqual([]);
    expect(r.warnings[0]!.details!.removedBy).toEqual([{ filter: 'minTrustScore', services: r.warnings[0]!.details!.candidates, highestTrustScore: 50 }]);
    expect(r.warnings[0]!.message).toContain('a trust score below minTrustScore 90 (the highest is 50)');
  });

  it('without a need, counts the services whose input the consumer cannot supply, after the category', async () => {
    const r = await find({ category: 'finance', inputAvailable: { colour: 'blue' } });
    expect(r.matches).toEqual([]);
    expect(r.warnings[0]).toMatchObject({
      code: 'NO_MATCH',
      message: '5 services are active, but the filters removed every one: 3 are not in category "finance" (they are in images, speech, weather); 2 cannot take inputAvailable (it supplies none of their required input).',
      details: { activeServices: 5, candidates: 5 },
    });
  });

  it('says so when no service relates to the need at all', async () => {
    const r = await find({ need: 'zyxwvut qqqq' });
    expect(r).toMatchObject({ matches: [], totalMatches: 0 });
    expect(r.warnings).toEqual([{ code: 'NO_MATCH', message: expect.stringContaining('No service relates to the need'), details: { activeServices: 5, candidates: 0 } }]);
  });
});
