import { randomUUID } from 'node:crypto';
import { CompiledQuery, sql, type Kysely, type OperationNodeSource, type Transaction } from 'kysely';
import { subjects, type MessageDef, type MessageEnvelope, type Static } from '@aex/contracts';
import { STREAM_MAX_AGE_MS, type Bus, type MsgHeaders } from '../bus/types.js';
import { injectTrace, outsideTrace } from '../bus/tracing.js';
import { isUniqueViolation } from '../db/errors.js';
import type { PlatformTables } from '../db/platform-tables.js';
import { COMMIT_AFTER } from '../db/prepared.js';
import type { Logger } from '../logger.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** An outbox row as its writer knows it: what the hand-off publishes after the commit. */
interface Written {
  id: string;
  kind: 'event' | 'command';
  type: string;
  envelope: MessageEnvelope;
  headers: MsgHeaders;
}

/** A timer change a tracked transaction makes: the last one of each (kind, key) is what counts. */
export type TimerChange = { kind: string; key: string } & ({ op: 'schedule'; fireAt: Date; payload: unknown } | { op: 'cancel' });

/** What a tracked transaction has written so far, and the message it consumes, if any. */
interface Tracked {
  rows: Written[];
  /** Timer changes to write with the rows, by kind and key. */
  timers: Map<string, TimerChange>;
  /** An idempotent consumer's message: recorded by the flush, in the statement of the rows. */
  consumed?: { consumer: string; messageId: string };
  /** Whether the step's own write may go in the flush (`writeAtCommit`): first attempts of `inTransaction`. */
  atCommitAllowed: boolean;
  atCommit?: WriteAtCommit<unknown>;
}

/**
 * A step's one data write, made by the statement written before its commit (`writeAtCommit`): its
 * data-modifying parts, in order, as common table expressions of that statement (`name as (query)`,
 * names other than the flush's own: recorded, written, scheduled, cancelled, guard), one of which
 * must write — and return — a row.
 */
export interface WriteAtCommit<R> {
  parts: Array<[name: string, query: OperationNodeSource | CompiledQuery]>;
  /** The part that must write a row, else the transaction is undone (`NothingWrittenAtCommit`). */
  guard: string;
  /** The rows the guard part returned, once the statement ran (before the commit's answer). */
  written?: (rows: R[]) => void;
}

/**
 * A write at commit (`writeAtCommit`) wrote nothing: the statement failed and the transaction was
 * undone. `inTransaction` runs the step again, its writes then made as they come.
 */
export class NothingWrittenAtCommit extends Error {
  constructor() {
    super('the write made at commit wrote nothing; the transaction was undone');
  }
}

/** The message of a tracked consumer's transaction was applied before (its processed id exists). */
export class AlreadyApplied extends Error {
  constructor(readonly consumer: string, readonly messageId: string) {
    super(`message ${messageId} already applied by ${consumer}`);
  }
}

/**
 * How long a row written by a tracked transaction (`inTransaction`) stays claimed for its hand-off.
 * The relay of any replica publishes it once this has passed without the hand-off removing it (the
 * writer crashed between its commit and JetStream's acknowledgement).
 */
export const HAND_OFF_LEASE_MS = 5_000;
/**
 * How long handed-off rows gather before one statement removes them, published (a statement
 * per few rows was a tenth of a lifecycle's statements; at 200 ms those of the five services were
 * still half a statement and half a commit per lifecycle on a slow machine, at 1 s a tenth). Far
 * inside `HAND_OFF_LEASE_MS`, so no drain takes a row waiting for its removal; a crash in this time
 * only has the rows published again after their lease, which JetStream drops as duplicates of their
 * message ids.
 */
const REMOVE_GATHER_MS = 1_000;

/** What each tracked transaction has written, in order. */
const handOffs = new WeakMap<object, Tracked>();
/** The relay serving each service database. */
const relays = new WeakMap<object, OutboxRelay>();
/** Rows written outside any tracked transaction: a kick of the relay drains only when this moved. */
let untrackedWrites = 0;

