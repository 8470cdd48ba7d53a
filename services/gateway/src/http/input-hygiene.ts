import { escapePointer } from '@aex/contracts';

/**
 * Input hygiene at the edge: what JSON and URLs allow but the exchange refuses, checked once here
 * before any service sees a request. NUL cannot be stored by Postgres (text or jsonb) and a lone
 * UTF-16 surrogate cannot be encoded at all; duplicate keys would silently keep the last value;
 * numbers beyond the double range would silently become null; and nesting without bound breaks
 * every recursive consumer (JSON.stringify, validators). Each problem names where it is.
 */
/** A UUID as the path of a route names it (an agent's, a transaction's id). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface InputProblem {
  /** JSON Pointer inside the part (body, query, path), '' for the part itself. */
  pointer: string;
  message: string;
}

/** Body nesting limit: far above any contract or JSON Schema an agent sends, far below a stack overflow. */
export const MAX_JSON_DEPTH = 64;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string may not be accepted (NUL, lone surrogate), or null. */
export function textProblem(s: string): string | null {
  if (s.includes('\u0000')) return 'contains a NUL character (\\u0000)';
  if (LONE_SURROGATE.test(s)) return 'contains an unpaired UTF-16 surrogate';
  return null;
}

interface Frame {
  kind: 'object' | 'array';
  index: number;
  key: string | null;
  expectKey: boolean;
  keys: Set<string> | null;
}

const pointerOf = (stack: Frame[], extra?: string) =>
  stack.map((f) => (f.kind === 'array' ? `/${f.index}` : f.key === null ? '' : `/${escapePointer(f.key)}`)).join('') + (extra === undefined ? '' : `/${escapePointer(extra)}`);

const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/**
 * Scans JSON text that JSON.parse accepted; the first problem found, or null. One pass over the
 * characters, no recursion, so a hostile body cannot exhaust the stack here either.
 */
export function jsonProblem(text: string, maxDepth = MAX_JSON_DEPTH): InputProblem | null {
  const stack: Frame[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) {
      // Problems are reported at the container that would exceed the limit.
      if (stack.length >= maxDepth) return { pointer: pointerOf(stack), message: `is nested deeper than ${maxDepth} levels` };
      stack.push(c === 0x7b ? { kind: 'object', index: 0, key: null, expectKey: true, keys: new Set() } : { kind: 'array', index: 0, key: null, expectKey: false, keys: null });
      i++;
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
      i++;
    } else if (c === 0x2c) {
      const top = stack[stack.length - 1];
      if (top?.kind === 'array') top.index++;
      else if (top) {
        top.expectKey = true;
        top.key = null;
      }
      i++;
    } else if (c === 0x22) {
      const end = stringEnd(text, i);
      const top = stack[stack.length - 1];
      const isKey = top?.kind === 'object' && top.expectKey;
      const raw = text.slice(i + 1, end);
      const value = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
      const problem = textProblem(value);
      if (isKey) {
        if (problem) return { pointer: pointerOf(stack, value), message: `has a key that ${problem}` };
        if (top.keys!.has(value)) return { pointer: pointerOf(stack, value), message: `repeats the key "${value}"` };
        top.keys!.add(value);
        top.key = value;
        top.expectKey = false;
      } else if (problem) {
        return { pointer: pointerOf(stack), message: problem };
      }
      i = end + 1;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      while (j < n && /[0-9eE+.-]/.test(text[j]!)) j++;
      if (!Number.isFinite(Number(text.slice(i, j)))) return { pointer: pointerOf(stack), message: 'is a number beyond the range of a double' };
      i = j;
    } else {
      i++;
    }
  }
  return null;
}

/** Index of the closing quote of the string opening at `start` (valid JSON assumed). */
function stringEnd(text: string, start: number): number {
  let j = start + 1;
  for (;;) {
    const c = text.charCodeAt(j);
    if (c === 0x22) return j;
    if (c === 0x5c) {
      j += text.charCodeAt(j + 1) === 0x75 && isHex(text.charCodeAt(j + 2)) ? 6 : 2;
    } else {
      j++;
    }
  }
}

/** The first bad string among path or query values (strings, or arrays of them), with its pointer. */
export function valuesProblem(values: Record<string, unknown>): InputProblem | null {
  for (const [name, v] of Object.entries(values)) {
    const list = Array.isArray(v) ? v : [v];
    for (let k = 0; k < list.length; k++) {
      const item = list[k];
      if (typeof item !== 'string') continue;
      const problem = textProblem(name) ?? textProblem(item);
      if (problem) return { pointer: `/${escapePointer(name)}${Array.isArray(v) ? `/${k}` : ''}`, message: problem };
    }
  }
  return null;
}
