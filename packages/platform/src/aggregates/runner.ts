import type { Transaction } from 'kysely';
import { isAppError, type MessageDef, type Static } from '@aex/contracts';
import type { Bus, Stoppable } from '../bus/types.js';
import type { Logger } from '../logger.js';
import { appliedOnce, consumeMessages } from '../messaging/consumer.js';
import { executeWrite } from '../messaging/guarded-write.js';
import type { Transactor } from '../messaging/transaction-runner.js';
import type { UnitOfWork } from '../messaging/unit-of-work.js';
import { RecentMap } from '../recent-map.js';
import type { EffectReply } from '../replies.js';
import type { HandlerContext } from '../rpc.js';
import type { Aggregate, AggregateTypes, Decision, Origin, StepOutcome } from './aggregate.js';
import { awaitState, type SagaSignals } from './signals.js';

export interface RunnerOptions<T extends AggregateTypes> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  tx: Transactor<any>;
  now: () => Date;
  /** Where requests waiting on the aggregate hear of its saga's steps (D9.9); none: nothing waits. */
  signals?: SagaSignals<T['state']>;
  /** How long a request waits for a saga step in flight before it answers with the state as it is (D9.9). */
  sagaWaitMs: number;
  /** How many states the replica keeps (`Aggregate.remember`). */
  remembered?: number;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyTrx = Transaction<any>;
type Changed<T extends AggregateTypes> = Extract<Decision<T['changes'], T['effect']>, { kind: 'changed' }>;

/** What one attempt at a step came to in its transaction. */
type Attempt<T extends AggregateTypes> =
  /** Decided on a remembered state, which could not refuse or leave things as they were: decide again on what is read. */
  | { kind: 'again' }
  | { kind: 'none' }
  | { kind: 'unchanged'; state: T['state'] }
  /** Written, or — at commit — to be written by the transaction's last statement. */
  | { kind: 'changed'; decision: Changed<T>; state: T['state'] | undefined; before: T['known'] | undefined; facts: T['facts']; write?: ReturnType<Aggregate<T>['write']> };

/** A step's outcome before any wait. */
type Stepped<T extends AggregateTypes> = Omit<StepOutcome<T>, 'command' | 'stillInFlight'>;

const MAX_LOCKED_READS = 3;

/** An attempt that must not commit: the step is decided again on the state locked, in another transaction. */
class DecideAgain extends Error {}

/**
 * Runs an aggregate's steps (`Aggregate`): everything around a decision, the same for every
 * aggregate. A step decides first on the state the replica remembers, or reads without a lock, and
 * writes guarded by what it decided on — at commit, in the statement that also writes its messages,
 * when no Idempotency-Key holds the transaction; when the state moved on meanwhile (the guard wrote
 * nothing) it decides again on the state locked. Only a current state may refuse a request or leave
 * it unchanged: a refusal decided on a remembered state is decided again. After the commit the
 * replica remembers the state and wakes those waiting on it; a request whose state is left in a saga
 * step waits for it (up to `sagaWaitMs`) and is answered as the aggregate says.
 */
export class AggregateRunner<T extends AggregateTypes> {
  /** The states this replica wrote or read lately: decided on before any read, never trusted to refuse. */
  readonly known: RecentMap<string, T['known']>;

  constructor(readonly aggregate: Aggregate<T>, private readonly opts: RunnerOptions<T>) {
    this.known = new RecentMap(opts.remembered ?? 2_048);
  }

  /** Where requests waiting on the aggregate hear of its saga's steps. */
  get signals(): SagaSignals<T['state']> | undefined {
    return this.opts.signals;
  }

  /** The state as it is now (no lock). */
  read(id: string): Promise<T['state'] | undefined> {
    return this.aggregate.read(this.opts.tx.db, id);
  }

