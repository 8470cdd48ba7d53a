import { createInbox, headers as natsHeaders, type Msg, type NatsConnection, type MsgHdrs, type Subscription } from '@nats-io/transport-node';
import {
  AckPolicy, DeliverPolicy, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType,
  jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type JsMsg,
} from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { names, subjects } from '@aex/contracts';
import {
  BusUnavailableError, DEFAULT_ACK_WAIT_MS, DEFAULT_MAX_PAYLOAD, KvConflictError, STREAM_MAX_AGE_MS, Semaphore, encodeMessage,
  type Bus, type BusMessage, type ConsumerSpec, type KvStore, type MsgHeaders, type Stoppable, type StreamKind,
} from './types.js';
import type { Logger } from '../logger.js';
import { exchangeMetrics, metrics } from '../metrics.js';
import { connectCoalescing } from './coalescing-transport.js';
import { injectTrace, withMessageSpan, withOutgoingSpan } from './tracing.js';

const decoder = new TextDecoder();

const nanos = (ms: number) => ms * 1_000_000;

/**
 * NATS_URL as connect options: one URL or several, comma-separated; credentials in a URL
 * (`nats://user:password@host:4222`, or `nats://token@host:4222`) become the connection's user and
 * password (or token), as the other NATS clients read them — nats.js itself ignores them. A NATS
 * account of the exchange's own is what keeps `<ns>.rpc.>` to its services (docs/deploy.md).
 */
export function natsServers(url: string): { servers: string[]; user?: string; pass?: string; token?: string } {
  const servers: string[] = [];
  let auth: { user?: string; pass?: string; token?: string } = {};
  for (const raw of url.split(',').map((u) => u.trim()).filter(Boolean)) {
    const parsed = /^([a-z]+:\/\/)?(?:([^@/]*)@)?(.+)$/i.exec(raw)!;
    const [, scheme = '', userinfo, hostport] = parsed;
    servers.push(`${scheme}${hostport}`);
    if (userinfo === undefined) continue;
    const colon = userinfo.indexOf(':');
    const found = colon < 0 ? { token: decodeURIComponent(userinfo) } : { user: decodeURIComponent(userinfo.slice(0, colon)), pass: decodeURIComponent(userinfo.slice(colon + 1)) };
    if (Object.keys(auth).length > 0 && JSON.stringify(auth) !== JSON.stringify(found)) throw new Error('NATS_URL: every server of the list must carry the same credentials');
    auth = found;
  }
  if (servers.length === 0) throw new Error('NATS_URL names no server');
  return { servers, ...auth };
}

function toNatsHeaders(h: MsgHeaders | undefined): MsgHdrs | undefined {
  const entries = Object.entries(h ?? {});
  if (entries.length === 0) return undefined;
  const out = natsHeaders();
  for (const [k, v] of entries) out.set(k, v);
  return out;
}

function fromNatsHeaders(h: MsgHdrs | undefined): MsgHeaders {
  const out: MsgHeaders = {};
  if (!h) return out;
  for (const [k, v] of h) if (v[0] !== undefined) out[k.toLowerCase()] = v[0];
  return out;
}

function parse(data: Uint8Array): unknown {
  if (data.length === 0) return null;
  return JSON.parse(decoder.decode(data));
}

function isApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

/** How long a JetStream publish waits for the stream's acknowledgement (nats.js's default). */
const PUBLISH_TIMEOUT_MS = 5_000;

/**
 * Request and reply over one subscription of the connection's own: nats.js builds an
 * `Error`, with its stack, for every request it completes (`RequestOne.cancel`) — for RPCs and for
 * every JetStream publish, 2–3 % of the exchange's CPU. Replies come to `<inbox>.<token>`; a
 * no-responders status (503) or the time running out ends the request with an error.
 */
