import { describe, expect, it } from 'vitest';
import type { Lexicon } from '../src/discovery/lexicon.js';
import { LexicalSemanticScorer, MIN_RELEVANCE } from '../src/discovery/scorer.js';
import { WordNet } from '../src/discovery/thesaurus.js';

// What the scorer tells discovery beyond the matches (D22.4): the services under the relevance
// floor, for an answer nothing clears it for, and the words it read as others.

const dims = 8;
/** A unit vector whose cosine with the first axis is `cos`. */
const at = (cos: number) => Float32Array.from({ length: dims }, (_, k) => (k === 0 ? cos : k === 1 ? Math.sqrt(1 - cos * cos) : 0));
/** An encoder that reads every need as the first axis. */
const encoder = { name: 'axis', dims, embed: async (texts: string[]) => texts.map(() => at(1)), close: async () => undefined };

describe('services under the relevance floor', () => {
  const lexicon: Lexicon = { stems: async (ws) => new Map(ws.map((w) => [w, w])), corrections: async () => [] };

  it('are left out of the matches and given, with their relevance, only when asked', async () => {
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet(), encoder);
    scorer.upsert({ id: 'word', searchDoc: "'parcel':1A", expansionDoc: '', embedding: at(0) });
    // Cosine 0.2: close enough to count (above 0.15), too little to match by meaning alone.
    scorer.upsert({ id: 'near', item: undefined, searchDoc: "'boat':1A", expansionDoc: '', embedding: at(0.2) });
    scorer.upsert({ id: 'unrelated', searchDoc: "'boat':1A", expansionDoc: '', embedding: at(0.05) });
    const r = await scorer.relevance('parcel');
    expect(r.ids).toEqual(['word']);
    const faint = r.faint!();
    expect(faint.values).toHaveLength(1);
    // 0.3 × (0.2 − 0.15) / 0.45
    expect(faint.values[0]).toBeCloseTo(0.3 * (0.05 / 0.45), 2);
    expect(faint.values[0]).toBeLessThan(MIN_RELEVANCE);
  });

  it('are the items indexed under them, and not one removed since the query', async () => {
    const scorer = new LexicalSemanticScorer<{ name: string }>(lexicon, new WordNet(), encoder);
    scorer.upsert({ id: 'near', item: { name: 'near one' }, searchDoc: "'boat':1A", expansionDoc: '', embedding: at(0.2) });
    scorer.upsert({ id: 'gone', item: { name: 'gone' }, searchDoc: "'boat':1A", expansionDoc: '', embedding: at(0.21) });
    const r = await scorer.relevance('parcel');
    expect(r.ids).toEqual([]);
    scorer.remove('gone');
    expect(r.faint!().items).toEqual([{ name: 'near one' }]);
  });
});

describe('words read as others (spelling)', () => {
  it('reads a misspelled word as the closest spelling some indexed service uses, and says so', async () => {
    // The vocabulary offers "transcript" first, a word of no service indexed now (a deleted one's).
    const lexicon: Lexicon = {
      stems: async (ws) => new Map(ws.map((w) => [w, w])),
      corrections: async (w) => (w === 'trasncribe' ? [{ word: 'transcript', edits: 2 }, { word: 'transcribe', edits: 2 }] : []),
    };
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet());
    scorer.upsert({ id: 'stt', searchDoc: "'transcribe':1A 'audio':2A", expansionDoc: '', embedding: null });
    const r = await scorer.relevance('trasncribe audio');
    expect(r.corrections).toEqual([{ word: 'trasncribe', suggestion: 'transcribe' }]);
    expect(r.ids).toEqual(['stt']);
    expect((await scorer.relevance('audio')).corrections).toBeUndefined();
  });
});