/** What a tracked transaction wrote; `flush()` before its commit, `committed()` after it. */
export interface OutboxHandOff {
  /** The transaction rolled back to a savepoint taken before anything was written: forget it all. */
  discard(): void;
  /**
   * Writes what the transaction kept, in one statement with the consumed message's id: once, just
   * before the commit. `last`: nothing else is written and the caller commits right after, so the
   * `COMMIT` goes with the statement (`COMMIT_AFTER`).
   */
  flush(opts?: { last?: boolean }): Promise<void>;
  /** After the commit: the relay publishes the rows now, without waiting for its next drain. */
  committed(): void;
}

/**
 * Tracks what `trx` writes to the outbox, when a running relay serves `db`: the rows are written
 * already claimed (for `HAND_OFF_LEASE_MS`), so no drain takes them, and `committed()` has them
 * published at once. Undefined without a running relay (the rows are then left to a drain).
 */
export function trackOutbox(trx: AnyDb, db: object, opts: { atCommit?: boolean } = {}): OutboxHandOff | undefined {
  const relay = relays.get(db);
  if (!relay?.running) return undefined;
  const tracked: Tracked = { rows: [], timers: new Map(), atCommitAllowed: opts.atCommit ?? false };
  handOffs.set(trx, tracked);
  return {
    discard: () => {
      tracked.rows = [];
      tracked.timers.clear();
      delete tracked.consumed;
      delete tracked.atCommit;
    },
    flush: (opts) => flushTracked(trx, tracked, opts?.last ?? false),
    committed: () => {
      handOffs.delete(trx);
      if (tracked.rows.length > 0) relay.handOff(tracked.rows);
    },
  };
}

/**
 * A tracked transaction's pending rows, timer changes and the id of the message it consumes, in one
 * statement, the last before its commit: a saga step's messages and timers cost one round trip
 * however many there are. Throws `AlreadyApplied` (the transaction must roll back) when the
 * message's id was recorded before.
 */
