import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { subjects, type MessageDef, type MessageEnvelope, type Static } from '@aex/contracts';
import type { Bus } from '../bus/types.js';
import { injectTrace, outsideTrace } from '../bus/tracing.js';
import type { PlatformTables } from '../db/platform-tables.js';
import type { Logger } from '../logger.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Writes an event or command to the outbox in the caller's transaction (ARCHITECTURE "Messaging").
 * It is published only if that transaction commits; the relay publishes it with `Nats-Msg-Id` = id.
 */
export async function enqueue<M extends MessageDef>(trx: AnyDb, def: M, data: Static<M['data']>, opts: { id?: string; now?: Date } = {}): Promise<MessageEnvelope> {
  const id = opts.id ?? randomUUID();
  const envelope: MessageEnvelope = { id, type: def.type, occurredAt: (opts.now ?? new Date()).toISOString(), data };
  await (trx as Kysely<PlatformTables>)
    .insertInto('outbox')
    .values({ id, kind: def.kind, type: def.type, payload: JSON.stringify(envelope), headers: JSON.stringify(injectTrace({})) as never, publishedAt: null })
    .execute();
  return envelope;
}

/** `enqueue` of several messages of one type in one statement (a group commit's events). */
export async function enqueueMany<M extends MessageDef>(trx: AnyDb, def: M, items: Array<Static<M['data']>>, opts: { now?: Date } = {}): Promise<MessageEnvelope[]> {
  if (items.length === 0) return [];
  const occurredAt = (opts.now ?? new Date()).toISOString();
  const headers = JSON.stringify(injectTrace({}));
  const envelopes: MessageEnvelope[] = items.map((data) => ({ id: randomUUID(), type: def.type, occurredAt, data }));
  await (trx as Kysely<PlatformTables>)
    .insertInto('outbox')
    .values(envelopes.map((e) => ({ id: e.id, kind: def.kind, type: def.type, payload: JSON.stringify(e), headers: headers as never, publishedAt: null })))
    .execute();
  return envelopes;
}

/**
 * Publishes committed outbox rows. A relay claims a batch for a short lease in one statement
 * (FOR UPDATE SKIP LOCKED inside it, so replicas relay side by side), publishes it with no database
 * lock held, and marks what JetStream acknowledged in a second statement. A crash before marking
 * leaves the rows claimed until the lease ends; they are then published again, which JetStream drops
 * as a duplicate (same msg id inside its window) and consumers drop by processed id after it.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private draining: Promise<void> | null = null;
  private again = false;
  private lastCleanup = 0;

  constructor(
    private readonly db: AnyDb,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly pollMs = 250,
    private readonly leaseMs = 5_000,
  ) {}

  start(): void {
    this.running = true;
    this.schedule(0);
  }

  /** Publish now (called after a commit that enqueued something). */
  kick(): void {
    if (!this.running) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    // Not through a timer: the drain starts in this turn, so a hop of a saga waits for no clock.
    clearTimeout(this.timer);
    void this.tick();
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
      const sent = await Promise.allSettled(rows.map((row) => {
        const subject = row.kind === 'event' ? subjects.event(this.bus.namespace, row.type) : subjects.command(this.bus.namespace, row.type);
        return this.bus.publish(subject, row.payload, { msgId: row.id, headers: row.headers });
      }));
      const published = rows.filter((_, i) => sent[i]!.status === 'fulfilled').map((r) => r.id);
      const failed = rows.filter((_, i) => sent[i]!.status === 'rejected').map((r) => r.id);
      if (published.length > 0) await db.updateTable('outbox').set({ publishedAt: sql<Date>`now()` }).where('id', 'in', published).execute();
      if (failed.length > 0) {
        // Given back at once, to be tried again by the next drain rather than after the lease.
        await db.updateTable('outbox').set({ claimedUntil: null }).where('id', 'in', failed).execute();
        throw (sent.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason;
      }
      total += rows.length;
      if (rows.length < 100) break;
    }
    if (Date.now() - this.lastCleanup > 60_000) {
      this.lastCleanup = Date.now();
      await db.deleteFrom('outbox').where('publishedAt', '<', sql<Date>`now() - interval '1 day'`).execute();
    }
    return total;
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await this.draining;
  }
}
