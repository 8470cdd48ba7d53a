/**
 * D24.6: names shown to people — of accounts, agents and services — are plain text. They refuse
 * characters that change how the text around them reads or that cannot be seen: bidirectional
 * controls (embeddings, overrides, isolates, marks), the other format characters (zero-width spaces
 * and joiners, the word joiner, the byte-order mark, the soft hyphen…), control characters, and line
 * and paragraph separators. A name made of them could pass for another's, or show its letters in
 * another order than they are stored ("exe.txt" written backwards). Longer texts (descriptions)
 * may hold them: a language's own script needs them there, and nothing is told apart by them.
 */
const FORBIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

const NAMES: Record<number, string> = {
  0x061c: 'ARABIC LETTER MARK',
  0x00ad: 'SOFT HYPHEN',
  0x200b: 'ZERO WIDTH SPACE',
  0x200c: 'ZERO WIDTH NON-JOINER',
  0x200d: 'ZERO WIDTH JOINER',
  0x200e: 'LEFT-TO-RIGHT MARK',
  0x200f: 'RIGHT-TO-LEFT MARK',
  0x2028: 'LINE SEPARATOR',
  0x2029: 'PARAGRAPH SEPARATOR',
  0x202a: 'LEFT-TO-RIGHT EMBEDDING',
  0x202b: 'RIGHT-TO-LEFT EMBEDDING',
  0x202c: 'POP DIRECTIONAL FORMATTING',
  0x202d: 'LEFT-TO-RIGHT OVERRIDE',
  0x202e: 'RIGHT-TO-LEFT OVERRIDE',
  0x2060: 'WORD JOINER',
  0x2066: 'LEFT-TO-RIGHT ISOLATE',
  0x2067: 'RIGHT-TO-LEFT ISOLATE',
  0x2068: 'FIRST STRONG ISOLATE',
  0x2069: 'POP DIRECTIONAL ISOLATE',
  0xfeff: 'ZERO WIDTH NO-BREAK SPACE',
};

/** The character as an error names it: `U+202E RIGHT-TO-LEFT OVERRIDE`, or its code point and kind. */
export function characterName(c: string): string {
  const cp = c.codePointAt(0)!;
  const hex = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  const name = NAMES[cp];
  if (name) return `${hex} ${name}`;
  return `${hex}, ${/\p{Cc}/u.test(c) ? 'a control character' : 'an invisible format character'}`;
}

/** The first character a name may not hold, named; null when the text is plain. */
export function plainTextProblem(text: string): string | null {
  const bad = FORBIDDEN.exec(text);
  return bad ? characterName(bad[0]) : null;
}
