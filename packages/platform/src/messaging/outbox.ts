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

/**
 * Publishes committed outbox rows. Rows are claimed with FOR UPDATE SKIP LOCKED, so several replicas
 * relay side by side; a crash between publish and marking re-publishes, which JetStream drops as a
 * duplicate (same msg id inside the window) and consumers drop by processed id after it.
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
    this.schedule(0);
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = outsideTrace(() => setTimeout(() => void this.tick(), ms));
  }

  private async tick(): Promise<void> {
    if (!this.running || this.draining) return;
    this.draining = this.drain()
      .then(() => undefined)
      .catch((err) => this.logger.warn({ err }, "outbox relay failed; retrying"))
      .finally(() => {
        this.draining = null;
        if (this.running) this.schedule(this.again ? 0 : this.pollMs);
        this.again = false;
      });
    await this.draining;
  }

  /** Publishes everything pending; returns how many were published. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await (this.db as Kysely<PlatformTables>).transaction().execute(async (trx) => {
        const rows = await trx
          .selectFrom('outbox')
          .select(['id', 'kind', 'type', 'payload', 'headers'])
          .where('publishedAt', 'is', null)
          .orderBy('createdAt')
          .limit(100)
          .forUpdate()
          .skipLocked()
          .execute();
        // Sent in order, their acknowledgements awaited together: one round trip to JetStream, not one per row.
        await Promise.all(rows.map((row) => {
          const subject = row.kind === 'event' ? subjects.event(this.bus.namespace, row.type) : subjects.command(this.bus.namespace, row.type);
          return this.bus.publish(subject, row.payload, { msgId: row.id, headers: row.headers });
        }));
        if (rows.length > 0) {
          await trx.updateTable('outbox').set({ publishedAt: sql<Date>`now()` }).where('id', 'in', rows.map((r) => r.id)).execute();
        }
        return rows.length;
      });
      total += n;
      if (n < 100) break;
    }
    if (Date.now() - this.lastCleanup > 60_000) {
      this.lastCleanup = Date.now();
      await (this.db as Kysely<PlatformTables>).deleteFrom('outbox').where('publishedAt', '<', sql<Date>`now() - interval '1 day'`).execute();
    }
    return total;
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await this.draining;
  }
}
