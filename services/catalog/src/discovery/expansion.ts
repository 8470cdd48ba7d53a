import { needTokens } from './need.js';
import type { Relation, Thesaurus } from './thesaurus.js';

/** Relations that carry a service's key words to words a consumer might use instead. */
const DOCUMENT_RELATIONS = new Set<Relation>(['synonym', 'derived', 'similar', 'broader', 'gloss']);
const MAX_CHARS = 4000;

/**
 * The document side of semantic matching: the words related to a service's name, category and single-word
 * tags — synonyms, derivations, similar and broader terms and the words of
 * their definitions (WordNet). Stored in `text_e` and matched at the lowest weight, they let a need
 * meet a service through a shared neighbour ("angry" → feeling ← "sentiment") where neither side
 * uses the other's word.
 */
export function expansionText(keyWords: string[], thesaurus: Thesaurus): string {
  const out = new Set<string>();
  // Parts of compounds ("cross-sell", "exchange-rates") are left out: alone they mean something else.
  for (const token of needTokens(keyWords.filter((w) => !/[-_]/.test(w)).join(' '))) {
    for (const lemma of thesaurus.lemmas(token)) {
      for (const r of thesaurus.related(lemma)) {
        if (DOCUMENT_RELATIONS.has(r.relation) && r.sense === 0) out.add(r.word);
      }
    }
  }
  let text = '';
  for (const w of out) {
    if (text.length + w.length + 1 > MAX_CHARS) break;
    text += `${w} `;
  }
  return text.trim();
}
