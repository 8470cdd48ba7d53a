import { describe, expect, it } from 'vitest';
import type { TransactionRow } from '../src/db/schema.js';
import { SagaSignals } from '../src/purchases/saga-signals.js';

// A request waiting on the saga takes the row its consumer committed, without reading it again.

const row = (id: string, hold: string) => ({ id, hold }) as unknown as TransactionRow;

describe('saga signals', () => {
  it('keeps a signal that came before the waiter asked, with the row its commit left', async () => {
    const signals = new SagaSignals();
    const watch = signals.watch('t1');
    signals.committed(row('t1', 'held'));
    expect(await watch.next(1_000)).toEqual({ row: row('t1', 'held') });
    watch.close();
  });

  it('wakes a waiter on a bare signal (a step that left no row to hand on) with no row, so that it reads', async () => {
    const signals = new SagaSignals();
    const watch = signals.watch('t1');
    const next = watch.next(1_000);
    signals.moved('t1');
    expect(await next).toEqual({ row: undefined });
    watch.close();
  });

  it('gives the latest row of several signals, ignores other transactions and answers null after its time', async () => {
    const signals = new SagaSignals();
    const watch = signals.watch('t1');
    signals.committed(row('t1', 'requested'));
    signals.committed(row('t2', 'held'));
    signals.moved('t1');
    signals.committed(row('t1', 'held'));
    expect(await watch.next(1_000)).toEqual({ row: row('t1', 'held') });
    const started = Date.now();
    expect(await watch.next(30)).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    watch.close();
    signals.committed(row('t1', 'settled'));
    expect(await watch.next(10)).toBeNull();
  });

  it('tells the other replicas of a move nobody here waits for, and only then', async () => {
    const told: string[] = [];
    const signals = new SagaSignals(1_000, (id) => told.push(id));
    const watch = signals.watch('t1');
    signals.committed(row('t1', 'held'));
    signals.moved('t1');
    expect(told).toEqual([]);
    watch.close();
    signals.committed(row('t1', 'settled'));
    signals.moved('t2');
    expect(told).toEqual(['t1', 't2']);
  });

  it('wakes the waiters of a transaction another replica moved (a notice), so that they read', async () => {
    const signals = new SagaSignals();
    const watch = signals.watch('t1');
    const next = watch.next(1_000);
    signals.noticed('t1');
    expect(await next).toEqual({ row: undefined });
    watch.close();
  });
});
