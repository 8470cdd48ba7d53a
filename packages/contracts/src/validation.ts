import { Ajv2020, type AnySchemaObject, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import type { DataValidationCxt } from 'ajv/dist/types/index.js';
import addFormatsModule from 'ajv-formats';
import type { Static, TSchema } from '@sinclair/typebox';
import { AppError, type ErrorCode, type ErrorEntry } from './errors.js';
import { plainTextProblem } from './plain-text.js';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

const utf8 = new TextEncoder();

function makeAjv(coerceTypes: boolean): Ajv2020 {
  // Our own contract schemas are trusted and compiled once; untrusted service schemas get their own
  // instance in the catalog.
  // `verbose`: an error carries its schema, so an unknown property can be answered with the closest allowed one.
  const ajv = new Ajv2020({ allErrors: true, strict: false, coerceTypes, useDefaults: true, allowUnionTypes: true, verbose: true });
  addFormats(ajv);
  // `maxJsonBytes`: the size of a free-form value (metadata, capabilities, examples) as JSON. Every
  // stored resource must fit in one bus message and one answer (packages/platform reply-budget.ts).
  const maxJsonBytes = function check(max: number, data: unknown): boolean {
    const bytes = utf8.encode(JSON.stringify(data)).length;
    if (bytes <= max) return true;
    (check as unknown as { errors: Partial<ErrorObject>[] }).errors = [{ keyword: 'maxJsonBytes', message: `must be at most ${max} bytes as JSON (it is ${bytes})`, params: { limit: max, bytes } }];
    return false;
  };
  ajv.addKeyword({ keyword: 'maxJsonBytes', type: ['object', 'array'], schemaType: 'number', errors: true, validate: maxJsonBytes });
  // `plainText` (D24.6): a name shown to people holds no bidirectional control or invisible
  // character, and is stored without leading and trailing spaces (trimmed here, so the value a
  // service receives and stores is the trimmed one; `minLength` holds once trimmed).
  const plainText = function check(enabled: boolean, data: string, parent?: AnySchemaObject, cxt?: DataValidationCxt): boolean {
    if (!enabled) return true;
    const minLength = typeof parent?.minLength === 'number' ? parent.minLength : 0;
    const fail = (message: string, params: Record<string, unknown>) => {
      (check as unknown as { errors: Partial<ErrorObject>[] }).errors = [{ keyword: 'plainText', message, params }];
      return false;
    };
    const problem = plainTextProblem(data);
    if (problem) return fail(`contains ${problem}: names are plain text, without bidirectional controls or invisible characters`, { character: problem });
    const trimmed = data.trim();
    if (trimmed.length < minLength) return fail(`must not be blank (at least ${minLength} character${minLength === 1 ? '' : 's'} once leading and trailing spaces are removed)`, { limit: minLength });
    if (trimmed !== data && cxt?.parentData) (cxt.parentData as Record<string | number, unknown>)[cxt.parentDataProperty] = trimmed;
    return true;
  };
  ajv.addKeyword({ keyword: 'plainText', type: 'string', schemaType: 'boolean', modifying: true, errors: true, validate: plainText });
  return ajv;
}

const strictAjv = makeAjv(false);
const coercingAjv = makeAjv(true);

export interface Validator<T> {
  readonly schema: TSchema;
  /** Returns the value (defaults applied, and query strings coerced when `coerce`) or the D1.3 entries. */
  check(value: unknown, pointerPrefix?: string): { ok: true; value: T } | { ok: false; errors: ErrorEntry[] };
  /** Like check, but throws AppError(code) with one entry per violation. */
  parse(value: unknown, pointerPrefix?: string, code?: ErrorCode): T;
}

const cache = new WeakMap<TSchema, ValidateFunction>();
const coercingCache = new WeakMap<TSchema, ValidateFunction>();

function compiled(schema: TSchema, coerce: boolean): ValidateFunction {
  const store = coerce ? coercingCache : cache;
  let fn = store.get(schema);
  if (!fn) {
    fn = (coerce ? coercingAjv : strictAjv).compile(schema);
    store.set(schema, fn);
  }
  return fn;
}

/** A validator for a contract schema; the TypeScript type comes from the same schema. */
export function validator<S extends TSchema>(schema: S, opts: { coerce?: boolean } = {}): Validator<Static<S>> {
  const fn = compiled(schema, opts.coerce ?? false);
  const check: Validator<Static<S>>['check'] = (value, prefix = '') => {
    if (fn(value)) return { ok: true, value: value as Static<S> };
    return { ok: false, errors: toEntries(fn.errors ?? [], prefix) };
  };
  return {
    schema,
    check,
    parse(value, prefix = '', code = 'VALIDATION_ERROR') {
      const r = check(value, prefix);
      if (r.ok) return r.value;
      throw AppError.many(r.errors.map((e) => ({ ...e, code })));
    },
  };
}

/** D1.3: ajv errors → error entries with a JSON Pointer `field`, at most 20, most specific first. */
export function toEntries(errors: ErrorObject[], prefix = '', code: ErrorCode = 'VALIDATION_ERROR'): ErrorEntry[] {
  const entries: ErrorEntry[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    // anyOf/oneOf summary entries repeat what their branches already said.
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue;
    let field = prefix + e.instancePath;
    let message: string;
    if (e.keyword === 'required') {
      const name = String((e.params as { missingProperty: string }).missingProperty);
      field = `${field}/${escapePointer(name)}`;
      message = `The property "${name}" is required.`;
    } else if (e.keyword === 'additionalProperties') {
      const name = String((e.params as { additionalProperty: string }).additionalProperty);
      field = `${field}/${escapePointer(name)}`;
      const allowed = Object.keys((e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {});
      const guess = closestName(name, allowed);
      message = guess ? `Unknown property "${name}" is not allowed; did you mean "${guess}"?` : `Unknown property "${name}" is not allowed.`;
      const key = `${field}|${message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      entries.push({ code, message, field, details: { keyword: e.keyword, ...e.params, allowedProperties: allowed, ...(guess ? { didYouMean: guess } : {}) } });
      if (entries.length >= 20) break;
      continue;
    } else if (e.keyword === 'minProperties' && (e.params as { limit: number }).limit === 1) {
      // A change that must name something (D23.3): which fields it may name.
      const allowed = Object.keys((e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {});
      message = `${describe(field)} must name at least one field${allowed.length ? `: ${allowed.join(', ')}` : ''}.`;
    } else {
      message = `${describe(field)} ${e.message ?? 'is invalid'}.`;
    }
    const key = `${field}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    entries.push({ code, message, field, details: { keyword: e.keyword, ...e.params } });
    if (entries.length >= 20) break;
  }
  if (entries.length === 0) entries.push({ code, message: 'The request is invalid.', field: prefix || '' });
  return entries;
}

/**
 * The allowed name an unknown one most likely meant: the same letters in another case, or the
 * fewest edits (insert, delete, replace, swap of neighbours) within a third of its length, at least 2.
 */
export function closestName(name: string, allowed: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const sameCase = allowed.find((a) => a.toLowerCase() === lower);
  if (sameCase) return sameCase;
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1;
  for (const candidate of allowed) {
    const d = editDistance(lower, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Optimal string alignment distance (Damerau–Levenshtein without repeated edits of one substring). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 8) return Number.MAX_SAFE_INTEGER;
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

function describe(field: string): string {
  const name = field.split('/').filter(Boolean).pop();
  return name ? `"${name}"` : 'The value';
}

export function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
