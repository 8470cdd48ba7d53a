import { EmbeddingRows } from './embedding-rows.js';
import type { Lexicon } from './lexicon.js';
import { needConcepts, type Concept, type IndexVocabulary } from './need-concepts.js';
import { needTokens } from './need.js';
import type { Relevance, RelevanceScorer, ScorableDocument } from './relevance-scorer.js';
import type { Thesaurus } from './thesaurus.js';
import type { SentenceEncoder } from './sentence-encoder.js';

/**
 * How much a match in each class counts: E = related words of the key terms (expansion), D = schemas,
 * C = description, B = category/capabilities, A = name/tags.
 */
export const FIELD_FACTOR = [0.3, 0.55, 0.7, 0.85, 1] as const;

/** Below this a service only brushes the need (a faint relation of one word): not a match. */
export const MIN_RELEVANCE = 0.05;

/** Share of relevance that comes from topical closeness in word-vector space (the rest is lexical). */
const SEMANTIC_SHARE = 0.3;
/** Cosine of sentence embeddings below which a service is not close (USE: unrelated texts ≈ 0–0.15). */
const SEMANTIC_FLOOR = 0.15;
const SEMANTIC_SPAN = 0.45;

/** A concept counts as covered by a match at least this strong (e.g. a synonym in the description). */
const COVERED = 0.6;
/** How much coverage of the concepts scales relevance. */
const COORDINATION = 0.7;

const WEIGHT_CLASS: Record<string, number> = { A: 4, B: 3, C: 2, D: 1 };
const EXPANSION_CLASS = 0;

/**
 * Lexical-semantic relevance. Each content word of the need is a *concept*, matched by its own stem,
 * its WordNet lemmas and related words (synonyms, derivations, similar, broader and narrower terms,
 * each discounted) and, when it is not a known word, by its closest spellings in the catalog's
 * vocabulary (pg_trgm). A document's relevance is the idf-weighted share of the need's concepts it
 * covers, each counted by its best variant times the weight class where it occurs:
 *
 *   relevance(d) = Σ_c idf(c) · max_{v ∈ c, v ∈ d} w(v) · field(v, d)  /  Σ_c idf(c)
 *
 * so it is 1 when every concept appears as itself in the name or tags, and lower as matches become
 * less direct or land in less telling fields. Postings are kept in memory by lexeme.
 */
export class LexicalSemanticScorer<T = undefined> implements RelevanceScorer<T> {
  readonly name = 'lexical-semantic-v1';
  private readonly lexemeIds = new Map<string, number>();
  private readonly df: number[] = [];
  private readonly postingSlots: number[][] = [];
  private readonly postingClasses: number[][] = [];
  private slotIds: (string | null)[] = [];
  private slotItems: (T | undefined)[] = [];
  private readonly slotOf = new Map<string, { slot: number; lexemes: number[] }>();
  /** What the need's concepts are weighed against. */
  private readonly vocabulary: IndexVocabulary = { lexemeIds: this.lexemeIds, df: this.df, documents: () => this.slotOf.size };
  private dead = 0;
  /** Queries between their snapshot and their answer: slots must not move under them. */
  private reading = 0;
  /**
   * The encoder needs are embedded with and the services' embeddings by the same model, one row per
   * slot (zeros: none), when there is an encoder. Replaced whole when the model changes (D22.1): a
   * query keeps the pair it began with, so it never compares vectors of two models.
   */
  private meaning: MeaningSpace | null;

  constructor(private readonly lexicon: Lexicon, private readonly thesaurus: Thesaurus, encoder: SentenceEncoder | null = null) {
    this.meaning = encoder && encoder.dims > 0 ? { encoder, rows: new EmbeddingRows(encoder.dims) } : null;
  }

  get size(): number {
    return this.slotOf.size;
  }

  /** How the need's embedding is compared with the services': `simd` (WebAssembly), `js`, or not at all. */
  get meaningScan(): 'simd' | 'js' | null {
    return this.meaning?.rows.kind ?? null;
  }

  /** The encoder needs are compared through (null: none). */
  get encoder(): SentenceEncoder | null {
    return this.meaning?.encoder ?? null;
  }