class ReplyMux {
  private readonly inbox = createInbox();
  private readonly pending = new Map<string, { resolve(m: Msg): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  private next = 0;

  constructor(private readonly nc: NatsConnection) {
    nc.subscribe(`${this.inbox}.*`, {
      callback: (err, msg) => {
        if (err) return;
        const token = msg.subject.slice(this.inbox.length + 1);
        const waiting = this.pending.get(token);
        if (!waiting) return;
        this.pending.delete(token);
        clearTimeout(waiting.timer);
        if (msg.headers?.hasError && msg.headers.code === 503) waiting.reject(new Error('no responders'));
        else waiting.resolve(msg);
      },
    });
  }

  request(subject: string, payload: Uint8Array, timeoutMs: number, headers: MsgHdrs | undefined): Promise<Msg> {
    const token = (this.next++).toString(36);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(token);
        reject(new Error('timeout'));
      }, timeoutMs);
      this.pending.set(token, { resolve, reject, timer });
      try {
        this.nc.publish(subject, payload, { reply: `${this.inbox}.${token}`, headers });
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(token);
        reject(err as Error);
      }
    });
  }
}

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

  private constructor(
    readonly namespace: string,
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly logger: Logger | undefined,
  ) {
    this.js = jetstream(nc);
    this.kvm = new Kvm(nc);
    this.replies = new ReplyMux(nc);
  }

  /** What the server announced (its `max_payload`). */
  get maxPayload(): number {
    return this.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
  }

  static async connect(url: string, namespace: string, name = 'aex', logger?: Logger): Promise<NatsBus> {
    // noAsyncTraces: nats.js otherwise builds an Error (a stack capture) for every request and every
    // JetStream publish in case it fails — about 4 % of the CPU of a lifecycle (docs/performance.md).
    // Writes gathered per turn of the event loop (coalescing-transport.ts).
    const nc = await connectCoalescing({ ...natsServers(url), name, maxReconnectAttempts: -1, reconnectTimeWait: 500, noAsyncTraces: true });
    const jsm = await jetstreamManager(nc);
    const bus = new NatsBus(namespace, nc, jsm, logger);
    await bus.ensureStream('events');
    await bus.ensureStream('commands');
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
    };
    try {
      await this.jsm.streams.info(name);
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
      try {
        await this.jsm.streams.add(config);
      } catch (addErr) {
        // Another process created it between our info and add.
        await this.jsm.streams.info(name).catch(() => {
          throw addErr;
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
        m.term('payload is not JSON');
        return;
      }
      const msg: BusMessage = { subject: m.subject, data, headers, deliveryCount: m.info.deliveryCount, msgId: headers['nats-msg-id'] };
      try {
        const outcome = await withMessageSpan(`consume ${m.subject}`, 'consumer', headers, () => spec.handler(msg));
        if (outcome.type === 'ack') m.ack();
        else if (outcome.type === 'nak') m.nak(outcome.delayMs);
        else m.term(outcome.reason);
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
    const kv: KV = await this.kvm.create(bucket, { history: 1, ...(opts.ttlMs ? { ttl: opts.ttlMs } : {}) });
    const jsm = this.jsm;
    const conflict = (key: string) => (err: unknown): never => {
      if (isApiError(err, JetStreamApiCodes.StreamWrongLastSequence) || /wrong last sequence/i.test(String((err as Error)?.message))) {
        throw new KvConflictError(key);
      }
      throw err;
    };
    return {
      async get(key) {
        const e = await kv.get(key);
        if (!e || e.operation !== 'PUT') return null;
        return { value: e.string(), revision: e.revision };
      },
      create: (key, value) => kv.create(key, value).catch(conflict(key)),
      update: (key, value, revision) => kv.update(key, value, revision).catch(conflict(key)),
      put: (key, value) => kv.put(key, value),
      async delete(key) {
        await kv.delete(key);
      },
      // Not nats.js's `kv.keys()`: its push consumer ends a listing on the last message it counted,
      // or else on an idle heartbeat, and an entry that expires between the count and the delivery
      // leaves it waiting for that. The gateway registry's entries expire by design, and identity
      // lists it for every forget; identity's stall after a gateway died went away with this change
      // (docs/performance.md). The stream's subjects instead, then each key's last
      // entry (deleted and expired ones left out): requests with a bound, no consumer.
      async keys() {
        const prefix = `$KV.${bucket}.`;
        const info = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}>` });
        const listed = Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
        const live = await Promise.all(listed.map(async (key) => ((await kv.get(key))?.operation === 'PUT' ? key : null)));
        return live.filter((key): key is string => key !== null);
      },
    };
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
