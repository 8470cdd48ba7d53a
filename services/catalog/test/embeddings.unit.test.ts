import { describe, expect, it } from 'vitest';
import { EmbeddingRows } from '../src/discovery/embedding-rows.js';
import { dotKernel, queryMax } from '../src/discovery/int8-dot.js';
import type { Lexicon } from '../src/discovery/lexicon.js';
import type { Relevance } from '../src/discovery/relevance-scorer.js';
import { LexicalSemanticScorer } from '../src/discovery/scorer.js';
import { embeddingText, fromBytes, toBytes, UniversalSentenceEncoder } from '../src/discovery/sentence-encoder.js';
import { WordNet } from '../src/discovery/thesaurus.js';

/** A relevance as a map by id, to look up a few. */
const relevanceMap = (r: Relevance): Map<string, number> => new Map(r.ids.map((id, i) => [id, r.values[i]!]));

describe('sentence embeddings (closeness of meaning)', () => {
  const lexicon: Lexicon = { stems: async (ws) => new Map(ws.map((w) => [w, w])), corrections: async () => [] };
  const topics = ['Currency Converter. Converts amounts between currencies at current exchange rates.',
    'Sentiment Analysis. Detects whether a text expresses positive, negative or neutral sentiment.',
    'Drug Interaction Checker. Checks a list of medications for harmful interactions.',
    'Weather Forecast. Hourly forecasts of temperature and precipitation.',
    'Image Resizer. Scales pictures to the requested width and height.'];

  it('encodes texts as unit vectors whose cosine follows meaning', async () => {
    const encoder = await UniversalSentenceEncoder.load();
    const [a, b, c] = await encoder.embed(['how many yen is 250 euros', topics[0]!, topics[3]!]);
    const cos = (x: Float32Array, y: Float32Array) => x.reduce((s, v, i) => s + v * y[i]!, 0);
    expect(a!.length).toBe(512);
    expect(cos(a!, a!)).toBeCloseTo(1, 4);
    expect(cos(a!, b!)).toBeGreaterThan(cos(a!, c!) + 0.2);
    expect(embeddingText({ name: 'N', category: 'c', subcategory: 's', tags: ['t1', 't2'], description: 'D.' })).toBe('N. c / s. t1, t2. D.');
    expect(fromBytes(toBytes(a!))).toEqual(a);
  });

  it('lets a need meet a service through meaning alone, and nothing unrelated', async () => {
    const encoder = await UniversalSentenceEncoder.load();
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet(), encoder);
    const vectors = await encoder.embed(topics);
    topics.forEach((t, i) => scorer.upsert({ id: `s${i}`, searchDoc: "'unrelatedword':1A", expansionDoc: '', embedding: vectors[i]! }));
    const best = async (need: string) => [...(relevanceMap(await scorer.relevance(need)))].sort((a, b) => b[1] - a[1]).map(([id]) => id);
    // No word in common, no WordNet relation: only meaning connects them.
    expect((await best('can ibuprofen be taken together with warfarin'))[0]).toBe('s2');
    expect((await best('how many yen is 250 euros'))[0]).toBe('s0');
    expect((await best('will it be stormy tomorrow'))[0]).toBe('s3');
    expect(await best('zzzz qqqq')).toEqual([]);
  });

  it('compares a need with the quantised embeddings as with the float ones', async () => {
    const encoder = await UniversalSentenceEncoder.load();
    const needs = ['how many yen is 250 euros', 'shrink a picture', 'will it be stormy tomorrow', 'can ibuprofen be taken together with warfarin'];
    const [vectors, queries] = [await encoder.embed(topics), await encoder.embed(needs)];
    const cos = (x: Float32Array, y: Float32Array) => x.reduce((s, v, i) => s + v * y[i]!, 0);
    const rows = new EmbeddingRows(encoder.dims);
    expect(rows.kind).toBe('simd');
    vectors.forEach((v, slot) => rows.set(slot, v));
    rows.set(vectors.length, null);
    for (const q of queries) {
      const got = rows.cosines(q, vectors.length + 1);
      vectors.forEach((v, slot) => expect(Math.abs(got[slot]! - cos(q, v))).toBeLessThan(0.002));
      expect(got[vectors.length]).toBe(0);
    }
    // Through the scorer: the order of meaning is the float one.
    const scorer = new LexicalSemanticScorer(lexicon, new WordNet(), encoder);
    expect(scorer.meaningScan).toBe('simd');
    expect(new LexicalSemanticScorer(lexicon, new WordNet()).meaningScan).toBe(null);
    topics.forEach((t, i) => scorer.upsert({ id: `s${i}`, searchDoc: "'unrelatedword':1A", expansionDoc: '', embedding: vectors[i]! }));
    for (const [i, need] of needs.entries()) {
      const found = relevanceMap(await scorer.relevance(need));
      const expected = vectors.map((v, slot) => [`s${slot}`, cos(queries[i]!, v)] as const).sort((a, b) => b[1] - a[1])[0]![0];
      expect([...found].sort((a, b) => b[1] - a[1])[0]![0]).toBe(expected);
    }
  });
});