async function flushTracked(trx: AnyDb, tracked: Tracked, last: boolean): Promise<void> {
  const { rows, consumed, atCommit } = tracked;
  const timers = [...tracked.timers.values()];
  // The text is built here rather than by Kysely (building and compiling this statement
  // for every transaction was a twentieth of the exchange's CPU); the step's own write, a Kysely
  // query, comes first, so its parameters keep their numbers.
  const ctes: string[] = [];
  const params: unknown[] = [];
  for (const [name, query] of atCommit?.parts ?? []) {
    const own = isCompiled(query) ? query : sql`${query}`.compile(trx);
    // Its parameters numbered after those before it (Kysely writes a parameter only as `$n`).
    const offset = params.length;
    ctes.push(`"${name.replaceAll('"', '""')}" as (${offset === 0 ? own.sql : own.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`);
    params.push(...own.parameters);
  }
  const $ = (value: unknown) => `$${params.push(value)}`;
  if (consumed) {
    // No `on conflict`: a message applied before fails the statement, so the `COMMIT` sent with it
    // (`COMMIT_AFTER`) is skipped and everything rolls back.
    ctes.push(`recorded as (insert into processed_messages (consumer, message_id) values (${$(consumed.consumer)}, ${$(consumed.messageId)}))`);
  }
  if (rows.length > 0) {
    // The rows as one JSON document rather than an array per column: node-postgres escapes each
    // element of an array of texts character by character, and every step writes these.
    const document = JSON.stringify(rows.map((r) => ({ id: r.id, kind: r.kind, type: r.type, payload: r.envelope, headers: r.headers })));
    ctes.push(`written as (
      insert into outbox (id, kind, type, payload, headers, claimed_until)
      select id, kind, type, payload, headers, now() + make_interval(secs => ${$(HAND_OFF_LEASE_MS / 1000)})
      from jsonb_to_recordset(${$(document)}::jsonb) as r(id uuid, kind text, type text, payload jsonb, headers jsonb))`);
  }
  const scheduled = timers.filter((t) => t.op === 'schedule');
  if (scheduled.length > 0) {
    // `scheduleTimer`'s upsert, for all of them (each (kind, key) once: the last change counts).
    ctes.push(`scheduled as (
      insert into timers (id, kind, key, fire_at, payload, last_error, fired_at)
      select id, kind, key, fire_at, payload, null, null
      from unnest(${$(scheduled.map(() => randomUUID()))}::uuid[], ${$(scheduled.map((t) => t.kind))}::text[], ${$(scheduled.map((t) => t.key))}::text[],
        ${$(scheduled.map((t) => t.fireAt))}::timestamptz[], ${$(scheduled.map((t) => JSON.stringify(t.payload)))}::jsonb[]) as t(id, kind, key, fire_at, payload)
      on conflict (kind, key) do update set fire_at = excluded.fire_at, payload = excluded.payload, fired_at = null, attempts = 0, last_error = null)`);
  }
  const cancelled = timers.filter((t) => t.op === 'cancel');
  if (cancelled.length > 0) {
    // Each key's kinds through the (kind, key) unique index, whatever the planner thinks of the
    // table's size: a join with the keys, or a condition on `fired_at`, let it read the
    // whole due index — every entry that deleted timers left there until the next vacuum — for
    // every cancellation. A fired timer is deleted when it fires, so none is left to spare.
    const kinds = new Map<string, string[]>();
    for (const t of cancelled) kinds.set(t.key, [...(kinds.get(t.key) ?? []), t.kind]);
    const byKey = [...kinds].map(([key, ks]) => `(timers.key = ${$(key)} and timers.kind = any(${$(ks)}::text[]))`);
    // A timer locked by a runner firing it is left to that runner: its handler decides on the row
    // as this transaction leaves it. Waiting for it instead deadlocks, since the runner's handler
    // then waits for the row this transaction holds (a dispute opened as the review window ends).
    ctes.push(`cancelled as (delete from timers where id in (select id from timers where ${byKey.join(' or ')} for update skip locked))`);
  }
  if (ctes.length === 0) return;
  // The guard part must have written a row: 1 / 0 fails the statement (and so skips its COMMIT) when
  // it wrote none. `ok` is selected, so that the division is not planned away.
  const guard = atCommit && `"${atCommit.guard.replaceAll('"', '""')}"`;
  const select = guard ? `select guard.ok, w.* from (select 1 / count(*)::int as ok from ${guard}) as guard left join ${guard} as w on true` : 'select 1';
  // The last statement of the transaction (`inTransaction` commits right after it): its COMMIT goes
  // in the same write (`PreparingClient`).
  const text = `${last ? COMMIT_AFTER : ''}with ${ctes.join(', ')} ${select}`;
  const result = await trx.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, params)).catch((err: unknown) => {
    if (consumed && isUniqueViolation(err, 'processed_messages_pk')) throw new AlreadyApplied(consumed.consumer, consumed.messageId);
    if (atCommit && (err as { code?: string }).code === DIVISION_BY_ZERO) throw new NothingWrittenAtCommit();
    throw err;
  });
  atCommit?.written?.(result.rows);
}

const DIVISION_BY_ZERO = '22012';

const isCompiled = (q: OperationNodeSource | CompiledQuery): q is CompiledQuery => 'sql' in q && 'parameters' in q;

/**
 * Has the step's one data write made by the statement written before the commit, with the outbox
 * rows, the timers and the consumed message's record: a step whose writes are only this
 * one and those costs one round trip, `BEGIN` and `COMMIT` included. False when that is not possible
 * (no tracked transaction, another write at commit already, or a second attempt): the caller then
 * makes the write at once. When the guard part writes nothing, the whole transaction is undone and
 * `inTransaction` runs the step again — where this answers false.
 */
