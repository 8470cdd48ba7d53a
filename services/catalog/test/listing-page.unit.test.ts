import { describe, expect, it } from 'vitest';
import { selectPage } from '../src/listings/page-select.js';

describe('a page of a listing without sorting every match', () => {
  it('gives the ranks a full sort gives, for any page, with keys that tie a little, a lot or not at all', () => {
    let seed = 3;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (const distinct of [1, 3, 50, 100_000]) {
      for (const count of [0, 1, 2, 7, 500, 3000]) {
        const key = Array.from({ length: count }, () => Math.floor(next() * distinct));
        const second = Array.from({ length: count }, () => Math.floor(next() * 4));
        // A total order, as the listing's (sort key, then createdAt, then id).
        const compare = (a: number, b: number) => key[a]! - key[b]! || second[a]! - second[b]! || a - b;
        const sorted = Array.from({ length: count }, (_, i) => i).sort(compare);
        for (const [offset, limit] of [[0, 1], [0, 20], [5, 20], [count - 3, 10], [Math.floor(count / 2), 100], [0, count + 5], [count, 5], [count + 10, 5]]) {
          if (offset! < 0) continue;
          expect(selectPage(count, compare, offset!, limit!)).toEqual(sorted.slice(offset, offset! + limit!));
        }
      }
    }
  });

  it('takes linear time when every key ties (compared with a sort of the same items)', () => {
    const count = 100_000;
    let calls = 0;
    const compare = (a: number, b: number) => {
      calls += 1;
      return a - b;
    };
    // Items in reverse order, all with the same sort key: the case that sorted all 100,000 before.
    const order = (i: number) => count - 1 - i;
    selectPage(count, (a, b) => compare(order(a), order(b)), 0, 50);
    // A sort needs about n·log2(n) ≈ 1.7 million comparisons; the selection a few per item.
    expect(calls).toBeLessThan(5 * count);
  });
});
