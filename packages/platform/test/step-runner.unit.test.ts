import { describe, expect, it } from 'vitest';
import { runStep, type Decision, type Step } from '../src/db/step-runner.js';

// The step runner on a row kept in memory: a counter with a version, and a command that adds to it
// up to a limit. Every path of `runStep` — remembered and still current, remembered and moved on,
// refused, nothing to do, no row, a row that comes while there was none — with what it read and wrote.

interface Counter { version: number; value: number }
type Add = { by: number };
type Effect = { kind: 'added'; to: number };

class Table {
  row: Counter | undefined;
  reads = 0;
  writes: Array<{ guarded: boolean; from: number }> = [];
  applied: Effect[][] = [];
  /** Something another replica does to the row just before this step's next write. */
  beforeWrite: (() => void) | undefined;

  constructor(value?: number) {
    if (value !== undefined) this.row = { version: 1, value };
  }

  step(by: number, remembered?: Counter, limit = 10): Step<Counter | { version: 0; value: 0; absent: true }, Add, Effect> {
    return {
      remembered,
      lock: async () => {
        this.reads++;
        return this.row ? { ...this.row } : undefined;
      },
      decide: (s): Decision<Add, Effect> => {
        if (by === 0) return { kind: 'unchanged' };
        if (s.value + by > limit) return { kind: 'refused', error: new Error(`over ${limit}`) };
        return { kind: 'changed', changes: { by }, effects: [{ kind: 'added', to: s.value + by }] };
      },
      write: async (s, changes, guarded) => {
        this.beforeWrite?.();
        this.beforeWrite = undefined;
        this.writes.push({ guarded, from: s.value });
        if (!this.row || (guarded && this.row.version !== s.version)) return undefined;
        this.row = { version: this.row.version + 1, value: this.row.value + changes.by };
        return { ...this.row };
      },
      apply: async (_s, effects) => void this.applied.push([...effects]),
    };
  }
}

describe('runStep', () => {
  it('decides on the remembered state and writes guarded by its version, reading nothing, when the row is still that version', async () => {
    const table = new Table(3);
    const result = await runStep(table.step(2, { version: 1, value: 3 }));
    expect(result).toMatchObject({ state: { version: 2, value: 5 }, decision: { kind: 'changed' } });
    expect(table.reads).toBe(0);
    expect(table.writes).toEqual([{ guarded: true, from: 3 }]);
    expect(table.applied).toEqual([[{ kind: 'added', to: 5 }]]);
  });

  it('decides again on the row locked when the remembered one moved on, and makes only that decision’s effects', async () => {
    const table = new Table(3);
    table.beforeWrite = () => void (table.row = { version: 7, value: 6 });
    const result = await runStep(table.step(2, { version: 1, value: 3 }));
    expect(result?.state).toEqual({ version: 8, value: 8 });
    expect(table.reads).toBe(1);
    expect(table.writes).toEqual([{ guarded: true, from: 3 }, { guarded: false, from: 6 }]);
    expect(table.applied).toEqual([[{ kind: 'added', to: 8 }]]);
  });

  it('lets only the current row refuse: a refusal on the remembered state is decided again on the row locked', async () => {
    const table = new Table(1);
    // Remembered at 9, where adding 2 would pass the limit; the row is at 1 now.
    const result = await runStep(table.step(2, { version: 0, value: 9 }));
    expect(result?.state.value).toBe(3);
    expect(table.reads).toBe(1);
    expect(table.writes).toEqual([{ guarded: false, from: 1 }]);
  });

  it('throws the refusal of the row locked, with nothing written or made', async () => {
    const table = new Table(9);
    await expect(runStep(table.step(2))).rejects.toThrow('over 10');
    expect(table.writes).toEqual([]);
    expect(table.applied).toEqual([]);
  });

  it('answers the row as it is when the decision changes nothing', async () => {
    const table = new Table(4);
    const result = await runStep(table.step(0, { version: 1, value: 4 }));
    expect(result).toEqual({ state: { version: 1, value: 4 }, decision: { kind: 'unchanged' } });
    expect(table.writes).toEqual([]);
  });

  it('answers undefined when there is no row', async () => {
    const table = new Table();
    expect(await runStep(table.step(1))).toBeUndefined();
  });

  it('reads again when its write finds a row came where there was none (an insert that lost a race)', async () => {
    const table = new Table();
    let reads = 0;
    const step = table.step(1);
    const absent = { version: 0 as const, value: 0 as const, absent: true as const };
    const result = await runStep({
      ...step,
      // No row at the first read; another step inserts one before this one's insert.
      lock: async () => (++reads === 1 ? absent : table.row && { ...table.row }),
      write: async (s, changes, guarded) => {
        if ('absent' in s) {
          table.row = { version: 1, value: 5 };
          return undefined;
        }
        return step.write(s, changes, guarded);
      },
    });
    expect(reads).toBe(2);
    expect(result?.state).toEqual({ version: 2, value: 6 });
  });

  it('gives up, throwing, when the row keeps changing under its reads', async () => {
    const table = new Table(1);
    await expect(runStep({ ...table.step(1), write: async () => undefined })).rejects.toThrow('keeps changing');
    expect(table.reads).toBe(3);
  });
});
