import type { Msg, MsgHdrs, NatsConnection, Subscription } from '@nats-io/transport-node';
import {
  AckPolicy, DeliverPolicy, JetStreamApiCodes, RetentionPolicy, StorageType,
  jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type JsMsg,
} from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { names, subjects } from '@aex/contracts';
import {
  BusUnavailableError, DEFAULT_ACK_WAIT_MS, DEFAULT_MAX_PAYLOAD, STREAM_MAX_AGE_MS, encodeMessage,
  type Bus, type BusMessage, type ConsumerSpec, type KvOptions, type KvStore, type MsgHeaders, type Stoppable, type StreamKind,
} from './types.js';
import type { Logger } from '../logger.js';
import { exchangeMetrics, metrics } from '../metrics.js';
import { connectCoalescing } from './coalescing-transport.js';
import { natsKvStore } from './nats-kv.js';
import { fromNatsHeaders, isApiError, nanos, parse, toNatsHeaders } from './nats-messages.js';
import { runPullConsumer } from './nats-consumer.js';
import { LaneConsumer, LaneCopy, laneSubject } from './nats-lane.js';
import { StreamReplicas } from './nats-replicas.js';
import { ReplyMux } from './nats-reply-mux.js';
import { natsServers } from './nats-servers.js';
import { injectTrace, withMessageSpan, withOutgoingSpan } from './tracing.js';

/**
 * How NATS and JetStream losing a node is met (docs/messaging.md, "When a NATS node is lost").
 * A publish waits this long for the stream's acknowledgement (its PubAck) before it is sent again.
 */
const PUBLISH_ATTEMPT_MS = 2_000;
/**
 * A publish not acknowledged is sent again, under the same `Nats-Msg-Id` (JetStream stores it once),
 * until this much time has passed since its first attempt failed: a replicated stream whose leader
 * was lost takes NATS 2.9 about 4–9 s to elect another, and answers "no responders" meanwhile.
 */
const PUBLISH_BUDGET_MS = 10_000;
/** Pauses between the attempts of a publish. */
const PUBLISH_PAUSES_MS = [100, 250, 500, 1_000];
/**
 * The client pings its server this often and leaves it after two pings unanswered: a frozen server
 * (its sockets open, nothing answering) is left in 2–3 s, not in nats.js's 4 minutes.
 */
const PING_INTERVAL_MS = 1_000;
/** How long connecting to one server may take before the next is tried (nats.js: 20 s). */
const CONNECT_TIMEOUT_MS = 3_000;
/**
 * JetStream API requests of the consumers (a consumer's info, asked again when its heartbeats stop).
 * nats.js's 5 s would hold a consumer back that long when it asks a leader that is gone.
 */
const JS_API_TIMEOUT_MS = 2_000;

/** The JetStream implementation of the bus (production and tests). */
export class NatsBus implements Bus {
  readonly kind = 'jetstream' as const;
  private readonly js: JetStreamClient;
  private readonly kvm: Kvm;
  private readonly stoppables = new Set<Stoppable>();
  /** The durable consumers this connection runs (stream name, durable) and how many of each: their lag is reported. */
  private readonly consuming = new Map<string, { stream: string; kind: StreamKind; durable: string; count: number }>();
  private uncollect: (() => void) | undefined;
  private readonly replies: ReplyMux;
  private readonly replication: StreamReplicas;
  private readonly serverLost = new Set<() => void>();

  private constructor(
    readonly namespace: string,
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly logger: Logger | undefined,
    /** Copies JetStream keeps of each stream and KV bucket (`NATS_REPLICAS`). */
    private readonly replicas: number,
  ) {
    this.js = jetstream(nc, { timeout: JS_API_TIMEOUT_MS });
    this.kvm = new Kvm(nc);
    this.replies = new ReplyMux(nc);
    this.replication = new StreamReplicas(nc, jsm, replicas, logger);
    void this.watchServers();
  }