export function writeAtCommit<R>(trx: object, write: WriteAtCommit<R>): boolean {
  const tracked = handOffs.get(trx);
  if (!tracked?.atCommitAllowed || tracked.atCommit) return false;
  tracked.atCommit = write as WriteAtCommit<unknown>;
  return true;
}

/**
 * Defers a timer change of a tracked transaction to the statement written before its commit
 * (`flushTracked`); false when `trx` is not tracked (the caller then writes it at once).
 */
export function deferTimerChange(trx: object, change: TimerChange): boolean {
  const tracked = handOffs.get(trx);
  if (!tracked) return false;
  tracked.timers.set(`${change.kind}\u0000${change.key}`, change);
  return true;
}

/**
 * Records that `consumer` applied the message `messageId` in this transaction; throws `AlreadyApplied`
 * (the transaction must roll back) when it was recorded before. In a tracked transaction the record
 * is made by the flush before the commit, with the outbox rows, in one statement; else at once.
 */
export async function recordApplied(trx: AnyDb, consumer: string, messageId: string): Promise<void> {
  const tracked = handOffs.get(trx);
  if (tracked) {
    tracked.consumed = { consumer, messageId };
    return;
  }
  const inserted = await (trx as Kysely<PlatformTables>)
    .insertInto('processedMessages')
    .values({ consumer, messageId })
    .onConflict((oc) => oc.doNothing())
    .returning('messageId')
    .executeTakeFirst();
  if (!inserted) throw new AlreadyApplied(consumer, messageId);
}

/**
 * How long a consumed message's id is kept: a message is delivered again only while its
 * stream still holds it (`STREAM_MAX_AGE_MS`), and it was published before its id was recorded, so an
 * id recorded longer ago than that cannot be needed; a day more for clocks. Kept forever, the ids grew
 * by about ten rows per purchase.
 */
export const PROCESSED_RETENTION_MS = STREAM_MAX_AGE_MS + 86_400_000;
/** How often each relay prunes them: ten minutes of ids at 100 purchases a second is some 60 statements. */
const PRUNE_EVERY_MS = 600_000;

/**
 * Deletes the consumed-message ids older than `PROCESSED_RETENTION_MS`, a batch per statement (a long
 * backlog after an upgrade is not one huge transaction), at most `maxBatches` of them and while
 * `going()` says so; how many. Every replica's relay prunes: each batch skips the rows another is
 * deleting, so they share the work instead of waiting for each other's locks.
 */
export async function pruneProcessedMessages(db: AnyDb, opts: { batch?: number; maxBatches?: number; going?: () => boolean } = {}): Promise<number> {
  const batch = opts.batch ?? 10_000;
  let total = 0;
  for (let i = 0; i < (opts.maxBatches ?? 1_000) && (opts.going?.() ?? true); i++) {
    const r = await sql`delete from processed_messages where ctid in (
      select ctid from processed_messages where processed_at < now() - make_interval(secs => ${PROCESSED_RETENTION_MS / 1000}) limit ${batch} for update skip locked)`.execute(db);
    const n = Number(r.numAffectedRows ?? 0);
    total += n;
    if (n < batch) break;
  }
  return total;
}

/**
 * `db.transaction().execute(fn)`, after which what `fn` wrote to the outbox is published at once by
 * the service's relay (a saga's hop waits for no claim round). Every service transaction
 * that may write to the outbox runs through here. `fn` may run twice: again, in a new transaction,
 * when its write at commit (`writeAtCommit`) found nothing to write.
 */