  /**
   * A request's command on the aggregate `id` (a new id for a creation): prepared, decided, written
   * with its effects (under the request's Idempotency-Key when it has one, D5.5), waited on while
   * its state is in a saga step (D9.9), and answered — with a refusal once the effect committed when
   * the aggregate says so (stored as the key's answer).
   */
  async request(ctx: HandlerContext, id: string, command: T['command']): Promise<EffectReply<T['view']>> {
    const first = await this.firstState(id, command);
    const prepared = this.aggregate.prepare ? await this.aggregate.prepare(first.state, command, ctx) : command;
    const watch = this.opts.signals?.watch(id);
    let stepped: Stepped<T>;
    try {
      stepped = await this.requestStep(ctx, id, prepared, first);
    } catch (err) {
      watch?.close();
      throw err;
    }
    let state = stepped.state;
    if (watch && this.aggregate.inFlight(state)) state = await this.settle(id, this.opts.sagaWaitMs, watch);
    else watch?.close();
    if (stepped.decision.kind === 'changed' && this.aggregate.settles) state = await this.aggregate.settles(state, this.opts.sagaWaitMs);
    const outcome: StepOutcome<T> = { ...stepped, command: prepared, state, stillInFlight: this.aggregate.inFlight(state) };
    const status = this.aggregate.answer?.(outcome, ctx) ?? 200;
    if (isAppError(status)) {
      if (stepped.decision.kind === 'unchanged') throw status;
      // Made by a second effect, so that it is also the answer stored under the request's key (D5.3).
      return ctx.effect(this.opts.tx, async () => {
        throw status;
      });
    }
    return { status, data: this.aggregate.view(state, ctx) } as EffectReply<T['view']>;
  }

  /** The state a request decides on first: none for a creation, the remembered one, else the one read now. */
  private async firstState(id: string, command: T['command']): Promise<{ state: T['known'] | undefined; origin: Origin }> {
    if (this.aggregate.creates?.(command)) return { state: undefined, origin: 'read' };
    const remembered = this.known.get(id);
    return remembered !== undefined ? { state: remembered, origin: 'remembered' } : { state: await this.read(id), origin: 'read' };
  }

  /**
   * Waits until the aggregate `id` is no longer in a saga step, or `ms` pass; the state then. A
   * `watch` opened before the commit that started the step misses nothing of it.
   */
  settle(id: string, ms: number, watch?: ReturnType<SagaSignals<T['state']>['watch']>): Promise<T['state']> {
    const signals = this.opts.signals;
    const read = async () => (await this.read(id))!;
    if (!signals) return read();
    return awaitState(signals, id, read, (s) => !this.aggregate.inFlight(s), ms, watch);
  }

  /**
   * A step inside a transaction another commits (a timer's, another aggregate's step): decided on the
   * state locked and written at once; what the replica keeps is updated after that commit.
   * Undefined when there is no such aggregate; a refusal is thrown.
   */
  async within(trx: AnyTrx, work: UnitOfWork, id: string, command: T['command']): Promise<Stepped<T> | undefined> {
    const done = await this.locked(trx, work, id, command);
    if (done.kind === 'none') return undefined;
    // A timer's step may end a saga a request waits for on another replica: they hear of it too.
    return this.finish(done, work, false);
  }

  /**
   * A durable consumer whose messages are commands of the aggregate (a saga's answers): each applied
   * once (its id recorded with the step), decided first on the state remembered.
   */
  consume<M extends MessageDef>(opts: { bus: Bus; logger: Logger; durable: string; def: M; concurrency?: number; command: (data: Static<M['data']>) => { id: string; command: T['command'] } | null }): Promise<Stoppable> {
    return consumeMessages({
      bus: opts.bus, logger: opts.logger, durable: opts.durable, def: opts.def, ...(opts.concurrency !== undefined && { concurrency: opts.concurrency }),
      apply: async (envelope, data) => {
        // null: a message of the subject for another aggregate (another consumer applies it).
        const step = opts.command(data);
        if (!step) return false;
        return appliedOnce(this.opts.tx.db, opts.durable, envelope, () => this.step(step.id, step.command, (work) => work.consumed(opts.durable, envelope.id)));
      },
    });
  }

