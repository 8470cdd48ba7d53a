import { describe, expect, it } from 'vitest';
import { KnownTransactions, type VersionedRow } from '../src/purchases/known-transactions.js';

// What a replica keeps of the transactions it wrote or read lately.

const row = (id: string, version = '1') => ({ id, version, status: 'funds_held', input: { big: 'x'.repeat(1000) }, output: { y: 1 }, metadata: { z: 2 } }) as unknown as VersionedRow;

describe('known transactions', () => {
  it('keeps the latest version of a row without the parts whose size the caller chooses', () => {
    const known = new KnownTransactions();
    known.remember(row('a', '1'));
    known.remember(row('a', '2'));
    expect(known.get('a')).toEqual({ id: 'a', version: '2', status: 'funds_held' });
    expect(known.size).toBe(1);
  });

  it('keeps at most its bound, dropping the row it remembered least recently', () => {
    const known = new KnownTransactions(3);
    for (const id of ['a', 'b', 'c']) known.remember(row(id));
    known.remember(row('a', '2'));
    known.remember(row('d'));
    expect(known.size).toBe(3);
    expect(known.get('b')).toBeUndefined();
    expect(['a', 'c', 'd'].map((id) => known.get(id)?.id)).toEqual(['a', 'c', 'd']);
  });
});
