import { describe, expect, it } from 'vitest';
import { awaitState, SagaSignals } from '../src/index.js';

// A request waiting on an aggregate's saga takes the state its consumer committed, without reading
// it again. Signals are generic in the state; here a plain object stands for one.

interface Held { id: string; hold: string }
const state = (id: string, hold: string): Held => ({ id, hold });

describe('saga signals', () => {
  it('keeps a signal that came before the waiter asked, with the state its commit left', async () => {
    const signals = new SagaSignals<Held>();
    const watch = signals.watch('t1');
    signals.committed('t1', state('t1', 'held'));
    expect(await watch.next(1_000)).toEqual({ state: state('t1', 'held') });
    watch.close();
  });

  it('wakes a waiter on a bare signal (a step that left no state to hand on) with no state, so that it reads', async () => {
    const signals = new SagaSignals<Held>();
    const watch = signals.watch('t1');
    const next = watch.next(1_000);
    signals.moved('t1');
    expect(await next).toEqual({ state: undefined });
    watch.close();
  });

  it('gives the latest state of several signals, ignores other aggregates and answers null after its time', async () => {
    const signals = new SagaSignals<Held>();
    const watch = signals.watch('t1');
    signals.committed('t1', state('t1', 'requested'));
    signals.committed('t2', state('t2', 'held'));
    signals.moved('t1');
    signals.committed('t1', state('t1', 'held'));
    expect(await watch.next(1_000)).toEqual({ state: state('t1', 'held') });
    const started = Date.now();
    expect(await watch.next(30)).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    watch.close();
    signals.committed('t1', state('t1', 'settled'));
    expect(await watch.next(10)).toBeNull();
  });

  it('keeps the state of an earlier signal when a bare one follows it', async () => {
    const signals = new SagaSignals<Held>();
    const watch = signals.watch('t1');
    signals.committed('t1', state('t1', 'held'));
    signals.moved('t1');
    expect(await watch.next(1_000)).toEqual({ state: state('t1', 'held') });
    watch.close();
  });

  it('tells the other replicas of a move nobody here waits for, and only then', async () => {
    const told: string[] = [];
    const signals = new SagaSignals<Held>(1_000, (id) => told.push(id));
    const watch = signals.watch('t1');
    signals.committed('t1', state('t1', 'held'));
    signals.moved('t1');
    expect(told).toEqual([]);
    watch.close();
    signals.committed('t1', state('t1', 'settled'));
    signals.moved('t2');
    expect(told).toEqual(['t1', 't2']);
  });

  it('tells no other replica of a request’s own step (`here`), whose waiter is on this replica', () => {
    const told: string[] = [];
    const signals = new SagaSignals<Held>(1_000, (id) => told.push(id));
    signals.committed('t1', state('t1', 'held'), true);
    expect(told).toEqual([]);
  });

  it('wakes the waiters of an aggregate another replica moved (a notice), so that they read', async () => {
    const signals = new SagaSignals<Held>();
    const watch = signals.watch('t1');
    const next = watch.next(1_000);
    signals.noticed('t1');
    expect(await next).toEqual({ state: undefined });
    watch.close();
  });
});

describe('awaitState', () => {
  /** A state read from a store a test moves, counting the reads. */
  const store = (hold: string) => {
    const s = { hold, reads: 0, read: async () => (s.reads++, state('t1', s.hold)) };
    return s;
  };
  const settled = (h: Held) => h.hold !== 'requested';

  it('answers the state a signal carries once it is done, without reading it again', async () => {
    const signals = new SagaSignals<Held>(60_000);
    const stored = store('requested');
    // The waiter listens from its call on: a signal given right after it is not missed.
    const waiting = awaitState(signals, 't1', stored.read, settled, 5_000);
    signals.committed('t1', state('t1', 'held'));
    expect(await waiting).toEqual(state('t1', 'held'));
    // The first read only: the signal brought the state.
    expect(stored.reads).toBe(1);
  });

  it('reads nothing first when given a watch opened before the step’s commit', async () => {
    const signals = new SagaSignals<Held>(60_000);
    const stored = store('requested');
    const watch = signals.watch('t1');
    signals.committed('t1', state('t1', 'held'));
    expect(await awaitState(signals, 't1', stored.read, settled, 5_000, watch)).toEqual(state('t1', 'held'));
    expect(stored.reads).toBe(0);
  });

  it('reads again on a bare signal', async () => {
    const signals = new SagaSignals<Held>(60_000);
    const stored = store('requested');
    const watch = signals.watch('t1');
    stored.hold = 'released';
    signals.moved('t1');
    expect(await awaitState(signals, 't1', stored.read, settled, 5_000, watch)).toEqual(state('t1', 'released'));
    expect(stored.reads).toBe(1);
  });

  it('reads every fallbackMs without a signal (a notice lost), and answers once the state is done', async () => {
    const signals = new SagaSignals<Held>(20);
    const stored = store('requested');
    const waiting = awaitState(signals, 't1', stored.read, settled, 5_000);
    // No signal ever comes: only the waiter's own reads can find the move.
    stored.hold = 'held';
    expect(await waiting).toEqual(state('t1', 'held'));
  });

  it('answers the state as it is when the time runs out', async () => {
    const signals = new SagaSignals<Held>(10);
    const stored = store('requested');
    const started = Date.now();
    expect(await awaitState(signals, 't1', stored.read, settled, 50)).toEqual(state('t1', 'requested'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it('closes its watch when done: later signals go to the other replicas', async () => {
    const told: string[] = [];
    const signals = new SagaSignals<Held>(60_000, (id) => told.push(id));
    const stored = store('held');
    await awaitState(signals, 't1', stored.read, settled, 5_000);
    signals.moved('t1');
    expect(told).toEqual(['t1']);
  });
});