  /**
   * D22.1: compares needs through `encoder` from now on, against the embeddings by its model that
   * `fill` gives for the indexed documents (those it does not give have none). The rows are filled
   * before they replace the old ones, with slots held still meanwhile; queries already running finish
   * with the old pair. The caller upserts nothing while `fill` runs (the index does it between polls).
   */
  async useEncoder(encoder: SentenceEncoder | null, fill: (ids: string[], set: (id: string, v: Float32Array) => void) => Promise<void>): Promise<void> {
    if (!encoder || encoder.dims <= 0) {
      this.meaning = null;
      return;
    }
    const rows = new EmbeddingRows(encoder.dims);
    this.reading += 1;
    try {
      if (this.slotIds.length > 0) rows.set(this.slotIds.length - 1, null);
      await fill([...this.slotOf.keys()], (id, v) => {
        const at = this.slotOf.get(id);
        if (at && v.length === rows.dims) rows.set(at.slot, v);
      });
      this.meaning = { encoder, rows };
    } finally {
      this.reading -= 1;
      if (this.reading === 0) this.compactIfDue();
    }
  }

  upsert(doc: ScorableDocument<T>): void {
    this.remove(doc.id);
    const slot = this.slotIds.length;
    this.slotIds.push(doc.id);
    this.slotItems.push(doc.item);
    const lexemes: number[] = [];
    const classes = parseTsvector(doc.searchDoc);
    for (const lexeme of parseTsvector(doc.expansionDoc).keys()) if (!classes.has(lexeme)) classes.set(lexeme, EXPANSION_CLASS);
    for (const [lexeme, cls] of classes) {
      const id = this.lexemeId(lexeme);
      lexemes.push(id);
      this.df[id]! += 1;
      this.postingSlots[id]!.push(slot);
      this.postingClasses[id]!.push(cls);
    }
    this.slotOf.set(doc.id, { slot, lexemes });
    const rows = this.meaning?.rows;
    rows?.set(slot, doc.embedding?.length === rows.dims ? doc.embedding : null);
  }

  remove(id: string): void {
    const at = this.slotOf.get(id);
    if (!at) return;
    for (const lex of at.lexemes) this.df[lex]! -= 1;
    // The row of its embedding stays as it is until compaction: a query that began before the
    // removal still reads it, and every query masks the rows dead in its own snapshot.
    this.slotIds[at.slot] = null;
    this.slotItems[at.slot] = undefined;
    this.slotOf.delete(id);
    this.dead += 1;
    if (this.reading === 0) this.compactIfDue();
  }

  async relevance(need: string, after: Promise<void> = Promise.resolve()): Promise<Relevance<T>> {
    const tokens = needTokens(need);
    const { concepts, corrections, suggestions } = await needConcepts(tokens, after, { lexicon: this.lexicon, thesaurus: this.thesaurus }, this.vocabulary);
    // The encoder knows words, not typos: it reads the need with its spelling corrected. It runs in
    // its worker thread while the lexical scores are computed here.
    let corrected = need;
    for (const [typo, word] of corrections) corrected = corrected.replace(new RegExp(`\\b${typo}\\b`, 'gi'), word);
    const spelling = suggestions.size > 0 ? { corrections: [...suggestions].map(([word, suggestion]) => ({ word, suggestion })) } : {};
    // A need with no word anyone knows (not English, not the catalog's) has no meaning to compare.
    const readable = concepts.some((c) => c.variants.size > 0) || tokens.some((t) => this.thesaurus.lemmas(t).length > 0);
    const space = this.meaning;
    const encoder = readable ? (space?.encoder ?? null) : null;

    // The view is pinned from here to the answer: slots keep their documents (compaction waits), the
    // ids are those of this moment, and whatever is upserted meanwhile is left to the next query.
    this.reading += 1;
    try {
      const ids = this.slotIds.slice();
      if (!encoder || encoder.problem || !space) {
        const found = { ...this.answer(ids, this.lexicalRelevance(concepts), null), ...spelling };
        return encoder?.problem ? { ...found, meaningError: encoder.problem } : found;
      }
      const vector = encoder.embed([corrected]);
      const lexical = this.lexicalRelevance(concepts);
      let semantic: Float32Array;
      let needVector: Float32Array;
      try {
        needVector = (await vector)[0]!;
        if (needVector.length !== space.rows.dims) throw new Error(`sentence encoder: ${needVector.length} dimensions where ${space.rows.dims} were expected`);
        semantic = this.semanticRelevance(space.rows, needVector, ids);
      } catch (err) {
        return { ...this.answer(ids, lexical, null), ...spelling, meaningError: (err as Error).message };
      }
      return { ...this.answer(ids, lexical, semantic), ...spelling, needVector, needModel: encoder.name };
    } finally {
      this.reading -= 1;
      if (this.reading === 0) this.compactIfDue();
    }
  }

