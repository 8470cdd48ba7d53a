import { AppError, Type, type MessageDef } from '@aex/contracts';
import type { Kysely, Migration, Transaction } from 'kysely';
import {
  createPlatformTablesV1, createPlatformTablesV2, createPlatformTablesV3, createPlatformTablesV4, createPlatformTablesV5,
  type Aggregate, type Decision, type PlatformTables,
} from '../src/index.js';

// A toy aggregate for the runner's tests, written as a service writes one (`Aggregate`): a counter
// with a version guarding its writes, commands that change it, refuse or leave it as it is, effects
// that publish and set a timer, and a round that a saga's answer ends (its state in flight meanwhile).
// It notes what the runner made it do (`log`), and lets a test act as another replica just before a
// decision (`meanwhile`).

export type Round = 'none' | 'open' | 'accepted' | 'refused';

export interface Db extends PlatformTables {
  counters: { id: string; value: number; version: number; round: Round; label: string };
}

export type Counter = Db['counters'];
/** What the replica keeps of a counter: all but its label. */
export type KnownCounter = Omit<Counter, 'label'>;
export type CounterCommand =
  | { kind: 'create'; id: string; start: number; label: string }
  | { kind: 'increment'; by: number }
  /** Refused while the value is odd. */
  | { kind: 'incrementIfEven'; by: number }
  /** Changes nothing. */
  | { kind: 'touch' }
  /** Opens a round, which a saga's answer closes (`closeRound`): the counter is in flight meanwhile. */
  | { kind: 'openRound' }
  | { kind: 'closeRound'; accepted: boolean };
type CounterEffect = 'announce' | 'remind' | 'askRound';
export interface CounterView { id: string; value: number; round: Round }

export interface CounterTypes {
  state: Counter;
  known: KnownCounter;
  command: CounterCommand;
  changes: Partial<Counter>;
  effect: CounterEffect;
  facts: undefined;
  view: CounterView;
}

export const migrations: Record<string, Migration> = {
  '0001': {
    async up(db) {
      await createPlatformTablesV1(db);
      await createPlatformTablesV2(db);
      await createPlatformTablesV3(db);
      await createPlatformTablesV4(db);
      await createPlatformTablesV5(db);
      await db.schema.createTable('counters')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('value', 'integer', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('round', 'text', (c) => c.notNull())
        .addColumn('label', 'text', (c) => c.notNull())
        .execute();
    },
  },
};

const Counted = Type.Object({ id: Type.String(), value: Type.Integer() });
export const counted: MessageDef<typeof Counted> = { kind: 'event', owner: 'identity', type: 'test.counter.counted', data: Counted };
const RoundAsked = Type.Object({ id: Type.String() });
export const roundAsked: MessageDef<typeof RoundAsked> = { kind: 'event', owner: 'identity', type: 'test.counter.round-asked', data: RoundAsked };
const RoundClosed = Type.Object({ id: Type.String(), accepted: Type.Boolean() });
/** A saga's answer to a round: its consumer closes the round (`closeRound`). */
export const roundClosed: MessageDef<typeof RoundClosed> = { kind: 'event', owner: 'identity', type: 'test.counter.round-closed', data: RoundClosed };
const Bumped = Type.Object({ id: Type.String(), by: Type.Integer() });
/** A message whose consumer increments the counter if its value is even (`incrementIfEven`). */
export const bumped: MessageDef<typeof Bumped> = { kind: 'event', owner: 'identity', type: 'test.counter.bumped', data: Bumped };

export const REMIND = 'counter.remind';

const refused = (message: string): Decision<never, never> => ({ kind: 'refused', error: new AppError('INVALID_STATE', message) });

/** The pure decision. */
export function decideCounter(state: KnownCounter | undefined, command: CounterCommand): Decision<Partial<Counter>, CounterEffect> {
  if (command.kind === 'create') {
    if (state) return refused('The counter exists.');
    return { kind: 'changed', changes: { id: command.id, value: command.start, version: 1, round: 'none', label: command.label }, effects: ['announce'] };
  }
  if (command.kind === 'touch') return { kind: 'unchanged' };
  if (!state) return { kind: 'refused', error: new AppError('NOT_FOUND', 'No such counter.') };
  const next = { version: state.version + 1 };
  switch (command.kind) {
    case 'incrementIfEven':
      if (state.value % 2 !== 0) return refused('The value is odd.');
      return { kind: 'changed', changes: { ...next, value: state.value + command.by }, effects: ['announce', 'remind'] };
    case 'increment':
      return { kind: 'changed', changes: { ...next, value: state.value + command.by }, effects: ['announce', 'remind'] };
    case 'openRound':
      return state.round === 'open' ? { kind: 'unchanged' } : { kind: 'changed', changes: { ...next, round: 'open' }, effects: ['askRound'] };
    case 'closeRound':
      if (state.round !== 'open') return { kind: 'unchanged' };
      return { kind: 'changed', changes: { ...next, round: command.accepted ? 'accepted' : 'refused' }, effects: [] };
  }
}

/** The counter aggregate, with what the runner made it do. */
export function counterAggregate(): Aggregate<CounterTypes> & { log: string[]; meanwhile: Array<() => Promise<unknown>> } {
  const log: string[] = [];
  const meanwhile: Array<() => Promise<unknown>> = [];
  const select = (db: Kysely<Db>, id: string) => db.selectFrom('counters').selectAll().where('id', '=', id);
  return {
    name: 'counter',
    log,
    meanwhile,
    async read(db, id) {
      log.push('read');
      return select(db as Kysely<Db>, id).executeTakeFirst();
    },
    async lock(trx, id) {
      log.push('lock');
      return select(trx as Transaction<Db>, id).forUpdate().executeTakeFirst();
    },
    async facts() {
      await meanwhile.shift()?.();
      return undefined;
    },
    decide(state, command) {
      const decision = decideCounter(state, command);
      log.push(`decide ${command.kind} on ${state ? `${state.value} v${state.version}` : 'none'}: ${decision.kind}`);
      return decision;
    },
    write(trx, state, changes, guarded) {
      const db = trx as Transaction<Db>;
      if (!state) return { parts: [['counter', db.insertInto('counters').values(changes as Counter).onConflict((oc) => oc.column('id').doNothing()).returningAll()]], guard: 'counter' };
      const update = db.updateTable('counters').set(changes).where('id', '=', state.id);
      return { parts: [['counter', (guarded ? update.where('version', '=', state.version) : update).returningAll()]], guard: 'counter' };
    },
    async apply(_trx, work, state, effects, now) {
      for (const effect of effects) {
        if (effect === 'announce') work.enqueue(counted, { id: state.id, value: state.value }, { now });
        if (effect === 'remind') work.schedule({ kind: REMIND, key: state.id, fireAt: new Date(now.getTime() + 60_000) });
        if (effect === 'askRound') work.enqueue(roundAsked, { id: state.id }, { now });
      }
    },
    remember: ({ label: _label, ...known }) => known,
    idOf: (known) => known.id,
    inFlight: (known) => known.round === 'open',
    view: (state) => ({ id: state.id, value: state.value, round: state.round }),
    answer(outcome) {
      if (outcome.command.kind === 'openRound' && outcome.state.round === 'refused') return new AppError('INSUFFICIENT_FUNDS', 'The round was refused.');
      return outcome.stillInFlight ? 202 : 200;
    },
  };
}
