import { describe, expect, it } from 'vitest';
import type { Lexicon } from '../src/discovery/lexicon.js';
import type { Relevance, ScorableDocument } from '../src/discovery/relevance-scorer.js';
import { LexicalSemanticScorer } from '../src/discovery/scorer.js';
import { WordNet } from '../src/discovery/thesaurus.js';

/** A relevance as a map by id, to look up a few. */
const relevanceMap = (r: Relevance): Map<string, number> => new Map(r.ids.map((id, i) => [id, r.values[i]!]));

describe('LexicalSemanticScorer', () => {
  // A lexicon standing in for Postgres: lower-case, strip a plural "s"; no vocabulary.
  const lexicon: Lexicon = {
    stems: async (ws) => new Map(ws.map((w) => [w, w.replace(/s$/, '')])),
    corrections: async () => [],
  };
  const doc = (id: string, a: string, c = ''): ScorableDocument => ({
    id,
    searchDoc: [...a.split(' ').map((w) => `'${w}':1A`), ...c.split(' ').filter(Boolean).map((w) => `'${w}':9C`)].join(' '),
    expansionDoc: '',
    embedding: null,
  });

  it('scores 1 when every concept appears as itself in the name, less through relations and weaker fields', async () => {
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet());
    scorer.upsert(doc('exact', 'car valuation'));
    scorer.upsert(doc('synonym', 'automobile valuation'));
    scorer.upsert(doc('described', 'pricing', 'car valuation'));
    scorer.upsert(doc('other', 'weather'));
    const r = relevanceMap(await scorer.relevance('car valuation'));
    expect(r.get('exact')).toBeCloseTo(1, 5);
    expect(r.get('synonym')!).toBeLessThan(r.get('exact')!);
    expect(r.get('synonym')!).toBeGreaterThan(0);
    expect(r.get('described')!).toBeLessThan(r.get('exact')!);
    expect(r.has('other')).toBe(false);
  });

  it('forgets removed and replaced documents', async () => {
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet());
    scorer.upsert(doc('a', 'car'));
    scorer.upsert(doc('a', 'boat'));
    expect((relevanceMap(await scorer.relevance('car'))).has('a')).toBe(false);
    scorer.remove('a');
    expect((relevanceMap(await scorer.relevance('boat'))).size).toBe(0);
    expect(scorer.size).toBe(0);
  });

  it('keeps scoring right across compactions of its postings', async () => {
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet());
    for (let i = 0; i < 2500; i++) scorer.upsert(doc(`d${i % 500}`, i % 2 ? 'car' : 'boat'));
    const r = relevanceMap(await scorer.relevance('car'));
    expect(scorer.size).toBe(500);
    expect([...r.keys()].every((id) => Number(id.slice(1)) % 2 === 1)).toBe(true);
    expect(r.size).toBe(250);
  });
});

const dims = 8;
const unit = (seed: number) => Float32Array.from({ length: dims }, (_, k) => (k === seed % dims ? 1 : 0));
// An encoder that answers after a random pause: the index changes under every query, between its
// snapshot and its answer. A pause in time on purpose: the writer below changes the index on turns
// of the event loop of its own, and a random pause lands each query's answer among them at a
// different point (nothing to await would do that).
const pause = () => new Promise<void>((r) => setTimeout(r, Math.random() * 2));
const slowEncoder = {
  name: 'slow', dims,
  embed: async (texts: string[]) => {
    await pause();
    return texts.map((_, i) => unit(i));
  },
  close: async () => undefined,
};

describe('a consistent view while the index changes (discover never fails mid-query)', () => {
  const lexicon: Lexicon = { stems: async (ws) => new Map(ws.map((w) => [w, w])), corrections: async () => [] };

  it('answers thousands of queries racing upserts, removals and compactions, with only documents indexed at answer time', async () => {
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet(), slowEncoder);
    const live = new Set<string>();
    const put = (id: string) => {
      scorer.upsert({ id, searchDoc: "'parcel':1A 'track':2A", expansionDoc: '', embedding: unit(Number(id.slice(1))) });
      live.add(id);
    };
    const drop = (id: string) => {
      scorer.remove(id);
      live.delete(id);
    };
    for (let i = 0; i < 300; i++) put(`s${i}`);
    let stop = false;
    let writes = 0;
    // The writer: every turn of the event loop, a burst of upserts and removals (enough removals for
    // the postings to be compacted many times over).
    const writer = (async () => {
      while (!stop) {
        for (let k = 0; k < 40; k++) {
          const id = `s${Math.floor(Math.random() * 600)}`;
          if (Math.random() < 0.5) drop(id);
          else put(id);
          writes += 1;
        }
        await new Promise((r) => setImmediate(r));
      }
    })();
    let queries = 0;
    const failures: string[] = [];
    // At least 250 queries each, and on until the writer has made 5,000 changes: how many it makes
    // per query depends on the machine's load, which a count of queries alone left to chance.
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let i = 0; i < 250 || writes <= 5000; i++) {
        const found = await scorer.relevance('track a parcel');
        const [scores, meaningError] = [relevanceMap(found), found.meaningError];
        queries += 1;
        if (meaningError) failures.push(meaningError);
        for (const [id, r] of scores) {
          if (!live.has(id)) failures.push(`${id} returned after its removal`);
          // Both words in the name (0.7) plus, for the documents whose embedding is the need's, meaning (0.3).
          const expected = Number(id.slice(1)) % dims === 0 ? 1 : 0.7;
          if (Math.abs(r - expected) > 1e-6) failures.push(`${id} scored ${r}, not ${expected}`);
        }
      }
    }));
    stop = true;
    await writer;
    expect(failures).toEqual([]);
    expect(queries).toBeGreaterThanOrEqual(2000);
    // Removals far beyond the compaction threshold happened while queries were reading.
    expect(writes).toBeGreaterThan(5000);
  }, 60_000);

  it('falls back to words alone, saying why, when the encoder fails or is down', async () => {
    const failing = { ...slowEncoder, embed: async () => Promise.reject(new Error('worker crashed')) };
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet(), failing);
    scorer.upsert({ id: 'a', searchDoc: "'parcel':1A", expansionDoc: '', embedding: unit(1) });
    const r = await scorer.relevance('parcel');
    expect(r.meaningError).toBe('worker crashed');
    expect(relevanceMap(r).get('a')).toBeCloseTo(1, 5);
    const down = new LexicalSemanticScorer(lexicon, new WordNet(), { ...slowEncoder, problem: 'the sentence encoder stopped (out of memory); restarting' });
    down.upsert({ id: 'a', searchDoc: "'parcel':1A", expansionDoc: '', embedding: unit(1) });
    const d = await down.relevance('parcel');
    expect(d.meaningError).toMatch(/stopped/);
    expect(relevanceMap(d).has('a')).toBe(true);
  });
});
