import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../src/db/group-commit.js';

// Group commit — what arrives while a batch is written goes into the next one; a batch
// that fails as a whole is written again item by item, so every item gets its own outcome.

/** A writer whose batches finish when the test says so. */
function gatedWriter(fail: (items: number[]) => boolean = () => false) {
  const batches: number[][] = [];
  const gates: Array<() => void> = [];
  const write = async (items: number[]) => {
    batches.push(items);
    await new Promise<void>((r) => gates.push(r));
    if (fail(items)) throw new Error(`batch ${items.join(',')} failed`);
    return items.map((i) => i * 10);
  };
  const release = async () => {
    while (gates.length === 0) await new Promise((r) => setImmediate(r));
    gates.shift()!();
    await new Promise((r) => setImmediate(r));
  };
  return { batches, write, release };
}

describe('GroupCommit', () => {
  it('writes a lone item at once, and what arrives meanwhile together in the next batch', async () => {
    const w = gatedWriter();
    const gc = new GroupCommit(w.write, { maxBatch: 10, maxInFlight: 1 });
    const first = gc.submit(1);
    const rest = [2, 3, 4].map((i) => gc.submit(i));
    expect(w.batches).toEqual([[1]]);
    await w.release();
    expect(await first).toBe(10);
    await w.release();
    expect(await Promise.all(rest)).toEqual([20, 30, 40]);
    expect(w.batches).toEqual([[1], [2, 3, 4]]);
  });

  it('never puts more than maxBatch items in one batch, nor runs more than maxInFlight batches', async () => {
    const w = gatedWriter();
    const gc = new GroupCommit(w.write, { maxBatch: 2, maxInFlight: 2 });
    const all = [1, 2, 3, 4, 5, 6].map((i) => gc.submit(i));
    expect(w.batches).toEqual([[1], [2]]);
    for (let i = 0; i < 4; i++) await w.release();
    expect(await Promise.all(all)).toEqual([10, 20, 30, 40, 50, 60]);
    expect(w.batches.every((b) => b.length <= 2)).toBe(true);
    expect(w.batches.flat().sort()).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('writes a failed batch again item by item: only the item that fails gets the failure', async () => {
    const w = gatedWriter((items) => items.includes(3));
    const gc = new GroupCommit(w.write, { maxBatch: 10, maxInFlight: 1 });
    const first = gc.submit(1);
    const others = [2, 3, 4].map((i) => gc.submit(i).then((v) => ({ ok: v }), (e: Error) => ({ err: e.message })));
    await w.release(); // [1]
    await w.release(); // [2, 3, 4] fails
    for (let i = 0; i < 3; i++) await w.release(); // [2], [3], [4]
    expect(await first).toBe(10);
    expect(await Promise.all(others)).toEqual([{ ok: 20 }, { err: 'batch 3 failed' }, { ok: 40 }]);
  });
});
