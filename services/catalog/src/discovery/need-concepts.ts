import { editDistance, type Lexicon } from './lexicon.js';
import type { Relation, Thesaurus } from './thesaurus.js';

/** A content word of the need, with the index's lexemes that stand for it. */
export interface Concept {
  token: string;
  /** lexeme id → weight of the best variant with that stem */
  variants: Map<number, number>;
  /** idf of the token's own stem, or of its best variant */
  weight: number;
}

/** What a need's concepts are weighed against: the index's words and how many documents hold each. */
export interface IndexVocabulary {
  /** Each lexeme of the index, by its id. */
  readonly lexemeIds: ReadonlyMap<string, number>;
  /** Documents holding each lexeme, by lexeme id. */
  readonly df: readonly number[];
  /** Documents indexed now. */
  documents(): number;
}

/** How much a related word counts against the word itself, by relation and sense rank (0 = most common). */
export function relationWeight(relation: Relation, sense: number): number {
  const base = { synonym: 0.8, derived: 0.75, similar: 0.55, broader: 0.45, narrower: 0.45, broader2: 0.3, gloss: 0.3 }[relation];
  return sense === 0 ? base : base * 0.8;
}

/** A correction counts a little less than the word (it may be a wrong guess), two edits less than one. */
export const correctionWeight = (edits: number) => (edits <= 1 ? 0.9 : 0.8);

/** Edits allowed to correct a word: one per four letters, at least one. */
export const maxEdits = (word: string) => Math.max(1, Math.floor(word.length / 4));

/** The broader terms of a rare word (no sense of it seen in WordNet's tagged corpus) count this much more. */
const RARE_BROADER_BOOST = 1.5;

/**
 * The need's concepts: each token with its variants — itself, its lemmas, related words and, for
 * unknown words, spellings of the catalog's — as lexemes of the index, the spelling corrections
 * made (typo → the catalog's word, as the encoder reads it) and the same as suggested to the caller
 * (typo → the form of that word closest to what was typed). Nothing of the index is read before
 * `after` resolves.
 */
export async function needConcepts(
  tokens: string[], after: Promise<void>, words: { lexicon: Lexicon; thesaurus: Thesaurus }, index: IndexVocabulary,
): Promise<{ concepts: Concept[]; corrections: Map<string, string>; suggestions: Map<string, string> }> {
  const { lexicon, thesaurus } = words;
  const tried = new Map<string, string[]>();
  const variantWords = tokens.map((t) => expand(thesaurus, t, 1));
  // Stemming needs only Postgres, not the index: it overlaps the caller's catch-up.
  let [stems] = await Promise.all([lexicon.stems([...new Set(variantWords.flatMap((v) => [...v.keys()]))]), after]);
  // Spelling: a token whose own stem the catalog does not know may be a typo of one it does.
  const corrections = await Promise.all(tokens.map(async (t, i) => {
    const stem = stems.get(t);
    if (stem && index.lexemeIds.has(stem)) return;
    // Real English words are taken as meant ("rain" is not a typo of "main"), and so are short ones.
    if (t.length < 4 || thesaurus.lemmas(t).length > 0) return false;
    const found = (await lexicon.corrections(t, maxEdits(t))).slice(0, 3);
    if (found[0]) tried.set(t, found.map((c) => c.word));
    for (const c of found) {
      for (const [w, weight] of expand(thesaurus, c.word, correctionWeight(c.edits))) {
        if ((variantWords[i]!.get(w) ?? 0) < weight) variantWords[i]!.set(w, weight);
      }
    }
    return found.length > 0;
  }));
  if (corrections.some(Boolean)) stems = await lexicon.stems([...new Set(variantWords.flatMap((v) => [...v.keys()]))]);

  const { lexemeIds, df } = index;
  const n = Math.max(1, index.documents());
  const idf = (lex: number) => Math.sqrt(Math.log(1 + (n - df[lex]! + 0.5) / (df[lex]! + 0.5)));
  const concepts = tokens.map((token, i) => {
    const variants = new Map<number, number>();
    for (const [word, w] of variantWords[i]!) {
      const stem = stems.get(word);
      const lex = stem ? lexemeIds.get(stem) : undefined;
      if (lex === undefined || df[lex]! <= 0) continue;
      if ((variants.get(lex) ?? 0) < w) variants.set(lex, w);
    }
    let weight = 0;
    for (const [lex, w] of variants) weight = Math.max(weight, w * idf(lex));
    return { token, variants, weight };
  });
  // Each typo is read as its closest spelling that some indexed service uses: the vocabulary keeps
  // the words of deleted services, which would make a suggestion that finds nothing (D22.4). In the
  // need's order, whatever order the lookups ended in.
  const best = new Map<string, string>();
  const suggestions = new Map<string, string>();
  for (const typo of tokens) {
    const candidates = tried.get(typo);
    if (!candidates) continue;
    const live = candidates.find((w) => {
      const stem = stems.get(w);
      const lex = stem ? lexemeIds.get(stem) : undefined;
      return lex !== undefined && df[lex]! > 0;
    });
    if (!live) continue;
    best.set(typo, live);
    suggestions.set(typo, closestForm(typo, live, thesaurus));
  }
  return { concepts, corrections: best, suggestions };
}

/**
 * The form of a catalog word closest to what was typed: the vocabulary holds words as services
 * wrote them ("transcribes", "interviews"), and "trasncribe" reads better as "transcribe".
 */
function closestForm(typo: string, word: string, thesaurus: Thesaurus): string {
  let best = word;
  let edits = editDistance(typo, word);
  for (const lemma of thesaurus.lemmas(word)) {
    const d = editDistance(typo, lemma, edits);
    if (d < edits) [best, edits] = [lemma, d];
  }
  return best;
}

/** A word with its lemmas and related words, each weighed (times `scale`). */
function expand(thesaurus: Thesaurus, word: string, scale: number): Map<string, number> {
  const out = new Map<string, number>([[word, scale]]);
  const put = (w: string, weight: number) => {
    if (!/^[a-z][a-z0-9-]*$/.test(w)) return;
    if ((out.get(w) ?? 0) < weight) out.set(w, weight);
  };
  // A rare word is well described by its broader term ("warfarin" → drug); a common one is not.
  const rare = thesaurus.isRare(word);
  for (const lemma of thesaurus.lemmas(word)) {
    put(lemma, scale);
    for (const r of thesaurus.related(lemma)) {
      const broader = r.relation === 'broader' || r.relation === 'broader2';
      put(r.word, scale * relationWeight(r.relation, r.sense) * (rare && broader ? RARE_BROADER_BOOST : 1));
    }
  }
  return out;
}
