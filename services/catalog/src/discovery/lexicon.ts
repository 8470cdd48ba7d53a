import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/** What query analysis needs from the text-search engine: the same stemming as documents, and spelling help. */
export interface Lexicon {
  /** Each word's stem as the documents' `tsvector` has it; null for stop words and multi-lexeme words. */
  stems(words: string[], opts?: { cache?: boolean }): Promise<Map<string, string | null>>;
  /** Words of service texts within `maxEdits` edits of `word` (Damerau-Levenshtein), closest first. */
  corrections(word: string, maxEdits: number): Promise<{ word: string; edits: number }[]>;
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

  async stems(words: string[], opts: { cache?: boolean } = {}): Promise<Map<string, string | null>> {
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
      const keep = opts.cache ?? true;
      if (keep && this.cache.size + rows.length > CACHE_LIMIT) this.cache.clear();
      for (const r of rows) {
        const stem = r.lexemes.length === 1 ? r.lexemes[0]! : null;
        if (keep) this.cache.set(r.word, stem);
        out.set(r.word, stem);
      }
    }
    return out;
  }

  async corrections(word: string, maxEdits: number): Promise<{ word: string; edits: number }[]> {
    // Trigram distance finds the neighbourhood fast (GiST, nearest first); transpositions hurt
    // trigrams, so the final judge is the edit distance.
    const { rows } = await sql<{ word: string }>`select word from vocabulary where word <> ${word} order by word <-> ${word} limit 16`.execute(this.db);
    return rows
      .map((r) => ({ word: r.word, edits: editDistance(word, r.word, maxEdits) }))
      .filter((r) => r.edits <= maxEdits)
      .sort((a, b) => a.edits - b.edits);
  }
}

/**
 * Optimal-string-alignment Damerau-Levenshtein distance (insert, delete, substitute, swap two
 * neighbours), giving up with `max + 1` as soon as every path is longer than `max`.
 */
export function editDistance(a: string, b: string, max = Infinity): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      row.push(d);
      best = Math.min(best, d);
    }
    if (best > max) return max + 1;
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}
