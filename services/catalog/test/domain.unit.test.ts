import { describe, expect, it } from 'vitest';
import { budgetFloor, pricingProblems, slaProblems, withDefaults } from '../src/domain/contract-rules.js';
import { inputCompatibility, ioSignature, outputCompatibility, requiredOutput, schemaTypes, typeFits, valueType } from '../src/domain/compatibility.js';
import { cheapness, compositeRank, RANK_WEIGHTS, speed } from '../src/domain/rank.js';
import { schemaText, searchText, vocabularyOf, words } from '../src/domain/search-text.js';
import { ceilingScore, combineMatch, compatibilityScore, preference, PREFERENCE_SHARE } from '../src/discovery/discover.js';
import { editDistance } from '../src/discovery/lexicon.js';
import { needTokens } from '../src/discovery/need.js';
import { correctionWeight, LexicalSemanticScorer, maxEdits, parseTsvector, relationWeight, type Relevance, type ScorableDocument } from '../src/discovery/scorer.js';

/** A relevance as a map by id, to look up a few. */
const relevanceMap = (r: Relevance): Map<string, number> => new Map(r.ids.map((id, i) => [id, r.values[i]!]));
import { WordNet } from '../src/discovery/thesaurus.js';
import { EmbeddingRows } from '../src/discovery/embedding-rows.js';
import { dotKernel, queryMax } from '../src/discovery/int8-dot.js';
import { embeddingText, fromBytes, toBytes, UniversalSentenceEncoder } from '../src/discovery/sentence-encoder.js';
import type { Lexicon } from '../src/discovery/lexicon.js';
import { selectPage } from '../src/listings/page-select.js';

describe('composite_rank (D7.5)', () => {
  it('is 0.5·trust + 0.3·cheapness + 0.2·speed, each in [0, 1]', () => {
    expect(RANK_WEIGHTS.trust + RANK_WEIGHTS.cheapness + RANK_WEIGHTS.speed).toBeCloseTo(1, 10);
    expect(compositeRank({ trustScore: 100, priceCents: 1, maxLatencyMs: 1 })).toBeCloseTo(1, 10);
    expect(compositeRank({ trustScore: 0, priceCents: 1_000_000, maxLatencyMs: 86_400_000 })).toBeCloseTo(0, 10);
    expect(compositeRank({ trustScore: 50, priceCents: 1000, maxLatencyMs: 1000 })).toBeCloseTo(0.25 + 0.3 * (1 - Math.log(1000) / Math.log(1e6)) + 0.2 * (1 - Math.log(1000) / Math.log(86_400_000)), 10);
  });
  it('is logarithmic in price and latency: ten times cheaper gains the same at any price', () => {
    expect(cheapness(10) - cheapness(100)).toBeCloseTo(cheapness(10_000) - cheapness(100_000), 10);
    expect(speed(50) - speed(500)).toBeCloseTo(speed(5000) - speed(50_000), 10);
  });
  it('rises with trust and falls with price and latency', () => {
    const base = { trustScore: 50, priceCents: 500, maxLatencyMs: 500 };
    expect(compositeRank({ ...base, trustScore: 60 })).toBeGreaterThan(compositeRank(base));
    expect(compositeRank({ ...base, priceCents: 600 })).toBeLessThan(compositeRank(base));
    expect(compositeRank({ ...base, maxLatencyMs: 600 })).toBeLessThan(compositeRank(base));
  });
});

