import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/** What query analysis needs from the text-search engine: the same stemming as documents, and spelling help. */
export interface Lexicon {
  /** Each word's stem as the documents' `tsvector` has it; null for stop words and multi-lexeme words. */
  stems(words: string[]): Promise<Map<string, string | null>>;
  /** Words of service texts spelled like `word` (trigram similarity ≥ `minSimilarity`), most similar first. */
  corrections(word: string, minSimilarity: number, limit: number): Promise<{ word: string; similarity: number }[]>;
}

const CACHE_LIMIT = 100_000;

/**
 * Postgres as the lexicon: `to_tsvector('english', …)` gives the Snowball stems the documents were
 * indexed with, and `pg_trgm` finds the closest words of the vocabulary table for typos. Stems never
 * change for a word, so they are cached for the life of the process.
 */
export class PostgresLexicon implements Lexicon {
  private readonly cache = new Map<string, string | null>();

  constructor(private readonly db: Kysely<Database>) {}

  async stems(words: string[]): Promise<Map<string, string | null>> {
    const out = new Map<string, string | null>();
    const missing: string[] = [];
    for (const w of words) {
      const hit = this.cache.get(w);
      if (hit !== undefined) out.set(w, hit);
      else if (!missing.includes(w)) missing.push(w);
    }
    if (missing.length) {
      const { rows } = await sql<{ word: string; lexemes: string[] }>`
        select w as word, tsvector_to_array(to_tsvector('english'::regconfig, w)) as lexemes
        from unnest(${missing}::text[]) as w`.execute(this.db);
      if (this.cache.size + rows.length > CACHE_LIMIT) this.cache.clear();
      for (const r of rows) {
        const stem = r.lexemes.length === 1 ? r.lexemes[0]! : null;
        this.cache.set(r.word, stem);
        out.set(r.word, stem);
      }
    }
    return out;
  }

  async corrections(word: string, minSimilarity: number, limit: number): Promise<{ word: string; similarity: number }[]> {
    // `%` uses the trigram index with pg_trgm's default threshold (0.3); the stricter cut is ours.
    const { rows } = await sql<{ word: string; similarity: number }>`
      select word, similarity(word, ${word}) as similarity from vocabulary
      where word % ${word} and word <> ${word}
      order by similarity desc, word limit ${limit}`.execute(this.db);
    return rows.filter((r) => r.similarity >= minSimilarity);
  }
}
