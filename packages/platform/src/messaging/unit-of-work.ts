import { randomUUID } from 'node:crypto';
import { CompiledQuery, sql, type Kysely, type OperationNodeSource, type RawBuilder } from 'kysely';
import type { MessageDef, MessageEnvelope, Static } from '@aex/contracts';
import type { MsgHeaders } from '../bus/types.js';
import { injectTrace } from '../bus/tracing.js';
import { isUniqueViolation } from '../db/errors.js';
import { LastStatement } from '../db/driver.js';
import { AlreadyApplied } from './processed-messages.js';
import { GuardFoundNothing, partsOf, quoted, type GuardedWrite } from './guarded-write.js';

export { GuardFoundNothing, type GuardedWrite } from './guarded-write.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** An outbox row as its writer knows it: what the relay publishes after the commit. */
export interface OutboxRow {
  id: string;
  kind: 'event' | 'command';
  type: string;
  envelope: MessageEnvelope;
  headers: MsgHeaders;
}

/** A durable timer to set (or set again) or to drop, keyed by kind and key. */
export type TimerChange = { kind: string; key: string } & ({ op: 'schedule'; fireAt: Date; payload: unknown } | { op: 'cancel' });

/** Where a unit of work's rows go after its commit: the relay serving its database. */
export interface HandOffTarget {
  /** Whether the relay takes hand-offs now; if not, rows are left unclaimed for its drains. */
  readonly running: boolean;
  handOff(rows: OutboxRow[]): void;
}

/**
 * How long a row written by a unit of work stays claimed for its hand-off. The relay of any replica
 * publishes it once this has passed without the hand-off removing it (the writer crashed between its
 * commit and JetStream's acknowledgement).
 */
export const HAND_OFF_LEASE_MS = 5_000;

/**
 * A row the flush's statement writes beside the step's (`UnitOfWork.write`), on `written`: the
 * condition that the step's guarded write wrote (true when there is none).
 */
export type WrittenWith = (written: RawBuilder<boolean>) => OperationNodeSource | CompiledQuery;

/**
 * What one database transaction does besides its own queries (docs/messaging.md): the
 * messages it publishes (the outbox), the durable timers it sets or drops, the consumed message it
 * records, and what is to happen once it committed. Handlers receive it beside the transaction and
 * call `enqueue`, `schedule`, `cancelTimers`, `consumed`, `afterCommit`. Nothing is written until
 * `flush`, the last statement before the commit: however many messages and timers, they cost one
 * round trip, `COMMIT` included, and a step's guarded write may go in it too. Whoever commits the
 * transaction (`Transactor`, a keyed request's run) calls `committed` after the commit: the relay
 * publishes the rows at once, and the callbacks run.
 */
export class UnitOfWork {
  private rows: OutboxRow[] = [];
  private readonly timers = new Map<string, TimerChange>();
  private consumedMessage: { consumer: string; messageId: string } | undefined;
  private readonly callbacks: Array<() => void> = [];
  private writes: WrittenWith[] = [];
  /** Whether the rows are written claimed for the relay's hand-off: it ran when the work began. */
  private readonly claimed: boolean;

  /** `relay`: the relay serving the transaction's database, which publishes the rows after the commit. */
  constructor(private readonly trx: AnyDb, private readonly relay: HandOffTarget | null) {
    this.claimed = relay?.running ?? false;
  }

  /** Publishes an event or command if, and only if, the transaction commits (`Nats-Msg-Id` = its id). */
  enqueue<M extends MessageDef>(def: M, data: Static<M['data']>, opts: { id?: string; now?: Date } = {}): MessageEnvelope {
    const envelope: MessageEnvelope = { id: opts.id ?? randomUUID(), type: def.type, occurredAt: (opts.now ?? new Date()).toISOString(), data };
    this.rows.push({ id: envelope.id, kind: def.kind, type: def.type, envelope, headers: injectTrace({}) });
    return envelope;
  }

  /** `enqueue` of several messages of one type (a group commit's events). */
  enqueueMany<M extends MessageDef>(def: M, items: Array<Static<M['data']>>, opts: { now?: Date } = {}): MessageEnvelope[] {
    const occurredAt = (opts.now ?? new Date()).toISOString();
    const headers = injectTrace({});
    return items.map((data) => {
      const envelope: MessageEnvelope = { id: randomUUID(), type: def.type, occurredAt, data };
      this.rows.push({ id: envelope.id, kind: def.kind, type: def.type, envelope, headers });
      return envelope;
    });
  }

