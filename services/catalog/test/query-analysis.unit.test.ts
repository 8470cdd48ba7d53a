import { describe, expect, it } from 'vitest';
import { editDistance } from '../src/discovery/lexicon.js';
import { needTokens } from '../src/discovery/need.js';
import { correctionWeight, maxEdits, relationWeight } from '../src/discovery/need-concepts.js';
import { parseTsvector } from '../src/discovery/scorer.js';
import { WordNet } from '../src/discovery/thesaurus.js';

describe('query analysis', () => {
  it('keeps content words, splits identifiers, drops filler', () => {
    expect(needTokens('I need an API that can translate sourceText into German, please!')).toEqual(['translate', 'source', 'text', 'german']);
    expect(needTokens("the customer's invoices 2024")).toEqual(['customer', 'invoices']);
  });
  it('measures edits with transpositions as one', () => {
    expect(editDistance('tranlsate', 'translate')).toBe(1);
    expect(editDistance('wether', 'weather')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('abc', 'xyzxyz', 2)).toBe(3);
  });
  it('allows one edit per four letters and trusts closer corrections more', () => {
    expect(maxEdits('resze')).toBe(1);
    expect(maxEdits('tranlsate')).toBe(2);
    expect(correctionWeight(1)).toBeGreaterThan(correctionWeight(2));
  });
  it('weighs relations below the word itself, rarer senses lower', () => {
    for (const r of ['synonym', 'derived', 'similar', 'broader', 'narrower', 'broader2', 'gloss'] as const) {
      expect(relationWeight(r, 0)).toBeLessThan(1);
      expect(relationWeight(r, 1)).toBeLessThan(relationWeight(r, 0));
    }
  });
  it('parses a tsvector with its best weight class per lexeme', () => {
    expect([...parseTsvector("'digest':3A,10C 'hash':5 'it''s':2B 'bare'")]).toEqual([['digest', 4], ['hash', 1], ["it's", 3], ['bare', 1]]);
  });
});

describe('WordNet thesaurus', () => {
  const wn = new WordNet();
  it('finds base forms of inflected words', () => {
    expect(wn.lemmas('images')).toContain('image');
    expect(wn.lemmas('translating')).toContain('translate');
    expect(wn.lemmas('qqqzz')).toEqual([]);
  });
  it('relates synonyms, derivations, broader terms and definitions', () => {
    const rel = (w: string) => wn.related(w).map((r) => `${r.word}:${r.relation}`);
    expect(rel('car')).toContain('automobile:synonym');
    expect(rel('translate')).toContain('translation:derived');
    expect(rel('euro')).toContain('monetary:gloss');
    expect(rel('euro')).toContain('unit:broader');
  });
});