  /**
   * Lexical and semantic scores (by slot, of the pinned `ids`) blended into relevance, for the
   * documents still in their slot now: one removed (or written again) while the query ran is left out.
   * A service close in meaning that shares no word with the need counts by its meaning alone.
   */
  private answer(ids: (string | null)[], lexical: Float64Array, semantic: Float32Array | null): Relevance<T> {
    const out: Relevance<T> = { ids: [], items: [], values: [], faint: () => this.faint(ids, lexical, semantic) };
    for (let slot = 0; slot < ids.length; slot++) {
      const r = blended(lexical[slot]!, semantic, slot);
      if (r < MIN_RELEVANCE) continue;
      const id = ids[slot];
      if (id && this.slotIds[slot] === id) {
        out.ids.push(id);
        out.items.push(this.slotItems[slot]);
        out.values.push(r);
      }
    }
    return out;
  }

  /**
   * The documents under the floor, from the same scores (D22.4): meaning alone counts here however
   * small. Asked after the answer, so a slot is read only if it still holds the document it held.
   */
  private faint(ids: (string | null)[], lexical: Float64Array, semantic: Float32Array | null): { items: (T | undefined)[]; values: number[] } {
    const out: { items: (T | undefined)[]; values: number[] } = { items: [], values: [] };
    for (let slot = 0; slot < ids.length; slot++) {
      const lex = lexical[slot]!;
      const r = lex > 0 ? blended(lex, semantic, slot) : SEMANTIC_SHARE * (semantic?.[slot] ?? 0);
      if (r <= 0 || r >= MIN_RELEVANCE) continue;
      const id = ids[slot];
      if (id && this.slotIds[slot] === id) {
        out.items.push(this.slotItems[slot]);
        out.values.push(r);
      }
    }
    return out;
  }

  /**
   * Closeness of meaning, per slot of the pinned `ids`: the cosine of the need's sentence embedding
   * with each service's, counted from SEMANTIC_FLOOR (unrelated texts score about 0–0.15) up to 1 at
   * FLOOR + SPAN. A slot emptied since the snapshot keeps its row until compaction (which waits for
   * readers) and is masked here.
   */
  private semanticRelevance(rows: EmbeddingRows, q: Float32Array, ids: (string | null)[]): Float32Array {
    const out = rows.cosines(q, ids.length);
    for (let slot = 0; slot < out.length; slot++) out[slot] = ids[slot] === null ? 0 : closeness(out[slot]!);
    return out;
  }

  /** A zeroed array of at least `n` slots, reused by every query (lexicalRelevance leaves it zeroed). */
  private scratchArray = new Float64Array(0);
  private scratch(n: number): Float64Array {
    if (this.scratchArray.length < n) this.scratchArray = new Float64Array(Math.max(n, 2 * this.scratchArray.length));
    return this.scratchArray;
  }

  /** Lexical relevance by slot (0: no match). */
  private lexicalRelevance(concepts: Concept[]): Float64Array {
    const known = concepts.filter((c) => c.variants.size > 0);
    if (known.length === 0) return new Float64Array(this.slotIds.length);
    // A concept the catalog has no word for still dilutes every score a little (the need asked for it).
    const meanWeight = known.reduce((s, c) => s + c.weight, 0) / known.length;
    const weights = concepts.map((c) => (c.variants.size > 0 ? c.weight : 0.5 * meanWeight));
    const total = weights.reduce((s, w) => s + w, 0);

    // Concept by concept: the best match of each slot goes into a scratch array (zero again after
    // each concept), then adds to the slot's sum and coverage. Postings of common words touch tens
    // of thousands of documents; typed arrays keep that to a few milliseconds at 100,000 services.
    const n = this.slotIds.length;
    const sum = new Float64Array(n);
    const covered = new Float64Array(n);
    const cur = this.scratch(n);
    concepts.forEach((c, i) => {
      const touched: number[] = [];
      for (const [lex, w] of c.variants) {
        const slots = this.postingSlots[lex]!;
        const classes = this.postingClasses[lex]!;
        for (let j = 0; j < slots.length; j++) {
          const slot = slots[j]!;
          const s = w * FIELD_FACTOR[classes[j]!]!;
          if (s <= cur[slot]!) continue;
          if (cur[slot] === 0) touched.push(slot);
          cur[slot] = s;
        }
      }
      const wi = weights[i]!;
      for (const slot of touched) {
        const m = cur[slot]!;
        sum[slot] = sum[slot]! + wi * m;
        if (m >= COVERED) covered[slot] = covered[slot]! + wi;
        cur[slot] = 0;
      }
    });
    // Coordination: a service that covers more of the need's concepts beats one that matches a
    // single concept strongly (and every other one only through faint relations).
    for (let slot = 0; slot < n; slot++) {
      if (sum[slot]! > 0) sum[slot] = (sum[slot]! / total) * (1 - COORDINATION + COORDINATION * (covered[slot]! / total));
    }
    const result = sum;
    return result;
  }

