import { createHash } from 'node:crypto';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { checkSync } from 'recheck';
import { escapePointer } from '@aex/contracts';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** D7.2 bounds of one contract schema. */
export const SCHEMA_LIMITS = {
  maxBytes: 64 * 1024,
  maxDepth: 48,
  maxPatternLength: 512,
  maxPatterns: 64,
  /** A pattern with quadratic worst case is accepted only on strings at most this long. */
  maxLengthForQuadratic: 4096,
  /** Time the ReDoS analysis may take per pattern; beyond it the pattern is refused as unverifiable. */
  patternCheckMs: 3000,
} as const;

export const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/** One reason a schema is refused: `path` is a JSON Pointer inside the schema. */
export interface SchemaProblem {
  path: string;
  message: string;
}

/**
 * The ajv instance for untrusted provider schemas (D7.2). Unknown keywords are annotations in JSON
 * Schema, so strict mode is off; formats are validated; schemas with an `$id` are never registered
 * (`addUsedSchema: false`) and nothing is ever loaded (`loadSchema` unset): only `#…` references
 * resolve, and those were checked before compiling.
 */
function untrustedAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true, allowUnionTypes: true, addUsedSchema: false, logger: false, validateFormats: true });
  addFormats(ajv);
  return ajv;
}

const ajv = untrustedAjv();

// Keywords whose value is a schema, a map of schemas, or an array of schemas (2020-12 core + applicator
// + unevaluated + content vocabularies). Other keywords hold data, never schemas, so a property
// named "$ref" inside `properties` is not mistaken for a reference.
const SCHEMA_VALUED = ['additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'items', 'contains', 'propertyNames', 'not', 'if', 'then', 'else', 'contentSchema', 'additionalItems'];
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const SCHEMA_ARRAYS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];

/**
 * Checks one provider schema against every D7.2 rule and returns what is wrong (empty when it may
 * be stored): an object, at most 64 KiB, `$schema` absent or 2020-12, valid against the 2020-12
 * meta-schema, references only inside itself, no embedded resources, no regular expression that
 * can backtrack catastrophically (the validator later runs them on untrusted input), compilable.
 */
export function checkContractSchema(schema: unknown): SchemaProblem[] {
  return verdictOf(schema).problems;
}

/** The validator compiled while checking a schema that passed `checkContractSchema` (compiled once). */
export function checkedValidator(schema: object): ValidateFunction {
  const { validate } = verdictOf(schema);
  if (!validate) throw new Error('the schema did not pass checkContractSchema');
  return validate;
}

interface SchemaVerdict {
  problems: SchemaProblem[];
  validate?: ValidateFunction;
}

/** Verdicts by schema content: providers reuse schemas and re-send them on every PATCH. */
const checked = new Map<string, SchemaVerdict>();
const CHECKED_CAPACITY = 1000;

function verdictOf(schema: unknown): SchemaVerdict {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    return { problems: [{ path: '', message: 'A schema must be a JSON object.' }] };
  }
  const text = JSON.stringify(schema);
  const key = text.length <= SCHEMA_LIMITS.maxBytes ? createHash('sha256').update(text).digest('base64') : undefined;
  const known = key === undefined ? undefined : checked.get(key);
  if (known) return known;
  const verdict = checkUncached(schema as Record<string, unknown>, text);
  if (key !== undefined) {
    if (checked.size >= CHECKED_CAPACITY) checked.delete(checked.keys().next().value as string);
    checked.set(key, verdict);
  }
  return verdict;
}

function checkUncached(schema: Record<string, unknown>, text: string): SchemaVerdict {
  const problems = findProblems(schema, text);
  if (problems.length) return { problems };
  try {
    return { problems, validate: compileContractSchema(schema) };
  } catch (err) {
    return { problems: [{ path: '', message: `The schema cannot be compiled: ${(err as Error).message}` }] };
  }
}

function findProblems(schema: Record<string, unknown>, text: string): SchemaProblem[] {
  const bytes = Buffer.byteLength(text);
  if (bytes > SCHEMA_LIMITS.maxBytes) {
    return [{ path: '', message: `A schema may be at most ${SCHEMA_LIMITS.maxBytes} bytes; this one is ${bytes}.` }];
  }
  const root = schema as Record<string, unknown>;
  if (root.$schema !== undefined && root.$schema !== DRAFT_2020_12 && root.$schema !== `${DRAFT_2020_12}#`) {
    return [{ path: '/$schema', message: `Only JSON Schema 2020-12 (${DRAFT_2020_12}) is accepted.` }];
  }
  const problems: SchemaProblem[] = [];
  walk(root, '', 0, problems, { patterns: 0 });
  if (problems.length > 0) return problems.slice(0, 20);

  if (!ajv.validateSchema(root)) {
    for (const e of ajv.errors ?? []) {
      if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === '$dynamicRef') continue;
      problems.push({ path: e.instancePath, message: `${e.instancePath || 'The schema'} ${e.message ?? 'is invalid'} (2020-12 meta-schema).` });
      if (problems.length >= 20) break;
    }
    return problems.length ? problems : [{ path: '', message: 'The schema is not valid JSON Schema 2020-12.' }];
  }
  return [];
}

