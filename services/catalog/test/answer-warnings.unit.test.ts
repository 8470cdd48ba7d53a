import { describe, expect, it } from 'vitest';
import { answerWarnings, noMatchWarning, spellingWarning } from '../src/discovery/answer-warnings.js';
import { filteredBy, tallyFilters } from '../src/discovery/discover-filters.js';
import type { IndexedService } from '../src/discovery/index-store.js';

/** An indexed service with what the filters read; the rest is not looked at. */
const indexed = (over: { category?: string; price?: number; trust?: number; status?: string }): IndexedService => ({
  id: crypto.randomUUID(), agentId: 'a', category: (over.category ?? 'text').toLowerCase(), categoryExact: over.category ?? 'text',
  budgetFloorCents: over.price ?? 10, priceCents: over.price ?? 10,
  provider: { name: 'p', status: over.status ?? 'active', trustScore: over.trust ?? 50, writtenXid: '1' },
} as unknown as IndexedService);

const noIo = () => null;

describe('what removed the candidates of an empty answer (D22.4)', () => {
  it('counts each service under the first filter that removes it, in the order the filters apply', () => {
    const candidates = [
      indexed({ category: 'Images', price: 500, trust: 10 }), // category first, though budget and trust would remove it too
      indexed({ category: 'images' }),
      indexed({ category: 'Text', price: 150, trust: 10 }), // budget before trust
      indexed({ price: 300 }),
      indexed({ trust: 62 }),
      indexed({ trust: 40 }),
      indexed({ status: 'inactive' }), // a provider that is not active: no candidate at all
    ];
    const t = tallyFilters(candidates, { category: 'text', maxBudgetCents: 100, minTrustScore: 80 }, noIo);
    expect(t.candidates).toBe(6);
    expect(t.removed.map((r) => [r.filter, r.services])).toEqual([['category', 2], ['maxBudgetCents', 2], ['minTrustScore', 2]]);
    expect(t.removed[1]!.cheapestCents).toBe(150);
    expect(t.removed[2]!.highestTrustScore).toBe(62);
    expect([...t.removed[0]!.categories!]).toEqual([['Images', 1], ['images', 1]]);
  });
  it('passes a service every filter lets through', () => {
    expect(filteredBy(indexed({ price: 100, trust: 80 }), { maxBudgetCents: 100, minTrustScore: 80 })).toBeNull();
    expect(filteredBy(indexed({ category: 'TEXT' }), { category: 'text' })).toBeNull();
  });
  it('says in words which filter removed how many, with the nearest value each turned away', () => {
    const t = tallyFilters([indexed({ price: 150 }), ...Array.from({ length: 11 }, () => indexed({ price: 400 }))], { maxBudgetCents: 100 }, noIo);
    const w = noMatchWarning(t, { need: 'x', maxBudgetCents: 100 }, 40, 'match');
    expect(w.code).toBe('NO_MATCH');
    expect(w.message).toBe('12 services relate to the need, but the filters removed every one: 12 cost more than maxBudgetCents 100 (the cheapest costs 150).');
    expect(w.details).toEqual({ activeServices: 40, candidates: 12, removedBy: [{ filter: 'maxBudgetCents', services: 12, cheapestCents: 150 }] });
  });
  it('names the categories a category filter turned away and the highest trust a trust filter did, in the singular too', () => {
    const t = tallyFilters([indexed({ category: 'translation' }), indexed({ category: 'translation' }), indexed({ category: 'language' }), indexed({ trust: 30 })], { category: 'images', minTrustScore: 50 }, noIo);
    // The trust-filtered one is in category "text" too, so the category filter takes it first.
    expect(t.removed.map((r) => r.filter)).toEqual(['category']);
    const one = tallyFilters([indexed({ trust: 30 })], { minTrustScore: 50 }, noIo);
    expect(noMatchWarning(one, { minTrustScore: 50 }, 3, 'all').message)
      .toBe('1 service is active, but the filters removed every one: 1 has a trust score below minTrustScore 50 (the highest is 30).');
    expect(noMatchWarning(t, { need: 'n', category: 'images', minTrustScore: 50 }, 9, 'faint').message)
      .toBe('4 services relate to the need, though only faintly, but the filters removed every one: 4 are not in category "images" (they are in translation, language, text).');
  });
  it('blames an input or output the services cannot take when there is no need', () => {
    const io = (s: IndexedService) => (s.priceCents === 1 ? 'inputAvailable' as const : 'outputRequired' as const);
    const t = tallyFilters([indexed({ price: 1 }), indexed({ price: 2 }), indexed({ price: 2 })], {}, io);
    const w = noMatchWarning(t, { inputAvailable: { a: 1 }, outputRequired: { b: 'x' } }, 3, 'all');
    expect(w.message).toContain('1 cannot take inputAvailable');
    expect(w.message).toContain('2 provide none of the properties outputRequired asks for');
  });
  it('says when the exchange has no active service, or none relates to the need', () => {
    const none = tallyFilters([], {}, noIo);
    expect(noMatchWarning(none, {}, 0, 'all')).toMatchObject({ code: 'NO_MATCH', message: expect.stringContaining('No service is active'), details: { activeServices: 0 } });
    expect(noMatchWarning(none, { need: 'qqq' }, 7, 'match')).toMatchObject({ message: expect.stringContaining('none of the 7 services active on the exchange shares a word or a meaning'), details: { activeServices: 7, candidates: 0 } });
  });
});