describe('contract rules (D7.3)', () => {
  it('applies the spec defaults', () => {
    expect(withDefaults({ model: 'fixed', basePriceCents: 5 }, { maxLatencyMs: 1, timeoutMs: 2 })).toEqual({
      pricing: { model: 'fixed', basePriceCents: 5, currency: 'USD' },
      sla: { maxLatencyMs: 1, timeoutMs: 2, maxRetries: 2 },
    });
  });
  it('orders negotiable bounds around the base price, and keeps them to the negotiable model', () => {
    expect(pricingProblems({ model: 'negotiable', basePriceCents: 100, minimumCents: 100, maximumCents: 100 })).toEqual([]);
    expect(pricingProblems({ model: 'negotiable', basePriceCents: 100, minimumCents: 101 }).map((e) => e.field)).toEqual(['/body/pricing/minimumCents']);
    expect(pricingProblems({ model: 'negotiable', basePriceCents: 100, maximumCents: 99 }).map((e) => e.field)).toEqual(['/body/pricing/maximumCents']);
    expect(pricingProblems({ model: 'per_unit', basePriceCents: 100, maximumCents: 200 }).map((e) => e.field)).toEqual(['/body/pricing/maximumCents']);
  });
  it('needs timeoutMs ≥ maxLatencyMs', () => {
    expect(slaProblems({ maxLatencyMs: 10, timeoutMs: 10 })).toEqual([]);
    expect(slaProblems({ maxLatencyMs: 10, timeoutMs: 9 })).toHaveLength(1);
  });
  it('prices a budget by the negotiable minimum, else the base price (D8.4)', () => {
    expect(budgetFloor({ model: 'negotiable', basePriceCents: 500, minimumCents: 50 })).toBe(50);
    expect(budgetFloor({ model: 'negotiable', basePriceCents: 500 })).toBe(500);
    expect(budgetFloor({ model: 'fixed', basePriceCents: 500 })).toBe(500);
  });
});

describe('search text (D8.2)', () => {
  it('splits identifiers into words', () => {
    expect(words('sourceLanguage')).toBe('source Language');
    expect(words('source_language-code.v2')).toBe('source language code v2');
    expect(words('HTMLToPDF')).toBe('HTML To PDF');
  });
  it('puts name and tags in A, category and capabilities in B, description in C, schema words in D', () => {
    const t = searchText({
      name: 'Translator', description: 'Translates text.', category: 'language', subcategory: 'machine-translation', tags: ['i18n'],
      capabilities: [{ name: 'batchMode', formats: ['docx'] }],
      inputSchema: { type: 'object', properties: { targetLanguage: { type: 'string', description: 'BCP 47 code' } } },
      outputSchema: { title: 'Result', type: 'object', properties: { translated_text: { type: 'string' } } },
      examples: [{ description: 'German greeting' }],
    });
    expect(t.a).toBe('Translator . i18n');
    expect(t.b).toBe('language . machine translation . name batch Mode formats docx');
    expect(t.c).toBe('Translates text.');
    expect(t.d).toContain('target Language . BCP 47 code');
    expect(t.d).toContain('Result . translated text');
    expect(t.d).toContain('German greeting');
    expect(vocabularyOf(t)).toEqual(expect.arrayContaining(['translator', 'translates', 'docx', 'greeting']));
  });
  it('walks nested schemas, combinators and $defs but stays bounded', () => {
    const text = schemaText({ $defs: { addr: { properties: { postalCode: { description: 'ZIP' } } } }, anyOf: [{ properties: { city: {} } }], items: { properties: { street: {} } } });
    expect(text).toContain('postal Code');
    expect(text).toContain('ZIP');
    expect(text).toContain('city');
    expect(text).toContain('street');
  });
});

