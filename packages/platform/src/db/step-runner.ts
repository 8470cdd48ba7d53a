/**
 * What a pure decision says about one command on one state: refuse it (a request is answered with
 * the error, nothing is written), leave the state as it is (a late or repeated message, a timer whose
 * moment has passed), or change it — the columns to write and the effects to make with them.
 */
export type Decision<Changes, Effect> =
  | { kind: 'refused'; error: Error }
  | { kind: 'unchanged' }
  | { kind: 'changed'; changes: Changes; effects: readonly Effect[] };

/**
 * One step of an entity kept in a row, in one unit of work. What guards a write is the step's own: the
 * row's version (Postgres's `xmin`), or what the decision relied on (a hold still held, no row yet).
 */
export interface Step<S, Changes, Effect> {
  /** The state as this replica last knew it, if it does: decided on without any read. */
  remembered?: S | undefined;
  /**
   * The state read now, its row locked until the commit; undefined when there is no such row and the
   * step has nothing to decide without one. A state with no row yet (nothing to lock) is written by
   * an insert that writes nothing when a row came meanwhile: the step then reads again.
   */
  lock(): Promise<S | undefined>;
  /** The pure decision (no I/O): what the command does to this state. */
  decide(state: S): Decision<Changes, Effect>;
  /**
   * Writes `changes` to the row `state` was read as, returning the state as written. `guarded`: the
   * state was remembered, not locked, so only if the row is still as it was — undefined, with nothing
   * written, when it moved on (and, guarded or not, when a row came where there was none).
   */
  write(state: S, changes: Changes, guarded: boolean): Promise<S | undefined>;
  /** Makes the decision's effects (messages, timers, rows of other tables) in the same unit of work. */
  apply(next: S, effects: readonly Effect[]): Promise<void>;
}

export interface StepResult<S, Changes, Effect> {
  /** The state the step left: as written, or as read when nothing changed. */
  state: S;
  decision: Exclude<Decision<Changes, Effect>, { kind: 'refused' }>;
}

/**
 * Runs one step: decide, then write the changes with their effects in the caller's database
 * transaction. The one fast path of every step is here:
 * - A remembered state is decided on first. If that decision changes something, the write is guarded
 *   by the remembered version: when the row is still that version, the decision was the one a locked
 *   read would have given, and no lock or read was needed.
 * - Otherwise — nothing remembered, the row moved on, or the decision on the remembered state was a
 *   refusal or nothing to do (only a current state may refuse or ignore a command) — the row is read
 *   and locked, and the decision is made again on it.
 * The write comes before the effects, so a guarded write that finds the row moved on leaves nothing
 * written. A guarded write deferred to the commit (`writeAtCommit`) that then finds nothing undoes the
 * whole transaction, and `inTransaction` runs the step again. Returns undefined when there is no row;
 * throws the refusal's error.
 */
export async function runStep<S, Changes, Effect>(step: Step<S, Changes, Effect>): Promise<StepResult<S, Changes, Effect> | undefined> {
  if (step.remembered) {
    const decision = step.decide(step.remembered);
    if (decision.kind === 'changed') {
      const next = await step.write(step.remembered, decision.changes, true);
      if (next) {
        await step.apply(next, decision.effects);
        return { state: next, decision };
      }
    }
  }
  // A locked row's write always writes; only an insert where there was no row can find one there.
  for (let read = 1; ; read++) {
    const state = await step.lock();
    if (!state) return undefined;
    const decision = step.decide(state);
    if (decision.kind === 'refused') throw decision.error;
    if (decision.kind === 'unchanged') return { state, decision };
    const next = await step.write(state, decision.changes, false);
    if (next) {
      await step.apply(next, decision.effects);
      return { state: next, decision };
    }
    if (read === 3) throw new Error('the row this step writes keeps changing under its lock');
  }
}