export async function inTransaction<DB, T>(db: Kysely<DB>, fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  for (let deadlocks = 0; ; deadlocks++) {
    try {
      try {
        return await attempt(db, fn, true);
      } catch (err) {
        // A write at commit found its row moved on: the step again, deciding on what it finds now.
        if (!(err instanceof NothingWrittenAtCommit)) throw err;
        return await attempt(db, fn, false);
      }
    } catch (err) {
      // Postgres chose this transaction as a deadlock's victim and rolled it back: nothing of it
      // happened, so it runs again and decides on what the other one left (D9.14: the loser of a
      // race is answered as the state it finds, not with a 500).
      if ((err as { code?: string }).code !== DEADLOCK_DETECTED || deadlocks >= MAX_DEADLOCK_RETRIES) throw err;
    }
  }
}

/** Postgres's SQLSTATE for a deadlock victim. */
const DEADLOCK_DETECTED = '40P01';
const MAX_DEADLOCK_RETRIES = 3;

async function attempt<DB, T>(db: Kysely<DB>, fn: (trx: Transaction<DB>) => Promise<T>, atCommit: boolean): Promise<T> {
  let handOff: OutboxHandOff | undefined;
  const result = await db.transaction().execute(async (trx) => {
    handOff = trackOutbox(trx, db, { atCommit });
    const value = await fn(trx);
    await handOff?.flush({ last: true });
    return value;
  });
  handOff?.committed();
  return result;
}

/**
 * Writes an event or command to the outbox in the caller's transaction (ARCHITECTURE "Messaging").
 * It is published only if that transaction commits: by the hand-off right after the commit when the
 * transaction is tracked (`inTransaction`), else by the relay's drain; `Nats-Msg-Id` = id either way.
 */
export async function enqueue<M extends MessageDef>(trx: AnyDb, def: M, data: Static<M['data']>, opts: { id?: string; now?: Date } = {}): Promise<MessageEnvelope> {
  const envelope: MessageEnvelope = { id: opts.id ?? randomUUID(), type: def.type, occurredAt: (opts.now ?? new Date()).toISOString(), data };
  await write(trx, def, [envelope]);
  return envelope;
}

/** `enqueue` of several messages of one type in one statement (a group commit's events). */
export async function enqueueMany<M extends MessageDef>(trx: AnyDb, def: M, items: Array<Static<M['data']>>, opts: { now?: Date } = {}): Promise<MessageEnvelope[]> {
  if (items.length === 0) return [];
  const occurredAt = (opts.now ?? new Date()).toISOString();
  const envelopes: MessageEnvelope[] = items.map((data) => ({ id: randomUUID(), type: def.type, occurredAt, data }));
  await write(trx, def, envelopes);
  return envelopes;
}

/** Keeps the messages for the flush of a tracked transaction, or inserts them at once (for a drain). */
async function write(trx: AnyDb, def: MessageDef, envelopes: MessageEnvelope[]): Promise<void> {
  const headers = injectTrace({});
  const tracked = handOffs.get(trx);
  if (tracked) {
    tracked.rows.push(...envelopes.map((envelope) => ({ id: envelope.id, kind: def.kind, type: def.type, envelope, headers })));
    return;
  }
  untrackedWrites++;
  await (trx as Kysely<PlatformTables>)
    .insertInto('outbox')
    .values(envelopes.map((e) => ({ id: e.id, kind: def.kind, type: def.type, payload: JSON.stringify(e), headers: JSON.stringify(headers) as never, publishedAt: null })))
    .execute();
}

