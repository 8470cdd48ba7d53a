import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { TSchema } from '@aex/contracts';
import { takeTokens } from '../src/domain/token-bucket.js';
import { jsonProblem, MAX_JSON_DEPTH, textProblem, valuesProblem } from '../src/http/input-hygiene.js';
import { coerceQuery, isMalformedQuery, parseQueryString } from '../src/http/query-string.js';
import { routes } from '../src/http/routes.js';
import { invalidJson } from '../src/http/json-body.js';
import { tlsOptions } from '../src/http/tls.js';

// Input hygiene at the edge (what JSON and URLs allow but the exchange refuses), strict query
// numbers, batch token takes (D4.1), and the route table's bond with D5.5.

describe('JSON body hygiene', () => {
  it.each([
    ['{"a":1,"a":2}', '/a', 'repeats the key "a"'],
    ['{"x":{"b":1,"\\u0062":2}}', '/x/b', 'repeats the key "b"'],
    ['{"name":"a\\u0000b"}', '/name', 'contains a NUL character (\\u0000)'],
    ['{"\\u0000":1}', '/\u0000', 'has a key that contains a NUL character (\\u0000)'],
    ['{"m":{"t":["ok","\\udfff"]}}', '/m/t/1', 'contains an unpaired UTF-16 surrogate'],
    ['{"t":"\\ud800x"}', '/t', 'contains an unpaired UTF-16 surrogate'],
    ['{"n":1e400}', '/n', 'is a number beyond the range of a double'],
    ['[1,2,{"a/b":-1e999}]', '/2/a~1b', 'is a number beyond the range of a double'],
  ])('refuses %s at %s', (text, pointer, message) => {
    expect(jsonProblem(text)).toEqual({ pointer, message });
  });

  it.each(['{"a":1,"b":{"a":2}}', '{"emoji":"\\ud83d\\ude00","raw":"😀"}', '[{"a":1},{"a":1}]', '{"s":"a\\"b\\\\","n":-1.5e300}', '"plain"', '{}'])('accepts %s', (text) => {
    expect(jsonProblem(text)).toBeNull();
  });

  it(`refuses nesting deeper than ${MAX_JSON_DEPTH} levels, at the level that exceeds it, without recursion`, () => {
    const ok = '['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH);
    expect(jsonProblem(ok)).toBeNull();
    const deep = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
    expect(jsonProblem(deep)).toEqual({ pointer: '/a'.repeat(MAX_JSON_DEPTH), message: `is nested deeper than ${MAX_JSON_DEPTH} levels` });
  });

  it('judges path and query strings the same way', () => {
    expect(textProblem('fine ☃')).toBeNull();
    expect(valuesProblem({ category: 'a\u0000' })).toEqual({ pointer: '/category', message: 'contains a NUL character (\\u0000)' });
    expect(valuesProblem({ tags: ['ok', '\udc00'] })).toEqual({ pointer: '/tags/1', message: 'contains an unpaired UTF-16 surrogate' });
  });
});

describe('query strings', () => {
  it('decodes %-sequences and +, keeps repeated names as arrays, and has no prototype', () => {
    const q = parseQueryString('a=1&b=x+y&c=%E2%98%83&a=2&flag');
    expect({ ...q }).toEqual({ a: ['1', '2'], b: 'x y', c: '☃', flag: '' });
    expect(Object.getPrototypeOf(q)).toBeNull();
    expect(isMalformedQuery(q)).toBe(false);
    expect({ ...parseQueryString('__proto__=1') }).toEqual({ ['__proto__']: '1' });
  });

  it.each(['a=%zz', 'a=%E0%A4', 'a=%ED%BF%BF', '%=1'])('marks %s malformed instead of guessing', (qs) => {
    expect(isMalformedQuery(parseQueryString(qs))).toBe(true);
  });

  it('turns only the plain spelling of a number or boolean into one', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' }, x: { type: 'number' }, b: { type: 'boolean' }, s: { type: 'string' } } } as unknown as TSchema;
    expect(coerceQuery(schema, { n: '12', x: '-0.5', b: 'true', s: '7' })).toEqual({ n: 12, x: -0.5, b: true, s: '7' });
    for (const bad of ['1e3', '0x10', ' 12', '+5', '12 ', '1.0', '012', '99999999999999999', '', 'NaN', 'Infinity']) {
      expect(coerceQuery(schema, { n: bad }).n).toBe(bad);
    }
    expect(coerceQuery(schema, { b: 'yes' }).b).toBe('yes');
    expect(coerceQuery(schema, { n: ['1', '2'] }).n).toEqual(['1', '2']);
  });
});

