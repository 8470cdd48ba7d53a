import type { Kysely, Transaction } from 'kysely';
import type { AppError } from '@aex/contracts';
import type { GuardedWrite } from '../messaging/guarded-write.js';
import type { UnitOfWork } from '../messaging/unit-of-work.js';
import type { HandlerContext } from '../rpc.js';

/**
 * What a pure decision says about one command on one state: refuse it (a request is answered with
 * the error, nothing is written), leave the state as it is (a late or repeated message, a timer whose
 * moment has passed), or change it — the changes to write and the effects to make with them.
 */
export type Decision<Changes, Effect> =
  | { kind: 'refused'; error: Error }
  | { kind: 'unchanged' }
  | { kind: 'changed'; changes: Changes; effects: readonly Effect[] };

/** The types one aggregate is made of (`Aggregate`). */
export interface AggregateTypes {
  /** The aggregate as read and written: its rows, with what guards a write of them (a version). */
  state: unknown;
  /**
   * What decisions take and a replica keeps of a state between steps: the state without the parts
   * too large to keep (a request's input, a delivery's output). Every `state` is one.
   */
  known: unknown;
  command: unknown;
  changes: unknown;
  effect: unknown;
  /** What a command needs besides the state, read in the step's transaction (`Aggregate.facts`). */
  facts: unknown;
  /** What a request is answered with. */
  view: unknown;
}

/** Where the state a step decided on came from. */
export type Origin = 'remembered' | 'read' | 'locked';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyTrx = Transaction<any>;

/**
 * One aggregate of a service (docs/messaging.md "Aggregates and their steps"): a purchase, a hold, a dispute, a
 * child's budget. Everything about it is here, once — how it is read and locked, the pure decision,
 * the one write of its changes, its effects, what a requester waits for and how it is answered —
 * and everything around a decision is the runner's (`AggregateRunner`): reads, writes at commit,
 * the replica's memory, signals, waiting, retries, replies. Adding a step is a `decide` case (and,
 * when it changes other columns, nothing more: the write takes the changes as they come).
 */
export interface Aggregate<T extends AggregateTypes> {
  /** The aggregate's name, in signals and logs. */
  readonly name: string;
  /** The state as it is now, without a lock; undefined when there is none. */
  read(db: AnyDb, id: string): Promise<T['state'] | undefined>;
  /** The state read and locked until the end of `trx`; undefined when there is none. */
  lock(trx: AnyTrx, id: string): Promise<T['state'] | undefined>;
  /**
   * Decided on the state locked only, never on one remembered or read (an aggregate whose steps are
   * rare and lock more than its own row, where a guarded write is not worth it).
   */
  alwaysLocked?: boolean;
  /**
   * The state a message's command is decided on first when the replica remembers nothing of the
   * aggregate (a command that nearly always comes first of its aggregate's): decided on as a
   * remembered state, its write guarded, so a wrong guess costs a locked read, never a wrong write.
   */
  presume?(id: string, command: T['command']): T['known'] | undefined;
  /** Whether the command makes a new aggregate (its id is new: nothing is read before it). */
  creates?(command: T['command']): boolean;
  /**
   * Before any transaction, on the first state seen (remembered or read): what the command needs
   * from other services (a contract, rules in force), which no transaction may wait for. May refuse
   * what no state could allow (a caller who may not see the aggregate).
   */
  prepare?(state: T['known'] | undefined, command: T['command'], ctx: HandlerContext): Promise<T['command']>;
  /**
   * What the command needs besides the state, read in the step's transaction (latest messages,
   * totals under a lock); `origin` says how the state was had (rows worth locking with a state
   * locked are worth nothing to lock with one remembered, whose write is guarded instead).
   */
  facts?(trx: AnyTrx, state: T['known'] | undefined, command: T['command'], origin: Origin): Promise<T['facts']>;
  /** The pure decision: no I/O, the clock given. */
  decide(state: T['known'] | undefined, command: T['command'], facts: T['facts'], now: Date): Decision<T['changes'], T['effect']>;
  /**
   * The one write of a decision's changes (an insert when there is no state yet), as parts of one
   * statement whose guard part returns the rows written. `guarded`: the state was not locked, so the
   * write must find it as it was (its version) and write nothing otherwise.
   */
  write(trx: AnyTrx, state: T['known'] | undefined, changes: T['changes'], guarded: boolean): GuardedWrite<unknown>;
  /** The state as the write left it, from the rows its guard returned (default: the first row), and what it was decided with. */
  written?(rows: unknown[], before: T['known'] | undefined, changes: T['changes'], facts: T['facts']): T['state'];
  /** Makes the decision's effects in the unit of work: messages, timers, rows of other tables. */
  apply(trx: AnyTrx, work: UnitOfWork, state: T['known'], effects: readonly T['effect'][], now: Date): Promise<void>;
  /** What the replica keeps of a state, decided on before any read next time. */
  remember(state: T['state']): T['known'];
  /** The aggregate's id in a state. */
  idOf(state: T['known']): string;
  /** Whether the state waits on a saga step in flight: a request that leaves it so waits for its end (D9.9). */
  inFlight(state: T['known']): boolean;
  /**
   * What else a request's answer waits for after its commit, up to `ms` (another aggregate's saga
   * step its effects started): the state as it then is, answered from.
   */
  settles?(state: T['state'], ms: number): Promise<T['state']>;
  /** A request's answer showing the state. */
  view(state: T['state'], ctx: HandlerContext): T['view'];
  /**
   * The status a request's outcome is answered with (default 200), or the refusal it is answered
   * with once its effect committed (402 when the wallet refused the hold it asked for).
   */
  answer?(outcome: StepOutcome<T>, ctx: HandlerContext): number | AppError;
}

/** What a step did: the state it left (or found), and its decision. */
export interface StepOutcome<T extends AggregateTypes> {
  command: T['command'];
  state: T['state'];
  decision: Exclude<Decision<T['changes'], T['effect']>, { kind: 'refused' }>;
  /** Whether the state was still in a saga step when the request stopped waiting for it. */
  stillInFlight: boolean;
}
