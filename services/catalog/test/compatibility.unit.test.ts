import { describe, expect, it } from 'vitest';
import { inputCompatibility, ioSignature, outputCompatibility, requiredOutput, schemaTypes, typeFits, valueType } from '../src/domain/compatibility.js';

describe('input/output compatibility (D8.3)', () => {
  const sig = ioSignature({ type: 'object', properties: { text: { type: 'string' }, n: { type: ['integer', 'null'] }, mode: { enum: ['a', 'b'] } }, required: ['text', 'n'], allOf: [{ properties: { extra: { type: 'boolean' } }, required: ['extra'] }] });

  it('reads names, types and required properties, merging allOf', () => {
    expect(sig.required).toEqual(['text', 'n', 'extra']);
    expect([...sig.properties.get('n')!]).toEqual(['integer', 'null']);
    expect([...sig.properties.get('mode')!]).toEqual(['string']);
    expect([...schemaTypes({})]).toEqual(['any']);
  });
  it('is 1 when the validator accepts the input, else the share of required properties supplied with a fitting value', () => {
    expect(inputCompatibility(sig, { text: 'x' }, { accepted: true, faulty: new Set() })).toBe(1);
    expect(inputCompatibility(sig, { text: 'x', n: 2 })).toBeCloseTo(2 / 3);
    expect(inputCompatibility(sig, { text: 3, n: 2 })).toBeCloseTo(1 / 3);
    expect(inputCompatibility(sig, { text: 'x', n: 2, extra: true }, { accepted: false, faulty: new Set(['n']) })).toBeCloseTo(2 / 3);
    expect(inputCompatibility(sig, {})).toBe(0);
  });
  it('with no required properties, scores the share of supplied properties the schema knows when it refuses', () => {
    const open = ioSignature({ properties: { a: { type: 'string' } } });
    expect(inputCompatibility(open, { a: 'x', b: 1 }, { accepted: false, faulty: new Set() })).toBe(0.5);
    expect(inputCompatibility(open, { a: 'x' })).toBe(1);
  });
  it('reads outputRequired as a schema or as an example', () => {
    expect([...requiredOutput({ type: 'object', properties: { a: { type: 'string' }, b: { type: 'number' } } })]).toEqual([['a', 'string'], ['b', 'number']]);
    expect([...requiredOutput({ a: 'x', b: 2, c: 2.5, d: null, e: [1], f: { g: 1 } })]).toEqual([['a', 'string'], ['b', 'integer'], ['c', 'number'], ['d', 'null'], ['e', 'array'], ['f', 'object']]);
  });
  it('is the share of wanted properties the outputSchema provides with the right type', () => {
    const out = ioSignature({ properties: { a: { type: 'string' }, n: { type: 'integer' }, x: { type: 'number' }, any: {} } });
    expect(outputCompatibility(out, new Map([['a', 'string'], ['n', 'number']]))).toBe(1);
    expect(outputCompatibility(out, new Map([['x', 'integer']]))).toBe(0);
    expect(outputCompatibility(out, new Map([['a', 'number'], ['missing', 'string']]))).toBe(0);
    expect(outputCompatibility(out, new Map([['any', 'string'], ['a', 'string']]))).toBe(1);
    expect(outputCompatibility(out, new Map())).toBe(1);
  });
  it('knows an integer is a number', () => {
    expect(valueType(3)).toBe('integer');
    expect(valueType(3.5)).toBe('number');
    expect(typeFits('integer', new Set(['number']))).toBe(true);
    expect(typeFits('number', new Set(['integer']))).toBe(false);
  });
});
