import { describe, expect, it } from 'vitest';
import { checkContractSchema, compileContractSchema, DRAFT_2020_12, SCHEMA_LIMITS, ValidatorCache, validateAgainst } from '../src/index.js';

const paths = (schema: unknown) => checkContractSchema(schema).map((p) => p.path);

describe('checkContractSchema (D7.2)', () => {
  it('accepts an ordinary 2020-12 object schema, with or without $schema', () => {
    const schema = { type: 'object', properties: { a: { type: 'string', format: 'email' }, n: { type: 'integer', minimum: 0 } }, required: ['a'] };
    expect(checkContractSchema(schema)).toEqual([]);
    expect(checkContractSchema({ $schema: DRAFT_2020_12, ...schema })).toEqual([]);
    expect(checkContractSchema({ $schema: `${DRAFT_2020_12}#`, ...schema })).toEqual([]);
  });

  it('treats unknown keywords as annotations, as JSON Schema does', () => {
    expect(checkContractSchema({ type: 'object', 'x-internal': true, example: { a: 1 } })).toEqual([]);
  });

  it('refuses what is not an object', () => {
    for (const s of [null, true, [], 'schema', 3]) expect(paths(s)).toEqual(['']);
  });

  it('refuses other drafts', () => {
    expect(paths({ $schema: 'http://json-schema.org/draft-07/schema#' })).toEqual(['/$schema']);
  });

  it('refuses schemas over 64 KiB', () => {
    const problems = checkContractSchema({ description: 'x'.repeat(SCHEMA_LIMITS.maxBytes) });
    expect(problems[0]!.message).toMatch(/at most 65536 bytes/);
  });

  it('refuses every reference that leaves the schema, wherever it sits', () => {
    expect(paths({ $ref: 'https://example.com/s.json' })).toEqual(['/$ref']);
    expect(paths({ items: { $ref: 'file:///etc/passwd' } })).toEqual(['/items/$ref']);
    expect(paths({ anyOf: [{ type: 'string' }, { $dynamicRef: 'other#meta' }] })).toEqual(['/anyOf/1/$dynamicRef']);
    expect(paths({ properties: { 'a/b': { $ref: 'x.json' } } })).toEqual(['/properties/a~1b/$ref']);
    expect(paths({ $defs: { x: { $id: 'https://e.com/x' } } })).toEqual(['/$defs/x/$id']);
    expect(paths({ not: { $schema: DRAFT_2020_12 } })).toEqual(['/not/$schema']);
  });

  it('does not mistake property names for keywords', () => {
    expect(checkContractSchema({ type: 'object', properties: { $ref: { type: 'string' }, $id: { type: 'string' } } })).toEqual([]);
  });

  it('accepts references inside the schema and a root $id (ignored, never registered)', () => {
    const s = { $id: 'https://provider.example/a.json', $defs: { n: { type: 'integer' } }, type: 'object', properties: { a: { $ref: '#/$defs/n' } } };
    expect(checkContractSchema(s)).toEqual([]);
    // The same $id twice never collides: nothing is registered by id.
    expect(checkContractSchema({ ...s, properties: { b: { $ref: '#/$defs/n' } } })).toEqual([]);
    const validate = compileContractSchema(s);
    expect(validate({ a: 1 })).toBe(true);
    expect(validate({ a: 'x' })).toBe(false);
  });

  it('refuses references to nothing and meta-schema violations', () => {
    expect(checkContractSchema({ properties: { a: { $ref: '#/$defs/none' } } })[0]!.message).toMatch(/cannot be compiled/);
    expect(paths({ type: 'strng' })).toContain('/type');
    expect(paths({ minLength: -1 })).toContain('/minLength');
    expect(paths({ required: 'a' })).toContain('/required');
  });

  it('refuses regular expressions that backtrack catastrophically, and invalid ones', () => {
    expect(checkContractSchema({ pattern: '^(a+)+$' })[0]!.message).toMatch(/exponentially/);
    expect(checkContractSchema({ patternProperties: { '^(a|a)*$': {} } })[0]).toMatchObject({ path: '/patternProperties/^(a|a)*$' });
    expect(checkContractSchema({ pattern: '^\\s*\\S+\\s*\\S+$' })[0]!.message).toMatch(/polynomially/);
    expect(checkContractSchema({ pattern: '([a-z]' })[0]!.message).toMatch(/not valid/);
    expect(checkContractSchema({ pattern: 'a'.repeat(SCHEMA_LIMITS.maxPatternLength + 1) })[0]!.message).toMatch(/at most/);
  });

  it('accepts linear patterns, and a quadratic one on strings with a small maxLength', () => {
    expect(checkContractSchema({ pattern: '^[0-9a-f]{64}([0-9a-f]{64})?$' })).toEqual([]);
    expect(checkContractSchema({ pattern: '^[a-z]+(\\.[a-z]+)*$' })).toEqual([]);
    expect(checkContractSchema({ type: 'string', maxLength: 200, pattern: '^\\s*\\S+\\s*\\S+$' })).toEqual([]);
  });

  it('bounds nesting depth', () => {
    let s: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < SCHEMA_LIMITS.maxDepth + 2; i++) s = { items: s };
    expect(checkContractSchema(s)[0]!.message).toMatch(/nest/);
  });
});

describe('ValidatorCache', () => {
  const v1 = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
  const v2 = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };

  it('compiles once per service, revision and side', () => {
    const cache = new ValidatorCache();
    const a = cache.get({ serviceId: 's', revision: 1 }, 'input', v1);
    expect(cache.get({ serviceId: 's', revision: 1 }, 'input', v1)).toBe(a);
    const b = cache.get({ serviceId: 's', revision: 2 }, 'input', v2);
    expect(b).not.toBe(a);
    expect(a({ a: 'x' })).toBe(true);
    expect(b({ a: 'x' })).toBe(false);
    cache.get({ serviceId: 's', revision: 1 }, 'output', v1);
    expect(cache.stats).toEqual({ size: 3, compiles: 3 });
  });

  it('evicts the least recently used beyond its capacity', () => {
    const cache = new ValidatorCache(2);
    const first = cache.get({ serviceId: 'a', revision: 1 }, 'input', v1);
    cache.get({ serviceId: 'b', revision: 1 }, 'input', v1);
    cache.get({ serviceId: 'a', revision: 1 }, 'input', v1); // a is now the most recent
    cache.get({ serviceId: 'c', revision: 1 }, 'input', v1); // evicts b
    expect(cache.get({ serviceId: 'a', revision: 1 }, 'input', v1)).toBe(first);
    expect(cache.stats.compiles).toBe(3);
    cache.get({ serviceId: 'b', revision: 1 }, 'input', v1);
    expect(cache.stats.compiles).toBe(4);
  });

  it('reports violations as D1.3 entries under a pointer', () => {
    const validate = compileContractSchema({ type: 'object', properties: { a: { type: 'string' }, b: {} }, required: ['a', 'b'], additionalProperties: false });
    const r = validateAgainst(validate, { a: 3, c: 1 }, '/input', 'SCHEMA_VALIDATION_FAILED');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => [e.code, e.field])).toEqual(expect.arrayContaining([
      ['SCHEMA_VALIDATION_FAILED', '/input/b'],
      ['SCHEMA_VALIDATION_FAILED', '/input/c'],
      ['SCHEMA_VALIDATION_FAILED', '/input/a'],
    ]));
    expect(validateAgainst(validate, { a: 'x', b: 1 }, '/input', 'SCHEMA_VALIDATION_FAILED')).toEqual({ ok: true });
  });
});