  /** Sets a durable timer (docs/messaging.md "Durable timers"), replacing one of the same kind and key. */
  schedule(t: { kind: string; key: string; fireAt: Date; payload?: unknown }): void {
    this.timers.set(`${t.kind}\u0000${t.key}`, { op: 'schedule', kind: t.kind, key: t.key, fireAt: t.fireAt, payload: t.payload ?? {} });
  }

  /** Drops the pending timers of `key` of one kind or several. One a runner is firing is left to it. */
  cancelTimers(kind: string | readonly string[], key: string): void {
    for (const k of typeof kind === 'string' ? [kind] : kind) this.timers.set(`${k}\u0000${key}`, { op: 'cancel', kind: k, key });
  }

  /**
   * Records that `consumer` applied the message `messageId` in this transaction: the flush fails with
   * `AlreadyApplied`, and everything rolls back, when it was recorded before.
   */
  consumed(consumer: string, messageId: string): void {
    this.consumedMessage = { consumer, messageId };
  }

  /**
   * Has a row written by the flush's statement, after the step's guarded write: a row of another
   * table that refers to the step's (a negotiation's message of a purchase created at commit), or
   * that must not be written unless the guarded write is. `query` must write, not read, and only
   * on the condition it is given (a step's guard that found nothing leaves nothing written).
   */
  write(query: WrittenWith): void {
    this.writes.push(query);
  }

  /** Runs `fn` once the transaction committed (a replica's memory of what it wrote, a waiter woken); never when it rolled back. */
  afterCommit(fn: () => void): void {
    this.callbacks.push(fn);
  }

  /** The transaction rolled back to a savepoint taken before anything was kept: forget it all. */
  discard(): void {
    this.rows = [];
    this.timers.clear();
    this.consumedMessage = undefined;
    this.callbacks.length = 0;
    this.writes = [];
  }

  /**
   * Writes what the unit of work kept, with the step's guarded `write` if given, in one statement:
   * once, just before the commit. `last`: nothing else is written and the caller commits right after,
   * so the `COMMIT` goes with the statement (`LastStatement`). Answers the rows the guarded write
   * returned. Throws `AlreadyApplied` (the consumed message was recorded before: the statement
   * failed, the transaction must roll back) or `GuardFoundNothing` (the guard wrote nothing, so
   * neither did the rest of the statement: whatever the transaction then commits is empty).
   */
  async flush<R = never>(opts: { last?: boolean; write?: GuardedWrite<R> } = {}): Promise<R[]> {
    const statement = this.statement(opts.write);
    if (!statement) return [];
    const query = opts.last ? new LastStatement(statement.sql, statement.parameters, opts.write !== undefined) : CompiledQuery.raw(statement.sql, statement.parameters);
    const result = await this.trx.executeQuery<R & { guarded?: number }>(query).catch((err: unknown) => {
      const consumed = this.consumedMessage;
      if (consumed && isUniqueViolation(err, 'processed_messages_pk')) throw new AlreadyApplied(consumed.consumer, consumed.messageId);
      throw err;
    });
    if (!opts.write) return [];
    if (Number(result.rows[0]?.guarded ?? 0) === 0) throw new GuardFoundNothing(opts.write.guard);
    return result.rows.map(({ guarded: _guarded, ...row }) => row as R);
  }

  /** After the commit: the relay publishes the rows now, without waiting for its next drain; the callbacks run. */
  committed(): void {
    if (this.claimed && this.rows.length > 0) this.relay!.handOff(this.rows);
    for (const fn of this.callbacks) fn();
  }

