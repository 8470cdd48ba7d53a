import { EventEmitter } from 'node:events';

/**
 * Tells requests waiting on an aggregate (D9.9: up to SAGA_WAIT_MS) that a saga step moved it, so
 * they do not poll. Both kinds of signal come after the commit of the step:
 * - one with the state as its commit left it (`committed`), which the waiter takes as it is;
 * - a bare one (`moved`), when the step did not leave a state to hand on: its waiter reads it.
 * The step may be made by another replica's consumer: a signal nobody here waits for goes to the
 * other replicas as a notice (`elsewhere`), whose waiters read the state. Notices may be lost (a
 * reconnection), so waiters still read every `fallbackMs` on their own.
 */
export class SagaSignals<S> {
  private readonly emitter = new EventEmitter();

  constructor(readonly fallbackMs = 1_000, private readonly elsewhere?: (id: string) => void) {
    this.emitter.setMaxListeners(0);
  }

  /** A notice from another replica's consumer: the aggregate moved; its waiters here read it. */
  noticed(id: string): void {
    this.emitter.emit(id);
  }

  /** Wakes this replica's waiters of the aggregate, or tells the other replicas when there are none (unless `here` only). */
  private signal(id: string, state?: S, here = false): void {
    if (this.emitter.listenerCount(id) > 0) this.emitter.emit(id, state);
    else if (!here) this.elsewhere?.(id);
  }

  /** After the commit of a step that changed the aggregate: its waiters read it. */
  moved(id: string): void {
    this.signal(id);
  }

  /**
   * After the commit that left the aggregate `id` as `state`: its waiters get the state itself.
   * `here`: only this replica's (a request's own step, whose waiter is here).
   */
  committed(id: string, state: S, here = false): void {
    this.signal(id, state, here);
  }

  /**
   * Listens for the aggregate's signals from now on. Opened before the commit that starts a saga
   * step, it misses none of the signals of that step; `close` it when done.
   */
  watch(id: string): SagaWatch<S> {
    return new SagaWatch<S>(this.emitter, id);
  }
}

/** The signals of one aggregate since its watch opened (`SagaSignals.watch`). */
export class SagaWatch<S> {
  /** A signal not yet taken by `next`, with the latest state signalled since. */
  private pending: { state: S | undefined } | null = null;
  private wake: (() => void) | null = null;
  private readonly listener = (state?: S) => {
    this.pending = { state: state ?? this.pending?.state };
    this.wake?.();
  };

  constructor(private readonly emitter: EventEmitter, private readonly id: string) {
    emitter.on(id, this.listener);
  }

  /**
   * The next signal (at once when one came since the last call), or null after `ms` without one.
   * Its `state` is the aggregate as a commit left it, when the signal carried it.
   */
  next(ms: number): Promise<{ state: S | undefined } | null> {
    const take = () => {
      const signal = this.pending;
      this.pending = null;
      return signal;
    };
    if (this.pending) return Promise.resolve(take());
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve(take());
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.wake = done;
    });
  }

  close(): void {
    this.emitter.off(this.id, this.listener);
    this.wake?.();
  }
}

/**
 * Waits until `done` holds for the aggregate's state or `ms` pass; the last state seen. A signal
 * brings the state as committed, or has it read again (`read`); without one it is read every
 * `signals.fallbackMs` (the move may be made by another replica). Given a `watch` opened before the
 * commit that started the step, no signal can have been missed, so the state is not read first.
 * How every request waits for a saga (D9.9). Signals that carry no state (`SagaSignals<never>`,
 * another aggregate's) only wake the waiter, which reads.
 */
export async function awaitState<S>(signals: SagaSignals<S> | SagaSignals<never>, id: string, read: () => Promise<S>, done: (s: S) => boolean, ms: number, watch?: SagaWatch<S>): Promise<S> {
  const deadline = Date.now() + ms;
  const listening: SagaWatch<S> = watch ?? (signals as SagaSignals<S>).watch(id);
  try {
    let state: S | undefined = watch ? undefined : await read();
    for (;;) {
      if (state !== undefined && (done(state) || Date.now() >= deadline)) return state;
      const left = deadline - Date.now();
      if (left <= 0) return state ?? (await read());
      const signal = await listening.next(Math.min(left, signals.fallbackMs));
      state = signal?.state ?? (await read());
    }
  } finally {
    listening.close();
  }
}
