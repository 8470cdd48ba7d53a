import { AppError, type ErrorEntry } from '@aex/contracts';

/** D22.5 bounds: a handful of short phrases, each a need an agent might state. */
export const SAMPLE_NEEDS = { maxCount: 10, minChars: 3, maxChars: 200 } as const;

/**
 * Characters a sample need may not hold: control characters, format characters (bidirectional
 * overrides and isolates, zero-width spaces and joiners, the byte-order mark), private-use and
 * surrogate code points, and line or paragraph separators. A phrase is matched against needs and
 * shown to other agents: an invisible character would let two phrases look alike and differ, or
 * make one read differently from what it says.
 */
const FORBIDDEN = /[\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Zl}\p{Zp}]/u;

/** How a character is named in an error: its code point. */
const codePoint = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * A contract's sample needs as they are stored (each trimmed), or the problems with them, each
 * pointing at the phrase it is about (D22.5, 400 VALIDATION_ERROR). The request schema has already
 * bounded their number and raw length.
 */
export function checkSampleNeeds(raw: readonly string[]): { value: string[]; errors: ErrorEntry[] } {
  const value: string[] = [];
  const errors: ErrorEntry[] = [];
  const seen = new Map<string, number>();
  const problem = (i: number, message: string) => errors.push({ code: 'VALIDATION_ERROR', message: `sampleNeeds/${i} ${message}`, field: `/body/sampleNeeds/${i}` });
  if (raw.length > SAMPLE_NEEDS.maxCount) {
    errors.push({ code: 'VALIDATION_ERROR', message: `At most ${SAMPLE_NEEDS.maxCount} sample needs; got ${raw.length}.`, field: '/body/sampleNeeds' });
  }
  raw.forEach((phrase, i) => {
    const text = phrase.trim();
    value.push(text);
    const bad = FORBIDDEN.exec(text);
    if (bad) return problem(i, `contains an invisible or control character (${codePoint(bad[0])}); write the phrase in plain text.`);
    const length = [...text].length;
    if (length < SAMPLE_NEEDS.minChars || length > SAMPLE_NEEDS.maxChars) {
      return problem(i, `is ${length} character${length === 1 ? '' : 's'} long once trimmed; each sample need has ${SAMPLE_NEEDS.minChars} to ${SAMPLE_NEEDS.maxChars}.`);
    }
    // Compatibility forms fold too ("ﬁle" and "file"), so a repeat cannot hide behind a ligature.
    const key = text.normalize('NFKC').toLowerCase();
    const first = seen.get(key);
    if (first !== undefined) return problem(i, `repeats sampleNeeds/${first} (case and compatibility forms, such as full-width letters, are ignored).`);
    seen.set(key, i);
  });
  return { value, errors };
}

/** The sample needs to store (undefined when none were sent), or 400 VALIDATION_ERROR naming each bad phrase. */
export function acceptSampleNeeds(raw: readonly string[] | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const { value, errors } = checkSampleNeeds(raw);
  if (errors.length) throw AppError.many(errors);
  return value;
}