function walk(node: Record<string, unknown>, path: string, depth: number, problems: SchemaProblem[], seen: { patterns: number }): void {
  if (problems.length >= 20) return;
  if (depth > SCHEMA_LIMITS.maxDepth) {
    problems.push({ path, message: `Schemas may nest at most ${SCHEMA_LIMITS.maxDepth} levels.` });
    return;
  }
  const at = (key: string) => `${path}/${escapePointer(key)}`;
  for (const key of ['$ref', '$dynamicRef']) {
    const ref = node[key];
    if (typeof ref === 'string' && !ref.startsWith('#')) {
      problems.push({ path: at(key), message: `${key} "${ref.slice(0, 100)}" points outside the schema; only references inside it (#…) are allowed, nothing is fetched.` });
    }
  }
  if (depth > 0 && node.$id !== undefined) {
    problems.push({ path: at('$id'), message: 'Embedded schema resources ($id below the root) are not allowed.' });
  }
  if (depth > 0 && node.$schema !== undefined) {
    problems.push({ path: at('$schema'), message: '$schema is only allowed at the root of the schema.' });
  }
  const maxLength = typeof node.maxLength === 'number' ? node.maxLength : Infinity;
  if (typeof node.pattern === 'string') checkPattern(node.pattern, maxLength, at('pattern'), problems, seen);
  for (const key of SCHEMA_VALUED) {
    const child = node[key];
    if (isObject(child)) walk(child, at(key), depth + 1, problems, seen);
  }
  for (const key of SCHEMA_MAPS) {
    const map = node[key];
    if (!isObject(map)) continue;
    for (const [name, child] of Object.entries(map)) {
      if (key === 'patternProperties') checkPattern(name, maxPropertyNameLength, `${at(key)}/${escapePointer(name)}`, problems, seen);
      if (isObject(child)) walk(child, `${at(key)}/${escapePointer(name)}`, depth + 1, problems, seen);
    }
  }
  for (const key of SCHEMA_ARRAYS) {
    const list = node[key];
    if (!Array.isArray(list)) continue;
    list.forEach((child, i) => {
      if (isObject(child)) walk(child, `${at(key)}/${i}`, depth + 1, problems, seen);
    });
  }
}

/** Property names are JSON object keys inside a request body of at most 1 MiB; in practice short. */
const maxPropertyNameLength = 1024;

/**
 * A `pattern` runs on untrusted strings (transaction inputs and outputs, discovery inputs), and
 * JavaScript's backtracking engine cannot be interrupted: a pattern with exponential worst case is
 * refused, one with polynomial worst case unless the strings it meets are short (`maxLength`), and
 * one the analysis (recheck) cannot settle in time is refused as unverifiable.
 */
function checkPattern(pattern: string, maxLength: number, path: string, problems: SchemaProblem[], seen: { patterns: number }): void {
  if (++seen.patterns > SCHEMA_LIMITS.maxPatterns) {
    if (seen.patterns === SCHEMA_LIMITS.maxPatterns + 1) problems.push({ path, message: `A schema may hold at most ${SCHEMA_LIMITS.maxPatterns} regular expressions.` });
    return;
  }
  if (pattern.length > SCHEMA_LIMITS.maxPatternLength) {
    problems.push({ path, message: `Regular expressions may be at most ${SCHEMA_LIMITS.maxPatternLength} characters.` });
    return;
  }
  try {
    new RegExp(pattern, 'u');
  } catch {
    problems.push({ path, message: 'The regular expression is not valid (ECMA-262, unicode mode).' });
    return;
  }
  const verdict = patternVerdict(pattern);
  if (verdict.status === 'safe') return;
  if (verdict.status === 'unknown') {
    problems.push({ path, message: 'The regular expression is too complex to prove safe from catastrophic backtracking; simplify it.' });
  } else if (verdict.exponential) {
    problems.push({ path, message: 'The regular expression can backtrack exponentially (nested or overlapping repetition); simplify it.' });
  } else if (verdict.degree > 2 || maxLength > SCHEMA_LIMITS.maxLengthForQuadratic) {
    problems.push({
      path,
      message: `The regular expression can backtrack polynomially (degree ${verdict.degree}); give the string a maxLength of at most ${SCHEMA_LIMITS.maxLengthForQuadratic} (quadratic only) or simplify it.`,
    });
  }
}

type Verdict = { status: 'safe' } | { status: 'unknown' } | { status: 'vulnerable'; exponential: boolean; degree: number };
const verdicts = new Map<string, Verdict>();

function patternVerdict(pattern: string): Verdict {
  const hit = verdicts.get(pattern);
  if (hit) return hit;
  const d = checkSync(pattern, 'u', { timeout: SCHEMA_LIMITS.patternCheckMs });
  const verdict: Verdict = d.status === 'safe' ? { status: 'safe' }
    : d.status === 'vulnerable' ? { status: 'vulnerable', exponential: d.complexity.type === 'exponential', degree: d.complexity.type === 'polynomial' ? d.complexity.degree : Infinity }
      : { status: 'unknown' };
  if (verdicts.size > 10_000) verdicts.clear();
  verdicts.set(pattern, verdict);
  return verdict;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Compiles a schema that passed `checkContractSchema`. The compiled function is dropped from ajv's
 * own cache at once (untrusted schemas must not accumulate there); callers keep it in a
 * `ValidatorCache` instead.
 */
export function compileContractSchema(schema: object): ValidateFunction {
  // A root $id would become the base URI of its references; they are all "#…" anyway, and leaving
  // it out means two services reusing one $id can never collide.
  const { $id: _ignored, ...body } = schema as Record<string, unknown>;
  try {
    return ajv.compile(body);
  } finally {
    ajv.removeSchema(body);
  }
}
