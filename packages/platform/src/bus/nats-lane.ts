import type { Msg, MsgHdrs, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from '../logger.js';
import { fromNatsHeaders, parse, toNatsHeaders } from './nats-messages.js';
import { Semaphore, type BusMessage, type MsgHeaders } from './types.js';

/**
 * The lane beside JetStream (docs/messaging.md, "When a NATS node is lost"). A replicated stream
 * or durable consumer whose leader died takes NATS 2.9 4–9 s to elect another; core NATS routes
 * around a lost node at once. So every published message is also sent once on core NATS, on its
 * lane subject, to a queue group per durable consumer — a copy the consumer applies only when
 * JetStream cannot bring it now:
 *
 * - `unstored`: an attempt of the publish failed in a way another may not (no stream leader
 *   answered: "no responders" at once while one is elected, or no acknowledgement within the
 *   attempt's 2 s). Applied at once. Not sent on a mere slow acknowledgement: under load that
 *   would have consumers apply copies JetStream is about to deliver, more work when there is least room.
 * - `stored`: the stream took it. Held for `HOLD_MS`, dropped when JetStream delivers it here, and
 *   applied only if the consumer's pull stalls meanwhile (its leader's heartbeats missed) — the copy
 *   then reaches its consumer while the consumer's next leader is elected.
 *
 * JetStream stays the way every message is delivered: a copy applied from the lane is delivered by
 * JetStream later all the same, and found applied there (every consumer records the message ids it
 * applied in the transaction of their effect). The lane only saves the wait; a copy it loses costs
 * nothing. Its subjects are outside every stream's.
 */
export const LANE_HEADER = 'Aex-Lane';
/** How long a stored copy waits for its consumer's pull to stall before it is dropped. */
const HOLD_MS = 5_000;

export type LaneKind = 'stored' | 'unstored';

/** The lane subject of a stream subject (`<ns>.evt.x` → `<ns>.lane.evt.x`; filters alike). */
export const laneSubject = (namespace: string, subject: string): string => `${namespace}.lane.${subject.slice(namespace.length + 1)}`;

/** The stream subject a lane subject carries a copy of. */
const streamSubject = (namespace: string, lane: string): string => `${namespace}.${lane.slice(namespace.length + 6)}`;

/** A publish's copy on the lane: sent once, as unstored or as stored, whichever is known first. */
export class LaneCopy {
  private sent = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subject: string,
    private readonly payload: Uint8Array,
    private readonly headers: MsgHeaders,
  ) {}

  send(kind: LaneKind): void {
    if (this.sent || this.nc.isClosed()) return;
    this.sent = true;
    this.nc.publish(this.subject, this.payload, { headers: toNatsHeaders({ ...this.headers, [LANE_HEADER]: kind }) as MsgHdrs });
  }
}

/**
 * One durable consumer's end of the lane on this replica: the copies its queue group is sent, held
 * or applied as their kind and the pull's health say.
 */
export class LaneConsumer {
  private readonly held = new Map<string, { m: Msg; at: number }>();
  /** Messages JetStream delivered here lately: their copies, coming after, are dropped at once. */
  private readonly delivery = new Map<string, number>();
  private readonly gate: Semaphore;
  private stalled = false;
  private readonly sweeper: NodeJS.Timeout;
  private readonly loop: Promise<void>;

  private constructor(
    private readonly sub: Subscription,
    private readonly namespace: string,
    private readonly apply: (msg: BusMessage) => Promise<unknown>,
    concurrency: number,
    private readonly logger: Logger | undefined,
  ) {
    this.gate = new Semaphore(concurrency);
    this.sweeper = setInterval(() => this.sweep(), 1_000);
    this.sweeper.unref();
    this.loop = (async () => {
      for await (const m of sub) this.take(m);
    })();
  }

  static start(
    nc: NatsConnection, where: { namespace: string; filter: string; durable: string },
    opts: { concurrency: number; logger: Logger | undefined }, apply: (msg: BusMessage) => Promise<unknown>,
  ): LaneConsumer {
    const sub = nc.subscribe(laneSubject(where.namespace, where.filter), { queue: `lane-${where.durable}` });
    return new LaneConsumer(sub, where.namespace, apply, opts.concurrency, opts.logger);
  }

  /** JetStream delivered the message here: its copy is not needed. */
  delivered(msgId: string | undefined): void {
    if (msgId === undefined) return;
    if (!this.held.delete(msgId)) this.delivery.set(msgId, performance.now());
  }

  /**
   * What the pull says of itself: alive (a message or a heartbeat came), or stalled (heartbeats
   * missed while it waited for messages, or its loop ended). A stall applies what is held.
   */
  pull(alive: boolean): void {
    this.stalled = !alive;
    if (alive) return;
    const held = [...this.held.values()];
    this.held.clear();
    for (const { m } of held) void this.run(m);
  }

  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    this.held.clear();
    this.delivery.clear();
    this.sub.unsubscribe();
    await this.loop;
    await this.gate.idle();
  }

  /** A copy as it comes: read only when it is applied (most are dropped). */
  private take(m: Msg): void {
    const msgId = m.headers?.get('Nats-Msg-Id');
    if (!msgId || this.delivery.delete(msgId)) return;
    if (this.stalled || m.headers?.get(LANE_HEADER) === 'unstored') void this.run(m);
    else this.held.set(msgId, { m, at: performance.now() });
  }

  /** Applies a copy; whatever it answers, JetStream's delivery decides the message's fate. */
  private async run(m: Msg): Promise<void> {
    const subject = streamSubject(this.namespace, m.subject);
    await this.gate.acquire();
    try {
      const { [LANE_HEADER.toLowerCase()]: _kind, ...headers } = fromNatsHeaders(m.headers);
      await this.apply({ subject, data: parse(m.data), headers, deliveryCount: 1, msgId: headers['nats-msg-id'] });
    } catch (err) {
      this.logger?.debug({ err, subject }, 'a lane copy was not applied; JetStream delivers it');
    } finally {
      this.gate.release();
    }
  }

  private sweep(): void {
    const before = performance.now() - HOLD_MS;
    // Both in arrival order: the oldest first.
    for (const [id, h] of this.held) {
      if (h.at > before) break;
      this.held.delete(id);
    }
    for (const [id, at] of this.delivery) {
      if (at > before) break;
      this.delivery.delete(id);
    }
  }
}
