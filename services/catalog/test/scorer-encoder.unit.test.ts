import { describe, expect, it } from 'vitest';
import type { Lexicon } from '../src/discovery/lexicon.js';
import type { Relevance } from '../src/discovery/relevance-scorer.js';
import { LexicalSemanticScorer } from '../src/discovery/scorer.js';
import type { SentenceEncoder } from '../src/discovery/sentence-encoder.js';
import { WordNet } from '../src/discovery/thesaurus.js';

// D22.1: the scorer moving from one model's embeddings to another's. A query compares its need,
// embedded by one model, with that same model's vectors only — also when the model changes while it
// runs — and any number of dimensions is served.

const lexicon: Lexicon = { stems: async (ws) => new Map(ws.map((w) => [w, w])), corrections: async () => [] };
const axis = (dims: number, k: number) => Float32Array.from({ length: dims }, (_, i) => (i === k ? 1 : 0));
const relevanceMap = (r: Relevance): Map<string, number> => new Map(r.ids.map((id, i) => [id, r.values[i]!]));

/** An encoder of `dims` dimensions that embeds every text as axis `k`; `gate` holds its answers until opened. */
function encoder(name: string, dims: number, k: number, gate?: Promise<void>): SentenceEncoder & { calls: number } {
  return {
    name, dims, calls: 0,
    async embed(texts) {
      this.calls += 1;
      await gate;
      return texts.map(() => axis(dims, k));
    },
    close: async () => undefined,
  };
}

/** Documents sharing no word with the need "umbrella": only meaning can relate them. */
const doc = (id: string, embedding: Float32Array | null) => ({ id, searchDoc: "'unrelatedword':1A", expansionDoc: '', embedding });

describe('the scorer taking another model\'s embeddings (D22.1)', () => {
  it('ranks by the new model\'s vectors once it takes them, for any number of dimensions', async () => {
    const oldModel = encoder('old', 4, 0);
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet(), oldModel);
    scorer.upsert(doc('a', axis(4, 0)));
    scorer.upsert(doc('b', axis(4, 1)));
    expect([...relevanceMap(await scorer.relevance('umbrella')).keys()]).toEqual(['a']);

    const newModel = encoder('new', 1536, 700);
    const vectors = new Map([['b', axis(1536, 700)], ['a', axis(1536, 3)]]);
    await scorer.useEncoder(newModel, async (ids, set) => {
      expect(ids.sort()).toEqual(['a', 'b']);
      for (const id of ids) set(id, vectors.get(id)!);
    });
    expect(scorer.encoder).toBe(newModel);
    expect([...relevanceMap(await scorer.relevance('umbrella')).keys()]).toEqual(['b']);
    // A vector of other dimensions is none.
    scorer.upsert(doc('c', axis(4, 0)));
    expect(relevanceMap(await scorer.relevance('umbrella')).has('c')).toBe(false);
  });

  it('finishes a query begun before the change with the old model\'s need and vectors', async () => {
    let open!: () => void;
    const oldModel = encoder('old', 4, 0, new Promise<void>((r) => (open = r)));
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet(), oldModel);
    scorer.upsert(doc('a', axis(4, 0)));
    scorer.upsert(doc('b', axis(4, 1)));
    const running = scorer.relevance('umbrella');
    await expect.poll(() => oldModel.calls).toBe(1);
    const newModel = encoder('new', 8, 5);
    await scorer.useEncoder(newModel, async (_ids, set) => set('b', axis(8, 5)));
    open();
    const r = await running;
    expect(r.meaningError).toBeUndefined();
    expect([...relevanceMap(r).keys()]).toEqual(['a']);
    expect([...relevanceMap(await scorer.relevance('umbrella')).keys()]).toEqual(['b']);
    expect(newModel.calls).toBe(1);
  });

  it('ranks by words alone with an encoder whose dimensions are not known yet', async () => {
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet(), encoder('old', 4, 0));
    scorer.upsert(doc('a', axis(4, 0)));
    const unknown = encoder('not answered yet', 0, 0);
    await scorer.useEncoder(unknown, async () => undefined);
    expect([scorer.encoder, scorer.meaningScan]).toEqual([null, null]);
    expect((await scorer.relevance('umbrella')).ids).toEqual([]);
    expect(unknown.calls).toBe(0);
  });
});