describe('the quantised dot products', () => {
  const random = (seed: number) => () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };

  it('gives the same sums in WebAssembly and in JavaScript, at the largest values, for any row length', () => {
    const next = random(7);
    for (const stride of [16, 48, 512, 1024]) {
      const count = 300;
      const memory = new WebAssembly.Memory({ initial: Math.ceil((stride * 2 + count * (stride + 4)) / 65_536) + 1 });
      const at = { query: 0, rows: stride * 2, out: stride * 2 + count * stride };
      const q = new Int16Array(memory.buffer, at.query, stride);
      const rows = new Int8Array(memory.buffer, at.rows, count * stride);
      const max = queryMax(stride);
      for (let k = 0; k < stride; k++) q[k] = Math.round((next() * 2 - 1) * max);
      for (let i = 0; i < rows.length; i++) rows[i] = Math.round(next() * 254 - 127);
      // The extremes: a row of +127 and one of −127 with a query at its largest, one sign and the other.
      q.fill(max, 0, stride / 2).fill(-max, stride / 2);
      rows.fill(127, 0, stride / 2).fill(-127, stride / 2, stride).fill(-127, stride, stride + stride / 2).fill(127, stride + stride / 2, 2 * stride);
      const simd = dotKernel(memory);
      expect(simd.kind).toBe('simd');
      simd.dotRows(at, stride, count);
      const fromSimd = Int32Array.from(new Int32Array(memory.buffer, at.out, count));
      dotKernel(memory, 'js').dotRows(at, stride, count);
      const fromJs = new Int32Array(memory.buffer, at.out, count);
      expect([...fromSimd]).toEqual([...fromJs]);
      expect(fromSimd[0]).toBe(127 * max * stride);
      expect(fromSimd[1]).toBe(-127 * max * stride);
      // And by hand, for one row.
      let expected = 0;
      for (let k = 0; k < stride; k++) expected += rows[7 * stride + k]! * q[k]!;
      expect(fromSimd[7]).toBe(expected);
    }
  });

  it('keeps rows through growth and compaction, rows of any length (padded to 16)', () => {
    const next = random(11);
    for (const dims of [8, 20, 512]) {
      const unit = () => {
        const v = Float32Array.from({ length: dims }, () => next() * 2 - 1);
        const n = Math.hypot(...v);
        return v.map((x) => x / n);
      };
      for (const kind of ['simd', 'js'] as const) {
        const rows = new EmbeddingRows(dims, kind);
        expect(rows.kind).toBe(kind);
        const vectors = Array.from({ length: 3000 }, unit); // beyond the first allocation: the memory grows
        vectors.forEach((v, slot) => rows.set(slot, v));
        const q = unit();
        const cos = (v: Float32Array) => v.reduce((s, x, i) => s + x * q[i]!, 0);
        const got = rows.cosines(q, vectors.length);
        vectors.forEach((v, slot) => expect(Math.abs(got[slot]! - cos(v))).toBeLessThan(0.01));
        // Every third row kept, moved down as the scorer compacts.
        const kept = vectors.filter((_, slot) => slot % 3 === 0);
        for (let slot = 0; slot < vectors.length; slot += 3) rows.move(slot, slot / 3);
        const after = rows.cosines(q, kept.length);
        kept.forEach((v, slot) => expect(after[slot]).toBe(got[slot * 3]));
      }
    }
  });
});
