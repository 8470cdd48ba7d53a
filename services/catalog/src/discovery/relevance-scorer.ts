import type { SentenceEncoder } from './sentence-encoder.js';

/** A service as the scorer indexes it: its Postgres `tsvector` (stems with weight classes A–D). */
export interface ScorableDocument<T = undefined> {
  id: string;
  /** The caller's own record of the document, given back with its relevance (no lookup by id). */
  item?: T;
  /** The sentence embedding of the service (unit vector), when there is one. */
  embedding: Float32Array | null;
  /** `search_doc::text`, e.g. `'digest':3A,10C 'hash':5A`. */
  searchDoc: string;
  /** `expansion_doc::text`: stems of words related to the name, tags and category. */
  expansionDoc: string;
}

/**
 * The port relevance comes through (D8.2). The lexical-semantic scorer (`scorer.ts`) implements it
 * from Postgres text search and WordNet; an embedding model would implement it by embedding
 * documents on `upsert` and the need in `relevance`, with no change to the rest of discovery.
 */
export interface RelevanceScorer<T = undefined> {
  readonly name: string;
  upsert(doc: ScorableDocument<T>): void;
  remove(id: string): void;
  /**
   * Relevance in (0, 1] of every indexed document related to the need (absent means 0), computed on
   * one consistent view of the index: documents upserted or removed meanwhile never break a query,
   * and a document removed before the answer is not in it. With `after`, nothing of the index is
   * read before it resolves (the caller's catch-up), while the need's own analysis already runs.
   */
  relevance(need: string, after?: Promise<void>): Promise<Relevance<T>>;
  /**
   * D22.1: compare needs through `encoder` from now on, against the documents' embeddings by its
   * model, which `fill` gives by id (scorers without meaning have no such method).
   */
  useEncoder?(encoder: SentenceEncoder | null, fill: (ids: string[], set: (id: string, v: Float32Array) => void) => Promise<void>): Promise<void>;
}

export interface Relevance<T = undefined> {
  /**
   * The related documents, their items and their relevance, side by side (no map: at 100,000
   * services a query relates tens of thousands, and looking each up by id cost more than scoring
   * them).
   */
  ids: string[];
  items: (T | undefined)[];
  values: number[];
  /** Set when meaning should have counted but could not (the encoder failed): why. */
  meaningError?: string;
  /** The need's sentence embedding, when meaning counted (D22.2: learning compares it with bought needs). */
  needVector?: Float32Array;
  /** The model that embedded `needVector` (D22.1): other vectors are compared with it only when of the same model. */
  needModel?: string;
  /** Words of the need that look misspelled, each with the catalog's word it was read as (D22.4). */
  corrections?: { word: string; suggestion: string }[];
  /**
   * The documents related to the need too faintly to be matches (relevance above 0, under the
   * floor), with that relevance; computed only when called — for an answer nothing else fills (D22.4).
   */
  faint?: () => { items: (T | undefined)[]; values: number[] };
}