  /**
   * A step in transactions of its own (a message's): on the remembered (or presumed) state, guarded
   * at commit, else on the state locked. `each` marks each transaction (the message's record).
   */
  async step(id: string, command: T['command'], each: (work: UnitOfWork) => void = () => {}): Promise<Stepped<T> | undefined> {
    const remembered = this.aggregate.alwaysLocked ? undefined : this.known.get(id) ?? this.aggregate.presume?.(id, command);
    if (remembered !== undefined) {
      const atCommit = await this.atCommit(id, command, { state: remembered, origin: 'remembered' }, each);
      if (atCommit) return atCommit;
    }
    const done = await this.opts.tx.run(async (trx, work) => {
      each(work);
      const result = await this.locked(trx as AnyTrx, work, id, command);
      if (result.kind !== 'none') this.afterCommit(work, result, false);
      return result;
    });
    return done.kind === 'none' ? undefined : this.stepped(done);
  }

  /**
   * A request's step: at commit when it can be (no Idempotency-Key claimed; an operation key the
   * gateway made is written with the step), else in the key's transaction.
   */
  private async requestStep(ctx: HandlerContext, id: string, command: T['command'], first: { state: T['known'] | undefined; origin: Origin }): Promise<Stepped<T>> {
    if (this.aggregate.alwaysLocked) first = { state: undefined, origin: 'locked' };
    if (!ctx.keyed && first.origin !== 'locked') {
      const record = ctx.operationRecord;
      const atCommit = await this.atCommit(id, command, first, (work) => record?.atCommit(work), true);
      if (atCommit) return atCommit;
      return this.opts.tx.run(async (trx, work) => {
        // The key first: a repeat holding it is waited for before the aggregate is locked.
        await record?.insert(trx as AnyTrx, work);
        return this.finish(await this.lockedOrNone(trx as AnyTrx, work, id, command), work, true);
      });
    }
    let stepped: Stepped<T> | undefined;
    await ctx.effect(this.opts.tx, async (trx, work) => {
      let done = first.origin === 'locked' ? await this.locked(trx as AnyTrx, work, id, command) : await this.attempt(trx as AnyTrx, work, id, command, first.state, first.origin, 'now');
      if (done.kind === 'again' || done.kind === 'none') done = await this.lockedOrNone(trx as AnyTrx, work, id, command);
      stepped = this.finish(done, work, true);
      return { status: 202, data: this.aggregate.view(stepped.state, ctx) };
    });
    return stepped!;
  }

  /**
   * One transaction deciding on `first` whose guarded write goes with the commit. Undefined when it
   * must be decided again on the state locked: the state remembered could not refuse or keep the
   * command, or the guard found the state moved on (the transaction then undone).
   */
  private async atCommit(id: string, command: T['command'], first: { state: T['known'] | undefined; origin: Origin }, each: (work: UnitOfWork) => void, local = false): Promise<Stepped<T> | undefined> {
    const result = await this.opts.tx.runWriting(async (trx, work) => {
      each(work);
      const done = await this.attempt(trx as AnyTrx, work, id, command, first.state, first.origin, 'atCommit');
      // Nothing of this transaction may commit (a message's record among it): decided again in another.
      if (done.kind === 'again' || done.kind === 'none') throw new DecideAgain();
      return { value: done, write: done.kind === 'changed' ? done.write! : null };
    }).catch((err: unknown) => {
      if (err instanceof DecideAgain) return { written: false as const };
      throw err;
    });
    if (!result.written) return undefined;
    const done = result.value;
    if (done.kind === 'unchanged') return { state: done.state, decision: { kind: 'unchanged' } };
    const state = this.writtenState(result.rows, done.before, done.decision.changes, done.facts);
    this.remember(state, local);
    return { state, decision: done.decision };
  }

  private async lockedOrNone(trx: AnyTrx, work: UnitOfWork, id: string, command: T['command']): Promise<Exclude<Attempt<T>, { kind: 'again' | 'none' }>> {
    const done = await this.locked(trx, work, id, command);
    if (done.kind === 'none') throw new Error(`${this.aggregate.name} ${id}: no such aggregate to step`);
    return done;
  }