  /**
   * The flush's statement: the step's guarded write first (a Kysely query, whose parameters keep their
   * numbers), then the consumed message's record, the outbox rows and the timer changes, each a
   * common table expression. Its text is built here rather than by Kysely: building and compiling
   * this statement for every transaction was a twentieth of the exchange's CPU (docs/performance.md).
   */
  private statement(write: GuardedWrite<unknown> | undefined): { sql: string; parameters: unknown[] } | undefined {
    const ctes: string[] = [];
    const params: unknown[] = [];
    if (write) ctes.push(...partsOf(this.trx, write.parts, params));
    // Every other part writes only when the guard part did (docs/messaging.md "A step's guarded
    // write at commit"): a guard that finds nothing leaves the statement writing nothing, and the
    // `COMMIT` sent with it commits nothing — no error, so nothing in the database's log.
    const guard = write && quoted(write.guard);
    const written = guard ? `exists (select 1 from ${guard})` : undefined;
    const where = written ? ` where ${written}` : '';
    const condition = sql.raw<boolean>(written ?? 'true');
    ctes.push(...partsOf(this.trx, this.writes.map((build, i) => [`written_${i + 1}`, build(condition)]), params));
    const $ = (value: unknown) => `$${params.push(value)}`;
    if (this.consumedMessage) {
      // No `on conflict`: a message applied before fails the statement, so the `COMMIT` sent with it
      // is skipped and everything rolls back.
      ctes.push(`recorded as (insert into processed_messages (consumer, message_id) select ${$(this.consumedMessage.consumer)}, ${$(this.consumedMessage.messageId)}::uuid${where})`);
    }
    if (this.rows.length > 0) {
      // The rows as one JSON document rather than an array per column: node-postgres escapes each
      // element of an array of texts character by character. Claimed for the hand-off when a relay
      // takes it; else left for the relay's drains.
      const document = JSON.stringify(this.rows.map((r) => ({ id: r.id, kind: r.kind, type: r.type, payload: r.envelope, headers: r.headers })));
      const claim = this.claimed ? `now() + make_interval(secs => ${$(HAND_OFF_LEASE_MS / 1000)})` : 'null::timestamptz';
      ctes.push(`written as (
        insert into outbox (id, kind, type, payload, headers, claimed_until)
        select id, kind, type, payload, headers, ${claim}
        from jsonb_to_recordset(${$(document)}::jsonb) as r(id uuid, kind text, type text, payload jsonb, headers jsonb)${where})`);
    }
    const timers = [...this.timers.values()];
    const scheduled = timers.filter((t) => t.op === 'schedule');
    if (scheduled.length > 0) {
      ctes.push(`scheduled as (
        insert into timers (id, kind, key, fire_at, payload, last_error, fired_at)
        select id, kind, key, fire_at, payload, null, null
        from unnest(${$(scheduled.map(() => randomUUID()))}::uuid[], ${$(scheduled.map((t) => t.kind))}::text[], ${$(scheduled.map((t) => t.key))}::text[],
          ${$(scheduled.map((t) => t.fireAt))}::timestamptz[], ${$(scheduled.map((t) => JSON.stringify(t.payload)))}::jsonb[]) as t(id, kind, key, fire_at, payload)${where}
        on conflict (kind, key) do update set fire_at = excluded.fire_at, payload = excluded.payload, fired_at = null, attempts = 0, last_error = null)`);
    }
    const cancelled = timers.filter((t) => t.op === 'cancel');
    if (cancelled.length > 0) {
      // Each key's kinds through the (kind, key) unique index: a join with the keys, or a condition
      // on `fired_at`, let the planner read the whole due index for every cancellation.
      const kinds = new Map<string, string[]>();
      for (const t of cancelled) kinds.set(t.key, [...(kinds.get(t.key) ?? []), t.kind]);
      const byKey = [...kinds].map(([key, ks]) => `(timers.key = ${$(key)} and timers.kind = any(${$(ks)}::text[]))`);
      // A timer locked by a runner firing it is left to that runner: its handler decides on the row
      // as this transaction leaves it. Waiting for it instead deadlocks, since the runner's handler
      // then waits for the row this transaction holds (a dispute opened as the review window ends).
      ctes.push(`cancelled as (delete from timers where id in (select id from timers where (${byKey.join(' or ')})${written ? ` and ${written}` : ''} for update skip locked))`);
    }
    if (ctes.length === 0) return undefined;
    // How many rows the guard part wrote (none: `GuardFoundNothing`), with those rows.
    const select = guard ? `select guard.n as guarded, w.* from (select count(*) as n from ${guard}) as guard left join ${guard} as w on true` : 'select 1';
    return { sql: `with ${ctes.join(', ')} ${select}`, parameters: params };
  }
}

