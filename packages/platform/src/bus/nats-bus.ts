import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import {
  AckPolicy, DeliverPolicy, JetStreamApiCodes, RetentionPolicy, StorageType,
  jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type JsMsg,
} from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { names, subjects } from '@aex/contracts';
import {
  BusUnavailableError, DEFAULT_ACK_WAIT_MS, DEFAULT_MAX_PAYLOAD, STREAM_MAX_AGE_MS, Semaphore, encodeMessage,
  type Bus, type BusMessage, type ConsumerSpec, type KvStore, type MsgHeaders, type Stoppable, type StreamKind,
} from './types.js';
import type { Logger } from '../logger.js';
import { exchangeMetrics, metrics } from '../metrics.js';
import { connectCoalescing } from './coalescing-transport.js';
import { natsKvStore } from './nats-kv.js';
import { fromNatsHeaders, isApiError, nanos, parse, toNatsHeaders } from './nats-messages.js';
import { StreamReplicas } from './nats-replicas.js';
import { ReplyMux } from './nats-reply-mux.js';
import { natsServers } from './nats-servers.js';
import { injectTrace, withMessageSpan, withOutgoingSpan } from './tracing.js';

/** How long a JetStream publish waits for the stream's acknowledgement (nats.js's default). */
const PUBLISH_TIMEOUT_MS = 5_000;

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

  private constructor(
    readonly namespace: string,
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly logger: Logger | undefined,
    /** Copies JetStream keeps of each stream and KV bucket (`NATS_REPLICAS`). */
    private readonly replicas: number,
  ) {
    this.js = jetstream(nc);
    this.kvm = new Kvm(nc);
    this.replies = new ReplyMux(nc);
    this.replication = new StreamReplicas(nc, jsm, replicas, logger);
  }

  /** What the server announced (its `max_payload`). */
  get maxPayload(): number {
    return this.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
  }

  static async connect(url: string, namespace: string, name = 'aex', logger?: Logger, opts: { replicas?: number } = {}): Promise<NatsBus> {
    // noAsyncTraces: nats.js otherwise builds an Error (a stack capture) for every request and every
    // JetStream publish in case it fails — about 4 % of the CPU of a lifecycle (docs/performance.md).
    // Writes gathered per turn of the event loop (coalescing-transport.ts).
    const nc = await connectCoalescing({ ...natsServers(url), name, maxReconnectAttempts: -1, reconnectTimeWait: 500, noAsyncTraces: true });
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
      await this.replication.apply(name, await this.jsm.streams.info(name));
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
      const headers = toNatsHeaders(injectTrace({ ...opts.headers, 'Nats-Msg-Id': opts.msgId }))!;
      // JetStream's publish is a request answered by the stream's acknowledgement (its PubAck).
      const reply = await this.replies.request(subject, encodeMessage(subject, data, this.maxPayload), PUBLISH_TIMEOUT_MS, headers)
        .catch((err: Error) => {
          throw new BusUnavailableError(subject, `not stored: ${err.message}`);
        });
      const ack = parse(reply.data) as { stream?: string; error?: { code: number; description: string } } | null;
      if (!ack?.stream) throw new BusUnavailableError(subject, `not stored: ${ack?.error?.description ?? 'no acknowledgement'}`);
    }, opts.headers);
  }

  async consume(spec: ConsumerSpec): Promise<Stoppable> {
    const stream = this.streamName(spec.stream);
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
      await this.jsm.consumers.update(stream, spec.durable, { ack_wait: config.ack_wait, max_deliver: config.max_deliver });
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
      await this.jsm.consumers.add(stream, config).catch(async (addErr) => {
        await this.jsm.consumers.info(stream, spec.durable).catch(() => {
          throw addErr;
        });
      });
    }
    const consumer = await this.js.consumers.get(stream, spec.durable);
    const key = `${stream}/${spec.durable}`;
    const entry = this.consuming.get(key) ?? { stream, kind: spec.stream, durable: spec.durable, count: 0 };
    entry.count++;
    this.consuming.set(key, entry);
    this.uncollect ??= metrics.collect(() => this.collectLag());
    const concurrency = spec.concurrency ?? 4;
    const messages = await consumer.consume({ max_messages: concurrency * 2 });
    const gate = new Semaphore(concurrency);
    const handle = async (m: JsMsg) => {
      const headers = fromNatsHeaders(m.headers);
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
    const loop = (async () => {
      for await (const m of messages) {
        await gate.acquire();
        void handle(m).finally(() => gate.release());
      }
    })();
    const stoppable: Stoppable = {
      stop: async () => {
        await messages.close();
        await loop.catch(() => undefined);
        await gate.idle();
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

  async kv(bucket: string, opts: { ttlMs?: number } = {}): Promise<KvStore> {
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