  private lexemeId(lexeme: string): number {
    let id = this.lexemeIds.get(lexeme);
    if (id === undefined) {
      id = this.df.length;
      this.lexemeIds.set(lexeme, id);
      this.df.push(0);
      this.postingSlots.push([]);
      this.postingClasses.push([]);
    }
    return id;
  }

  /** Drops the postings of removed documents once they outnumber the live ones (never under a reading query). */
  private compactIfDue(): void {
    if (this.dead > 1000 && this.dead > this.slotOf.size) this.compact();
  }

  private compact(): void {
    const remap = new Map<number, number>();
    const ids: string[] = [];
    const items: (T | undefined)[] = [];
    this.slotIds.forEach((id, slot) => {
      if (id === null) return;
      remap.set(slot, ids.length);
      ids.push(id);
      items.push(this.slotItems[slot]);
    });
    for (let lex = 0; lex < this.postingSlots.length; lex++) {
      const slots: number[] = [];
      const classes: number[] = [];
      this.postingSlots[lex]!.forEach((slot, k) => {
        const to = remap.get(slot);
        if (to === undefined) return;
        slots.push(to);
        classes.push(this.postingClasses[lex]![k]!);
      });
      this.postingSlots[lex] = slots;
      this.postingClasses[lex] = classes;
    }
    // Slots only move down, in order: each row is copied before its place is taken.
    const rows = this.meaning?.rows;
    if (rows) for (const [from, to] of remap) rows.move(from, to);
    this.slotIds = ids;
    this.slotItems = items;
    for (const entry of this.slotOf.values()) entry.slot = remap.get(entry.slot)!;
    this.dead = 0;
  }
}

/**
 * Relevance from a slot's lexical score and closeness of meaning: the blend when it shares a word
 * with the need, its meaning alone (at its share) when that is enough to clear the floor, else 0.
 */
function blended(lex: number, semantic: Float32Array | null, slot: number): number {
  const sem = semantic ? (semantic[slot] ?? 0) : 0;
  if (lex > 0) return semantic ? (1 - SEMANTIC_SHARE) * lex + SEMANTIC_SHARE * sem : lex;
  return sem >= MIN_RELEVANCE / SEMANTIC_SHARE ? SEMANTIC_SHARE * sem : 0;
}

/** An encoder with the services' embeddings by its model. */
interface MeaningSpace {
  encoder: SentenceEncoder;
  rows: EmbeddingRows;
}

/** A cosine of sentence embeddings as closeness in [0, 1]. */
function closeness(cos: number): number {
  return cos > SEMANTIC_FLOOR ? Math.min(1, (cos - SEMANTIC_FLOOR) / SEMANTIC_SPAN) : 0;
}

/** `'digest':3A,10C 'hash':5A 'x'` → lexeme with its best weight class (A = 4 … D = 1). */
export function parseTsvector(text: string): Map<string, number> {
  const out = new Map<string, number>();
  const re = /'((?:[^']|'')*)'(?::([0-9A-D,]+))?/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const lexeme = m[1]!.replace(/''/g, "'");
    let cls = 1;
    for (const pos of (m[2] ?? '').split(',')) cls = Math.max(cls, WEIGHT_CLASS[pos.slice(-1)] ?? 1);
    out.set(lexeme, Math.max(out.get(lexeme) ?? 0, cls));
  }
  return out;
}
