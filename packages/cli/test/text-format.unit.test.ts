import { describe, expect, it } from 'vitest';
import { record, table, usd } from '../src/text-format.js';

describe('tables', () => {
  const rows = [{ id: 'a', price: 250, note: null }, { id: 'longer-id', price: 5, note: { k: 1 } }];

  it('pads every column but the last to its widest cell, two spaces apart, under a header', () => {
    expect(table(rows, [['ID', (r) => r.id], ['PRICE', (r) => usd(r.price)], ['NOTE', (r) => r.note]])).toBe(
      'ID         PRICE  NOTE\n'
      + 'a          $2.50  -\n'
      + 'longer-id  $0.05  {"k":1}\n',
    );
  });

  it('says (none) for no rows', () => {
    expect(table([], [['ID', (r: { id: string }) => r.id]])).toBe('(none)\n');
  });

  it('leaves no trailing spaces when the last cell is empty', () => {
    expect(table([{ a: 'x', b: '' }], [['A', (r) => r.a], ['B', (r) => r.b]])).toBe('A  B\nx\n');
  });
});

describe('records', () => {
  it('aligns the values after the longest key, a missing value shown as -', () => {
    expect(record([['id', 'x'], ['signing key', 'k'], ['reason', null]])).toBe('id           x\nsigning key  k\nreason       -\n');
  });
});

describe('dollars', () => {
  it('shows cents as dollars with two decimals, a minus before the sign, and - for nothing', () => {
    expect([usd(1234), usd(5), usd(-250), usd(0), usd(null), usd(undefined)]).toEqual(['$12.34', '$0.05', '-$2.50', '$0.00', '-', '-']);
  });
});