describe('D4.1 batch takes', () => {
  it('serves a batch exactly as the same requests one after the other would be', () => {
    const now = 1_000_000;
    const batch = takeTokens({ tokens: 3.5, atMs: now }, 60, now, 5);
    expect(batch.granted).toBe(3);
    expect(batch.results.map((r) => r.allowed)).toEqual([true, true, true, false, false]);
    expect(batch.results.map((r) => r.remaining)).toEqual([2, 1, 0, 0, 0]);
    expect(batch.state.tokens).toBeCloseTo(0.5);
    expect(batch.results[3]!.retryAfterSeconds).toBe(1);
  });

  it('takes nothing from an empty bucket and nothing for a batch of none', () => {
    expect(takeTokens({ tokens: 0.2, atMs: 0 }, 60, 0, 3).granted).toBe(0);
    expect(takeTokens(null, 10, 0, 0)).toMatchObject({ granted: 0, state: { tokens: 10 } });
  });
});

describe('route table and D5.5', () => {
  it('routes every POST, PATCH, PUT and DELETE to an operation declared as an effect, and no GET', () => {
    for (const r of routes) {
      if (!r.op) continue;
      expect([r.method, r.url, r.op.effect]).toEqual([r.method, r.url, r.method !== 'GET']);
    }
  });
});

describe('INVALID_JSON names where the body stops being JSON', () => {
  const at = (text: string) => {
    try {
      JSON.parse(text);
    } catch (err) {
      return invalidJson(text, err).entries[0]!;
    }
    throw new Error('parsed');
  };

  it('gives the character, line and column of a trailing comma', () => {
    expect(at('{"need":"x",}')).toMatchObject({ code: 'INVALID_JSON', field: '/body', details: { position: 12, line: 1, column: 13 } });
    expect(at('{"need":"x",}').message).toMatch(/^The request body is not valid JSON: .+ at line 1, column 13 \(character 12\)\.$/);
  });

  it('counts lines of a body sent pretty-printed', () => {
    expect(at('{\n  "need": "x"\n  "limit": 3\n}').details).toMatchObject({ line: 3, column: 3 });
  });

  it('places a body cut short at its end', () => {
    expect(at('{"need":').details).toMatchObject({ position: 8, line: 1, column: 9 });
  });
});

describe('the gateway\'s own HTTPS (TLS_CERT_FILE, TLS_KEY_FILE)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'aex-tls-unit-'));
  const { privateKey } = generateKeyPairSync('ed25519');
  writeFileSync(join(dir, 'key.pem'), privateKey.export({ format: 'pem', type: 'pkcs8' }));
  writeFileSync(join(dir, 'not-pem.txt'), 'hello');
  // Only the PEM's kind is read at start; the TLS stack checks the rest when it loads them.
  writeFileSync(join(dir, 'cert.pem'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves plain HTTP when neither is set', () => {
    expect(tlsOptions({})).toEqual({});
  });

  it('stops the start naming TLS_CERT_FILE when it cannot be read', () => {
    expect(() => tlsOptions({ TLS_CERT_FILE: join(dir, 'missing.pem'), TLS_KEY_FILE: join(dir, 'key.pem') })).toThrow(/TLS_CERT_FILE names a file that cannot be read/);
  });

  it('stops the start naming the variable whose file holds no PEM of its kind', () => {
    expect(() => tlsOptions({ TLS_CERT_FILE: join(dir, 'not-pem.txt'), TLS_KEY_FILE: join(dir, 'key.pem') })).toThrow(/TLS_CERT_FILE names a file that holds no PEM certificate/);
    expect(() => tlsOptions({ TLS_CERT_FILE: join(dir, 'cert.pem'), TLS_KEY_FILE: join(dir, 'not-pem.txt') })).toThrow(/TLS_KEY_FILE names a file that holds no PEM private key/);
    expect(tlsOptions({ TLS_CERT_FILE: join(dir, 'cert.pem'), TLS_KEY_FILE: join(dir, 'key.pem') }).https?.key.toString()).toContain('PRIVATE KEY');
  });
});