describe('input/output compatibility (D8.3)', () => {
  const sig = ioSignature({ type: 'object', properties: { text: { type: 'string' }, n: { type: ['integer', 'null'] }, mode: { enum: ['a', 'b'] } }, required: ['text', 'n'], allOf: [{ properties: { extra: { type: 'boolean' } }, required: ['extra'] }] });

  it('reads names, types and required properties, merging allOf', () => {
    expect(sig.required).toEqual(['text', 'n', 'extra']);
    expect([...sig.properties.get('n')!]).toEqual(['integer', 'null']);
    expect([...sig.properties.get('mode')!]).toEqual(['string']);
    expect([...schemaTypes({})]).toEqual(['any']);
  });
  it('is 1 when the validator accepts the input, else the share of required properties supplied with a fitting value', () => {
    expect(inputCompatibility(sig, { text: 'x' }, { accepted: true, faulty: new Set() })).toBe(1);
    expect(inputCompatibility(sig, { text: 'x', n: 2 })).toBeCloseTo(2 / 3);
    expect(inputCompatibility(sig, { text: 3, n: 2 })).toBeCloseTo(1 / 3);
    expect(inputCompatibility(sig, { text: 'x', n: 2, extra: true }, { accepted: false, faulty: new Set(['n']) })).toBeCloseTo(2 / 3);
    expect(inputCompatibility(sig, {})).toBe(0);
  });
  it('with no required properties, scores the share of supplied properties the schema knows when it refuses', () => {
    const open = ioSignature({ properties: { a: { type: 'string' } } });
    expect(inputCompatibility(open, { a: 'x', b: 1 }, { accepted: false, faulty: new Set() })).toBe(0.5);
    expect(inputCompatibility(open, { a: 'x' })).toBe(1);
  });
  it('reads outputRequired as a schema or as an example', () => {
    expect([...requiredOutput({ type: 'object', properties: { a: { type: 'string' }, b: { type: 'number' } } })]).toEqual([['a', 'string'], ['b', 'number']]);
    expect([...requiredOutput({ a: 'x', b: 2, c: 2.5, d: null, e: [1], f: { g: 1 } })]).toEqual([['a', 'string'], ['b', 'integer'], ['c', 'number'], ['d', 'null'], ['e', 'array'], ['f', 'object']]);
  });
  it('is the share of wanted properties the outputSchema provides with the right type', () => {
    const out = ioSignature({ properties: { a: { type: 'string' }, n: { type: 'integer' }, x: { type: 'number' }, any: {} } });
    expect(outputCompatibility(out, new Map([['a', 'string'], ['n', 'number']]))).toBe(1);
    expect(outputCompatibility(out, new Map([['x', 'integer']]))).toBe(0);
    expect(outputCompatibility(out, new Map([['a', 'number'], ['missing', 'string']]))).toBe(0);
    expect(outputCompatibility(out, new Map([['any', 'string'], ['a', 'string']]))).toBe(1);
    expect(outputCompatibility(out, new Map())).toBe(1);
  });
  it('knows an integer is a number', () => {
    expect(valueType(3)).toBe('integer');
    expect(valueType(3.5)).toBe('number');
    expect(typeFits('integer', new Set(['number']))).toBe(true);
    expect(typeFits('number', new Set(['integer']))).toBe(false);
  });
});

describe('compatibilityScore (D8.5)', () => {
  it('weighs the parts a query has and ignores the others', () => {
    expect(combineMatch({})).toBe(1);
    expect(combineMatch({ need: 0.5 })).toBe(0.5);
    expect(combineMatch({ need: 1, input: 0 })).toBeCloseTo(0.75);
    expect(combineMatch({ input: 1, output: 0.5 })).toBeCloseTo(0.75);
  });
  it('stays in [0, 1]; preference moves it by at most its share', () => {
    expect(compatibilityScore({ need: 1 }, 1)).toBe(1);
    expect(compatibilityScore({ need: 1 }, 0)).toBeCloseTo(1 - PREFERENCE_SHARE, 4);
    expect(compatibilityScore({ need: 0.5 }, 2)).toBe(0.5);
  });
  it('is 0 for a service the need has nothing to do with, or whose input/output cannot fit at all', () => {
    expect(compatibilityScore({ need: 0, input: 1 }, 1)).toBe(0);
    expect(compatibilityScore({ input: 0 }, 1)).toBe(0);
    expect(compatibilityScore({ output: 0, input: 1 }, 1)).toBe(0);
    expect(compatibilityScore({ need: 0.4, input: 0 }, 1)).toBeGreaterThan(0);
  });
  it('urgency high prefers speed, low prefers price (D8.4)', () => {
    const fast = { trustScore: 50, priceCents: 10_000, maxLatencyMs: 10 };
    const cheap = { trustScore: 50, priceCents: 1, maxLatencyMs: 60_000 };
    expect(preference('high', fast)).toBeGreaterThan(preference('high', cheap));
    expect(preference('low', cheap)).toBeGreaterThan(preference('low', fast));
    expect(preference('normal', fast)).toBe(compositeRank(fast));
  });
});

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