/**
 * Publishes committed outbox rows, two ways:
 * - **Hand-off** (the usual way): a tracked transaction's rows (`inTransaction`) were written already
 *   claimed; right after the commit the relay publishes them and removes them, the rows of many
 *   hand-offs in one statement. A saga's hop thus costs one publish, not a claim round.
 * - **Drain** (the safety net): a relay claims a batch of unclaimed rows (or rows whose claim lapsed)
 *   for a short lease in one statement (FOR UPDATE SKIP LOCKED inside it, so replicas relay side by
 *   side), publishes it with no database lock held, and removes what JetStream acknowledged in a
 *   second statement. It runs every `pollMs`, and on a kick after a commit that wrote untracked rows.
 * A crash before the removal leaves the rows claimed until the lease ends; they are then published
 * again, which JetStream drops as a duplicate (same msg id inside its window) and consumers drop by
 * processed id after it.
 *
 * Published rows are deleted, not kept: JetStream holds the messages (7 days), the table
 * holds only what is still on its way, and a removal writes no new row version and no index entry,
 * where marking a row published wrote both (8.5 per lifecycle). Versions before this one marked rows
 * (`published_at`) and removed them a day later; `drain` still clears such rows.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  /** Whether hand-offs are taken and drains run (between `start` and `stop`). */
  running = false;
  private draining: Promise<void> | null = null;
  private again = false;
  private lastCleanup = 0;
  private lastPrune = 0;
  private pruning: Promise<void> | null = null;
  /** `untrackedWrites` at this relay's last kick. */
  private kickedAt = -1;
  private readonly handingOff = new Set<Promise<void>>();
  private toRemove: string[] = [];
  private removing: Promise<void> | null = null;
  private removeTimer: NodeJS.Timeout | undefined;
  private removeGathered: (() => void) | undefined;

  constructor(
    private readonly db: AnyDb,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly pollMs = 1_000,
    private readonly leaseMs = 5_000,
  ) {
    relays.set(db, this);
  }

  start(): void {
    this.running = true;
    this.schedule(0);
  }

  /**
   * Called after a commit that enqueued something: drains now when rows were written outside a
   * tracked transaction since the last kick (tracked ones are handed off already).
   */
  kick(): void {
    if (!this.running || this.kickedAt === untrackedWrites) return;
    this.kickedAt = untrackedWrites;
    this.drainSoon();
  }

  private drainSoon(): void {
    if (!this.running) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    // Not through a timer: the drain starts in this turn, so a hop of a saga waits for no clock.
    clearTimeout(this.timer);
    void this.tick();
  }

  /** Publishes a tracked transaction's rows after its commit (`trackOutbox`). */
  handOff(rows: Written[]): void {
    // A commit that ends after `stop` began: its rows are published by a drain once their lease passes.
    if (!this.running) return;
    const sending = this.publishHandedOff(rows).catch((err) => this.logger.warn({ err }, 'outbox hand-off failed; the relay publishes the rows after their lease'));
    this.handingOff.add(sending);
    void sending.finally(() => this.handingOff.delete(sending));
  }

  private async publishHandedOff(rows: Written[]): Promise<void> {
    // Sent in order, their acknowledgements awaited together.
    const sent = await Promise.allSettled(rows.map((row) => this.bus.publish(this.subjectOf(row), row.envelope, { msgId: row.id, headers: row.headers })));
    this.toRemove.push(...rows.filter((_, i) => sent[i]!.status === 'fulfilled').map((r) => r.id));
    void this.removePublished();
    const failed = rows.filter((_, i) => sent[i]!.status === 'rejected').map((r) => r.id);
    if (failed.length === 0) return;
    // Given back at once, for the next drain rather than after the lease.
    this.logger.warn({ err: (sent.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason, rows: failed.length }, 'outbox hand-off not acknowledged; left to the relay');
    await sql`update outbox set claimed_until = null where id = any(${failed}::uuid[])`.execute(this.db);
    this.drainSoon();
  }

  /** Removes handed-off rows once published, as many as have gathered in one statement, one statement at a time. */
  private removePublished(): Promise<void> {
    if (this.removing) return this.removing;
    this.removing = (async () => {
      // A moment for the hand-offs of other commits to join: one statement removes them all. `stop` cuts it short.
      await new Promise<void>((resolve) => {
        this.removeGathered = resolve;
        this.removeTimer = setTimeout(resolve, this.running ? REMOVE_GATHER_MS : 0);
      });
      while (this.toRemove.length > 0) {
        const ids = this.toRemove.splice(0, 1_000);
        // A failed removal only means the rows are published again after their lease (dropped as duplicates).
        await sql`delete from outbox where id = any(${ids}::uuid[])`.execute(this.db)
          .catch((err) => this.logger.warn({ err, rows: ids.length }, 'outbox rows published but not removed; they are sent again after their lease'));
      }
    })().finally(() => {
      this.removing = null;
      if (this.toRemove.length > 0) void this.removePublished();
    });
    return this.removing;
  }

  private subjectOf(row: { kind: 'event' | 'command'; type: string }): string {
    return row.kind === 'event' ? subjects.event(this.bus.namespace, row.type) : subjects.command(this.bus.namespace, row.type);
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = outsideTrace(() => setTimeout(() => void this.tick(), ms));
  }

  private async tick(): Promise<void> {
    if (!this.running || this.draining) return;
    this.draining = outsideTrace(() => this.drain())
      .then(() => undefined)
      .catch((err) => this.logger.warn({ err }, 'outbox relay failed; retrying'))
      .finally(() => {
        this.draining = null;
        if (this.running) this.schedule(this.again ? 0 : this.pollMs);
        this.again = false;
      });
    await this.draining;
  }

  /** Publishes everything pending; returns how many were published. */
  async drain(): Promise<number> {
    const db = this.db as Kysely<PlatformTables>;
    let total = 0;
    for (;;) {
      const claimed = await sql<{ id: string; kind: 'event' | 'command'; type: string; payload: unknown; headers: Record<string, string>; seq: string }>`
        update outbox set claimed_until = now() + make_interval(secs => ${this.leaseMs / 1000})
        where id in (
          select id from outbox
          where published_at is null and (claimed_until is null or claimed_until < now())
          order by seq limit 100
          for update skip locked)
        returning id, kind, type, payload, headers, seq`.execute(db);
      // In the order they were written (RETURNING keeps none).
      const rows = claimed.rows.sort((a, b) => Number(a.seq) - Number(b.seq));
      if (rows.length === 0) break;
      // Sent in order, their acknowledgements awaited together: one round trip to JetStream, not one per row.
      const sent = await Promise.allSettled(rows.map((row) => this.bus.publish(this.subjectOf(row), row.payload, { msgId: row.id, headers: row.headers })));
      const published = rows.filter((_, i) => sent[i]!.status === 'fulfilled').map((r) => r.id);
      const failed = rows.filter((_, i) => sent[i]!.status === 'rejected').map((r) => r.id);
      if (published.length > 0) await sql`delete from outbox where id = any(${published}::uuid[])`.execute(db);
      if (failed.length > 0) {
        // Given back at once, to be tried again by the next drain rather than after the lease.
        await sql`update outbox set claimed_until = null where id = any(${failed}::uuid[])`.execute(db);
        throw (sent.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason;
      }
      total += rows.length;
      if (rows.length < 100) break;
    }
    if (Date.now() - this.lastCleanup > 60_000) {
      // Rows an earlier version marked published instead of removing them (a rolling upgrade's old
      // replicas too). The table holds only what is on its way, so this reads little.
      this.lastCleanup = Date.now();
      await db.deleteFrom('outbox').where('publishedAt', 'is not', null).execute();
    }
    if (!this.pruning && Date.now() - this.lastPrune > PRUNE_EVERY_MS) {
      // The service's consumed-message ids too old to be needed (each service's relay, its own
      // schema), beside the drains rather than in their way: a backlog takes many statements.
      this.lastPrune = Date.now();
      this.pruning = pruneProcessedMessages(db, { going: () => this.running })
        .then(() => undefined, (err: unknown) => this.logger.warn({ err }, 'consumed-message ids not pruned; trying again later'))
        .finally(() => (this.pruning = null));
    }
    return total;
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await Promise.all(this.handingOff);
    clearTimeout(this.removeTimer);
    this.removeGathered?.();
    await this.removing;
    await this.pruning;
    await this.draining;
  }
}