  /** Decides on the state locked, and writes at once (again when an insert found a row come meanwhile). */
  private async locked(trx: AnyTrx, work: UnitOfWork, id: string, command: T['command']): Promise<Exclude<Attempt<T>, { kind: 'again' }>> {
    for (let read = 1; ; read++) {
      const state = await this.aggregate.lock(trx, id);
      const done = await this.attempt(trx, work, id, command, state, 'locked', 'now');
      if (done.kind !== 'again') return done;
      if (read === MAX_LOCKED_READS) throw new Error(`${this.aggregate.name} ${id}: the state this step writes keeps changing under its lock`);
    }
  }

  /**
   * Decides on `state` and writes: at once (`now`: the effects made only once written), or — at
   * commit — with the effects made first and the write left to the transaction's last statement.
   */
  private async attempt(trx: AnyTrx, work: UnitOfWork, id: string, command: T['command'], state: T['known'] | undefined, origin: Origin, when: 'now' | 'atCommit'): Promise<Attempt<T>> {
    const a = this.aggregate;
    const facts = a.facts ? await a.facts(trx, state, command, origin) : (undefined as T['facts']);
    const now = this.opts.now();
    const decision = a.decide(state, command, facts, now);
    if (decision.kind !== 'changed') {
      if (origin === 'remembered') return { kind: 'again' };
      if (decision.kind === 'refused') throw decision.error;
      return state === undefined ? { kind: 'none' } : { kind: 'unchanged', state: state as T['state'] };
    }
    const write = a.write(trx, state, decision.changes, origin !== 'locked');
    const predicted = { ...(state as object), ...(decision.changes as object) } as T['known'];
    if (when === 'atCommit') {
      await a.apply(trx, work, predicted, decision.effects, now);
      return { kind: 'changed', decision, state: undefined, before: state, facts, write };
    }
    const rows = await executeWrite(trx, write);
    // A guarded write that found the state moved on (or an insert that found a row) wrote nothing.
    if (rows.length === 0) return { kind: 'again' };
    const written = this.writtenState(rows, state, decision.changes, facts);
    await a.apply(trx, work, written, decision.effects, now);
    return { kind: 'changed', decision, state: written, before: state, facts };
  }

  private writtenState(rows: unknown[], before: T['known'] | undefined, changes: T['changes'], facts: T['facts']): T['state'] {
    return this.aggregate.written ? this.aggregate.written(rows, before, changes, facts) : (rows[0] as T['state']);
  }

  /** The step's outcome, and what is to happen after its commit. */
  private finish(done: Exclude<Attempt<T>, { kind: 'again' | 'none' }>, work: UnitOfWork, local: boolean): Stepped<T> {
    this.afterCommit(work, done, local);
    return this.stepped(done);
  }

  private stepped(done: Exclude<Attempt<T>, { kind: 'again' | 'none' }>): Stepped<T> {
    return done.kind === 'unchanged' ? { state: done.state, decision: { kind: 'unchanged' } } : { state: done.state!, decision: done.decision };
  }

  /**
   * After the commit: the replica remembers the state, and those waiting on it hear of it — other
   * replicas too, unless the step was a request's own (`local`), whose waiter is here.
   */
  private afterCommit(work: UnitOfWork, done: Exclude<Attempt<T>, { kind: 'again' | 'none' }>, local: boolean): void {
    if (done.kind === 'changed') {
      const state = done.state!;
      work.afterCommit(() => this.remember(state, local));
    } else if (!local) {
      const id = this.aggregate.idOf(done.state);
      work.afterCommit(() => this.opts.signals?.moved(id));
    }
  }

  private remember(state: T['state'], local: boolean): void {
    const known = this.aggregate.remember(state);
    const id = this.aggregate.idOf(known);
    this.known.set(id, known);
    this.opts.signals?.committed(id, state, local);
  }
}