describe('weak answers and spelling (D22.4)', () => {
  it('warns NO_CONFIDENT_MATCH only when no match shown is confident', () => {
    const base = { need: 'n', closestOnly: false, corrections: undefined };
    expect(answerWarnings({ ...base, shown: [{}, { lowConfidence: true }] })).toEqual([]);
    expect(answerWarnings({ ...base, shown: [] })).toEqual([]);
    expect(answerWarnings({ ...base, shown: [{ lowConfidence: true }] })[0]).toMatchObject({ code: 'NO_CONFIDENT_MATCH', message: expect.stringContaining('only weakly') });
    expect(answerWarnings({ ...base, closestOnly: true, shown: [{ lowConfidence: true }, { lowConfidence: true }] })[0]!.message).toContain('the 2 closest are shown');
  });
  it('names the filters that removed the confidently related services of a weak answer', () => {
    const base = { need: 'n', closestOnly: false, corrections: undefined, shown: [{ lowConfidence: true as const }] };
    const tally = { candidates: 2, removed: [{ filter: 'minTrustScore' as const, services: 2, highestTrustScore: 40 }] };
    expect(answerWarnings({ ...base, confidentRemoved: { tally, body: { minTrustScore: 60 } } })[0]).toEqual({
      code: 'NO_CONFIDENT_MATCH',
      message: expect.stringContaining('The filters removed 2 services that relate to it confidently: 2 have a trust score below minTrustScore 60 (the highest is 40).'),
      details: { removedBy: [{ filter: 'minTrustScore', services: 2, highestTrustScore: 40 }] },
    });
    // Nothing removed: the plain warning.
    expect(answerWarnings({ ...base, confidentRemoved: { tally: { candidates: 1, removed: [] }, body: {} } })[0]).toEqual({ code: 'NO_CONFIDENT_MATCH', message: expect.stringContaining('only weakly') });
  });

  it('suggests the need with each misspelled word replaced, whole words only and in any script', () => {
    const w = spellingWarning('Trasncribe this intervew; intervewer stays', [{ word: 'trasncribe', suggestion: 'transcribe' }, { word: 'intervew', suggestion: 'interview' }]);
    expect(w.code).toBe('SPELLING_SUGGESTION');
    expect(w.details!.suggestedNeed).toBe('transcribe this interview; intervewer stays');
    expect(w.message).toBe('Did you mean "transcribe this interview; intervewer stays"? Some words look misspelled and were read as the catalog\'s: "trasncribe" as "transcribe", "intervew" as "interview".');
    expect(spellingWarning('übersetzng bitte', [{ word: 'übersetzng', suggestion: 'übersetzung' }]).details!.suggestedNeed).toBe('übersetzung bitte');
    expect(spellingWarning('a.b+c', [{ word: 'b+c', suggestion: 'x' }]).details!.suggestedNeed).toBe('a.x');
  });
  it('adds the spelling suggestion only when a word was corrected', () => {
    expect(answerWarnings({ need: 'fine words', shown: [{}], closestOnly: false, corrections: [] })).toEqual([]);
    expect(answerWarnings({ need: 'wether', shown: [{}], closestOnly: false, corrections: [{ word: 'wether', suggestion: 'weather' }] }).map((w) => w.code)).toEqual(['SPELLING_SUGGESTION']);
  });
});