  /** Tells `onServerLost` listeners of this connection's server lost, or a node gone from the cluster. */
  private async watchServers(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (s.type === 'disconnect' || (s.type === 'update' && (s.deleted?.length ?? 0) > 0)) {
        for (const listener of this.serverLost) listener();
      }
    }
  }

  onServerLost(listener: () => void): () => void {
    this.serverLost.add(listener);
    return () => this.serverLost.delete(listener);
  }

  /** What the server announced (its `max_payload`). */
  get maxPayload(): number {
    return this.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
  }

  static async connect(url: string, namespace: string, name = 'aex', logger?: Logger, opts: { replicas?: number } = {}): Promise<NatsBus> {
    // noAsyncTraces: nats.js otherwise builds an Error (a stack capture) for every request and every
    // JetStream publish in case it fails — about 4 % of the CPU of a lifecycle (docs/performance.md).
    // Writes gathered per turn of the event loop (coalescing-transport.ts).
    const nc = await connectCoalescing({
      ...natsServers(url), name, maxReconnectAttempts: -1, reconnectTimeWait: 500, noAsyncTraces: true,
      pingInterval: PING_INTERVAL_MS, maxPingOut: 2, timeout: CONNECT_TIMEOUT_MS,
    });
    const jsm = await jetstreamManager(nc);
    const bus = new NatsBus(namespace, nc, jsm, logger, opts.replicas ?? 1);
    try {
      bus.replication.checkClustered();
      await bus.ensureStream('events');
      await bus.ensureStream('commands');
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw err;
    }
    return bus;
  }

  private streamName(kind: StreamKind): string {
    return kind === 'events' ? names.eventsStream(this.namespace) : names.commandsStream(this.namespace);
  }

  private async ensureStream(kind: StreamKind): Promise<void> {
    const name = this.streamName(kind);
    const subject = kind === 'events' ? subjects.events(this.namespace) : subjects.commands(this.namespace);
    const config = {
      name,
      subjects: [subject],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: nanos(STREAM_MAX_AGE_MS),
      duplicate_window: nanos(2 * 60_000),
      num_replicas: this.replicas,
    };
    try {
      await this.replication.apply(name, await this.replication.info(name));
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
      try {
        await this.jsm.streams.add(config);
      } catch (addErr) {
        // Another process created it between our info and add.
        await this.jsm.streams.info(name).catch(() => {
          throw this.replication.refusal(addErr);
        });
      }
    }
  }

  async request(subject: string, data: unknown, opts: { timeoutMs: number; headers?: MsgHeaders }): Promise<unknown> {
    const payload = encodeMessage(subject, data, this.maxPayload);
    return withOutgoingSpan(`request ${subject}`, 'client', async () => {
      try {
        const reply = await this.replies.request(subject, payload, opts.timeoutMs, toNatsHeaders(injectTrace({ ...opts.headers })));
        return parse(reply.data);
      } catch (err) {
        throw new BusUnavailableError(subject, (err as Error).message);
      }
    });
  }

  async serve(subject: string, queue: string, handler: (data: unknown, headers: MsgHeaders) => Promise<unknown>): Promise<Stoppable> {
    const sub: Subscription = this.nc.subscribe(subject, { queue });
    const loop = (async () => {
      for await (const msg of sub) {
        const headers = fromNatsHeaders(msg.headers);
        void withMessageSpan(`serve ${msg.subject}`, 'server', headers, async () => {
          let data: unknown;
          try {
            data = parse(msg.data);
          } catch {
            data = undefined;
          }
          const reply = await handler(data, headers);
          msg.respond(encodeMessage(msg.subject, reply, this.maxPayload));
        }).catch((err: unknown) => this.logger?.error({ err, subject: msg.subject }, 'reply could not be sent; the caller will time out'));
      }
    })();
    const stoppable: Stoppable = {
      stop: async () => {
        await sub.drain();
        await loop;
        this.stoppables.delete(stoppable);
      },
    };
    this.stoppables.add(stoppable);
    return stoppable;
  }

  async publish(subject: string, data: unknown, opts: { msgId: string; headers?: MsgHeaders }): Promise<void> {
    await withOutgoingSpan(`publish ${subject}`, 'producer', async () => {
      const sent = injectTrace({ ...opts.headers, 'Nats-Msg-Id': opts.msgId });
      const headers = toNatsHeaders(sent)!;
      const payload = encodeMessage(subject, data, this.maxPayload);
      // Its copy on the lane (nats-lane.ts): stored once the stream took it, unstored once it did not.
      const lane = new LaneCopy(this.nc, laneSubject(this.namespace, subject), payload, sent);
      let deadline = 0;
      for (let attempt = 0; ; attempt++) {
        const failure = await this.publishOnce(subject, payload, headers);
        if (failure === undefined) {
          lane.send('stored');
          return;
        }
        if (failure.again) lane.send('unstored');
        deadline ||= Date.now() + PUBLISH_BUDGET_MS;
        const pause = PUBLISH_PAUSES_MS[Math.min(attempt, PUBLISH_PAUSES_MS.length - 1)]!;
        if (!failure.again || Date.now() + pause >= deadline) throw new BusUnavailableError(subject, `not stored: ${failure.reason}`);
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }, opts.headers);
  }

  /**
   * One attempt of a publish: JetStream's publish is a request answered by the stream's
   * acknowledgement. Undefined when stored; else why not, and whether sending it again may store it
   * (no answer, no stream listening while it elects a leader, a stream that is unavailable for now).
   */
  private async publishOnce(subject: string, payload: Uint8Array, headers: MsgHdrs): Promise<{ reason: string; again: boolean } | undefined> {
    let reply: Msg;
    try {
      reply = await this.replies.request(subject, payload, PUBLISH_ATTEMPT_MS, headers);
    } catch (err) {
      const reason = (err as Error).message;
      return { reason, again: reason === 'timeout' || reason === 'no responders' };
    }
    const ack = parse(reply.data) as { stream?: string; error?: { code: number; description: string } } | null;
    if (ack?.stream) return undefined;
    return { reason: ack?.error?.description ?? 'no acknowledgement', again: ack?.error?.code === 503 };
  }

  /**
   * Makes the durable consumer, or gives the one there the spec's ack wait and deliveries (`update`:
   * at start; a consumer made again after it was gone leaves one that is there as it is).
   */
  private async ensureConsumer(stream: string, spec: ConsumerSpec, update: boolean): Promise<void> {
    const config = {
      durable_name: spec.durable,
      filter_subject: spec.filter,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(spec.ackWaitMs ?? DEFAULT_ACK_WAIT_MS),
      max_deliver: spec.maxDeliver ?? -1,
    };
    try {
      await this.jsm.consumers.info(stream, spec.durable);
      if (update) await this.jsm.consumers.update(stream, spec.durable, { ack_wait: config.ack_wait, max_deliver: config.max_deliver });
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
      await this.jsm.consumers.add(stream, config).catch(async (addErr) => {
        await this.jsm.consumers.info(stream, spec.durable).catch(() => {
          throw addErr;
        });
      });
    }
  }

  async consume(spec: ConsumerSpec): Promise<Stoppable> {
    const stream = this.streamName(spec.stream);
    await this.ensureConsumer(stream, spec, true);
    const key = `${stream}/${spec.durable}`;
    const entry = this.consuming.get(key) ?? { stream, kind: spec.stream, durable: spec.durable, count: 0 };
    entry.count++;
    this.consuming.set(key, entry);
    this.uncollect ??= metrics.collect(() => this.collectLag());
    const lane = LaneConsumer.start(
      this.nc, { namespace: this.namespace, filter: spec.filter, durable: spec.durable },
      { concurrency: spec.concurrency ?? 4, logger: this.logger },
      (msg) => withMessageSpan(`consume ${msg.subject} (lane)`, 'consumer', msg.headers, () => spec.handler(msg)),
    );
    const handle = async (m: JsMsg) => {
      const headers = fromNatsHeaders(m.headers);
      lane.delivered(headers['nats-msg-id']);
      let data: unknown;
      try {
        data = parse(m.data);
      } catch {
        m.term();
        return;
      }
      const msg: BusMessage = { subject: m.subject, data, headers, deliveryCount: m.info.deliveryCount, msgId: headers['nats-msg-id'] };
      try {
        const outcome = await withMessageSpan(`consume ${m.subject}`, 'consumer', headers, () => spec.handler(msg));
        if (outcome.type === 'ack') m.ack();
        else if (outcome.type === 'nak') m.nak(outcome.delayMs);
        // Without its reason: a NATS 2.9 server takes a term that carries one (`+TERM reason`) for
        // none at all and delivers the message again at every ack wait. The consumer logs the reason.
        else m.term();
      } catch {
        m.nak(Math.min(30_000, 250 * 2 ** Math.min(m.info.deliveryCount, 7)));
      }
    };
    const running = runPullConsumer(
      this.js, { stream, durable: spec.durable },
      { concurrency: spec.concurrency ?? 4, ensure: () => this.ensureConsumer(stream, spec, false), pull: (alive) => lane.pull(alive) }, handle, this.logger,
    );
    const stoppable: Stoppable = {
      stop: async () => {
        await lane.stop();
        await running.stop();
        this.stoppables.delete(stoppable);
        if (--entry.count === 0) this.consuming.delete(key);
      },
    };
    this.stoppables.add(stoppable);
    return stoppable;
  }

  /** Each durable consumer's lag from JetStream: not yet delivered, and delivered but not acknowledged. */
  private async collectLag(): Promise<void> {
    const [pending, ackPending] = [exchangeMetrics.consumerPending(), exchangeMetrics.consumerAckPending()];
    await Promise.all([...this.consuming.values()].map(async (c) => {
      const info = await this.jsm.consumers.info(c.stream, c.durable).catch(() => null);
      if (!info) return;
      pending.set({ stream: c.kind, consumer: c.durable }, info.num_pending);
      ackPending.set({ stream: c.kind, consumer: c.durable }, info.num_ack_pending);
    }));
  }

  notify(subject: string, data: unknown): void {
    if (this.nc.isClosed()) return;
    this.nc.publish(subject, encodeMessage(subject, data, this.maxPayload));
  }

  async listen(subject: string, handler: (data: unknown, subject: string) => void): Promise<Stoppable> {
    const sub = this.nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return;
        try {
          handler(parse(msg.data), msg.subject);
        } catch (handlerErr) {
          this.logger?.warn({ err: handlerErr, subject: msg.subject }, 'notice listener failed');
        }
      },
    });
    // Listening once the server has the subscription: a notice sent after `listen` returns arrives.
    await this.nc.flush();
    const stoppable: Stoppable = {
      stop: async () => {
        sub.unsubscribe();
        this.stoppables.delete(stoppable);
      },
    };
    this.stoppables.add(stoppable);
    return stoppable;
  }

  async kv(bucket: string, opts: KvOptions = {}): Promise<KvStore> {
    return natsKvStore(this.kvm, this.jsm, bucket, { ...opts, replication: this.replication });
  }

  async healthy(): Promise<boolean> {
    if (this.nc.isClosed()) return false;
    try {
      await this.nc.flush();
      return true;
    } catch {
      return false;
    }
  }

  /** Deletes the namespace's streams and every KV bucket named for it (tests, teardown). */
  async destroyNamespace(): Promise<void> {
    for (const kind of ['events', 'commands'] as const) await this.jsm.streams.delete(this.streamName(kind)).catch(() => undefined);
    const kvPrefix = `KV_${names.bucket(this.namespace, '')}`;
    const doomed: string[] = [];
    for await (const name of this.jsm.streams.names()) if (name.startsWith(kvPrefix)) doomed.push(name);
    for (const name of doomed) await this.jsm.streams.delete(name).catch(() => undefined);
  }

  async deleteBucket(bucket: string): Promise<void> {
    await this.jsm.streams.delete(`KV_${bucket}`).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.uncollect?.();
    for (const s of [...this.stoppables]) await s.stop().catch(() => undefined);
    await this.nc.drain().catch(() => undefined);
  }
}