describe('a consistent view while the index changes (discover never fails mid-query)', () => {
  const lexicon: Lexicon = { stems: async (ws) => new Map(ws.map((w) => [w, w])), corrections: async () => [] };
  const dims = 8;
  // An encoder that answers after a random pause: the index changes under every query, between its
  // snapshot and its answer.
  const pause = () => new Promise<void>((r) => setTimeout(r, Math.random() * 2));
  const unit = (seed: number) => Float32Array.from({ length: dims }, (_, k) => (k === seed % dims ? 1 : 0));
  const slowEncoder = {
    name: 'slow', dims,
    embed: async (texts: string[]) => {
      await pause();
      return texts.map((_, i) => unit(i));
    },
    close: async () => undefined,
  };

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

describe('a page of a listing without sorting every match', () => {
  it('gives the ranks a full sort gives, for any page, with keys that tie a little, a lot or not at all', () => {
    let seed = 3;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (const distinct of [1, 3, 50, 100_000]) {
      for (const count of [0, 1, 2, 7, 500, 3000]) {
        const key = Array.from({ length: count }, () => Math.floor(next() * distinct));
        const second = Array.from({ length: count }, () => Math.floor(next() * 4));
        // A total order, as the listing's (sort key, then createdAt, then id).
        const compare = (a: number, b: number) => key[a]! - key[b]! || second[a]! - second[b]! || a - b;
        const sorted = Array.from({ length: count }, (_, i) => i).sort(compare);
        for (const [offset, limit] of [[0, 1], [0, 20], [5, 20], [count - 3, 10], [Math.floor(count / 2), 100], [0, count + 5], [count, 5], [count + 10, 5]]) {
          if (offset! < 0) continue;
          expect(selectPage(count, compare, offset!, limit!)).toEqual(sorted.slice(offset, offset! + limit!));
        }
      }
    }
  });

  it('takes linear time when every key ties (compared with a sort of the same items)', () => {
    const count = 100_000;
    let calls = 0;
    const compare = (a: number, b: number) => {
      calls += 1;
      return a - b;
    };
    // Items in reverse order, all with the same sort key: the case that sorted all 100,000 before.
    const order = (i: number) => count - 1 - i;
    selectPage(count, (a, b) => compare(order(a), order(b)), 0, 50);
    // A sort needs about n·log2(n) ≈ 1.7 million comparisons; the selection a few per item.
    expect(calls).toBeLessThan(5 * count);
  });
});

describe('the best score a related service could get (only counted when below the short list)', () => {
  it('is exactly compatibilityScore with input and output fitting fully, and never below a real score', () => {
    let seed = 5;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (const [withInput, withOutput] of [[false, false], [true, false], [false, true], [true, true]] as const) {
      const ceiling = ceilingScore(withInput, withOutput);
      for (let i = 0; i < 20_000; i++) {
        const [need, pref] = [0.001 + next(), next() * 1.2 - 0.1];
        expect(ceiling(need, pref)).toBe(compatibilityScore({ need, ...(withInput ? { input: 1 } : {}), ...(withOutput ? { output: 1 } : {}) }, pref));
        const actual = compatibilityScore({ need, ...(withInput ? { input: next() } : {}), ...(withOutput ? { output: next() } : {}) }, pref);
        expect(actual).toBeLessThanOrEqual(ceiling(need, pref));
      }
    }
  });
});
