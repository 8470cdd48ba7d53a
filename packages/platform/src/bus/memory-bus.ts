import {
  BusUnavailableError, NO_RESPONDERS, DEFAULT_ACK_WAIT_MS, DEFAULT_MAX_PAYLOAD, KvConflictError, Semaphore, encodeMessage, subjectMatches,
  type Bus, type ConsumerSpec, type KvEntry, type KvOptions, type KvStore, type MsgHeaders, type Stoppable, type StreamKind,
} from './types.js';
import { injectTrace, withMessageSpan } from './tracing.js';
import { exchangeMetrics, metrics } from '../metrics.js';

interface StoredMessage {
  seq: number;
  subject: string;
  payload: string;
  headers: MsgHeaders;
}

interface DurableState {
  /** Next stream sequence to look at. */
  cursor: number;
  /** seq → delivery bookkeeping for messages delivered and not yet acked/termed. */
  pending: Map<number, { deliveries: number; redeliverAt: number }>;
}

const DUPLICATE_WINDOW_MS = 2 * 60_000;

/**
 * The in-process bus (README "Run it, test it"): one Node process, no NATS server. It keeps the
 * contract of the JetStream bus — at-least-once delivery with ack / nak(delay) / term and ack-wait
 * redelivery, publish dedupe by message id, durable cursors, queue-group request/reply, KV with CAS
 * and TTL — but holds everything in memory, so a restart forgets unconsumed messages. Services
 * re-drive from their outboxes, so nothing committed in Postgres is lost.
 */
export class MemoryBus implements Bus {
  readonly kind = 'memory' as const;
  private readonly streams: Record<StreamKind, StoredMessage[]> = { events: [], commands: [] };
  private seq = 0;
  private readonly dedupe = new Map<string, number>();
  private readonly durables = new Map<string, DurableState>();
  private readonly servers = new Map<string, Array<{ queue: string; handler: (data: unknown, headers: MsgHeaders) => Promise<unknown> }>>();
  private readonly roundRobin = new Map<string, number>();
  private readonly wakers = new Set<() => void>();
  private readonly listeners = new Set<{ subject: string; handler: (data: unknown, subject: string) => void }>();
  private readonly buckets = new Map<string, { ttlMs: number | undefined; revision: number; entries: Map<string, KvEntry & { at: number }> }>();
  private closed = false;

  private readonly uncollect: () => void;

  constructor(readonly namespace: string, readonly maxPayload = DEFAULT_MAX_PAYLOAD) {
    // The consumers' lag, as JetStream would report it: messages past the cursor, delivered and not acknowledged.
    const [pending, ackPending] = [exchangeMetrics.consumerPending(), exchangeMetrics.consumerAckPending()];
    this.uncollect = metrics.collect(async () => {
      for (const [key, d] of this.durables) {
        const [stream, consumer] = key.split('/') as [StreamKind, string];
        pending.set({ stream, consumer }, this.streams[stream].filter((m) => m.seq > d.cursor).length);
        ackPending.set({ stream, consumer }, d.pending.size);
      }
    });
  }

  async request(subject: string, data: unknown, opts: { timeoutMs: number; headers?: MsgHeaders }): Promise<unknown> {
    const encoded = encodeMessage(subject, data, this.maxPayload);
    const handlers = this.servers.get(subject);
    if (!handlers || handlers.length === 0 || this.closed) throw new BusUnavailableError(subject, NO_RESPONDERS);
    const i = (this.roundRobin.get(subject) ?? 0) % handlers.length;
    this.roundRobin.set(subject, i + 1);
    const target = handlers[i]!;
    const headers = injectTrace({ ...opts.headers });
    const payload = JSON.parse(Buffer.from(encoded).toString('utf8')) as unknown;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BusUnavailableError(subject, 'timeout')), opts.timeoutMs);
    });
    try {
      const reply = await Promise.race([withMessageSpan(`serve ${subject}`, 'server', headers, () => target.handler(payload, headers)), timeout]);
      // Like NATS, a reply over the limit never arrives (here the caller learns at once).
      let bytes: Uint8Array;
      try {
        bytes = encodeMessage(subject, reply, this.maxPayload);
      } catch (err) {
        throw new BusUnavailableError(subject, (err as Error).message);
      }
      return JSON.parse(Buffer.from(bytes).toString('utf8')) as unknown;
    } finally {
      clearTimeout(timer);
    }
  }

  async serve(subject: string, queue: string, handler: (data: unknown, headers: MsgHeaders) => Promise<unknown>): Promise<Stoppable> {
    const entry = { queue, handler };
    const list = this.servers.get(subject) ?? [];
    list.push(entry);
    this.servers.set(subject, list);
    return {
      stop: async () => {
        const current = this.servers.get(subject) ?? [];
        this.servers.set(subject, current.filter((e) => e !== entry));
      },
    };
  }

  async publish(subject: string, data: unknown, opts: { msgId: string; headers?: MsgHeaders }): Promise<void> {
    if (this.closed) throw new BusUnavailableError(subject, 'bus closed');
    const kind: StreamKind | null = subject.startsWith(`${this.namespace}.evt.`) ? 'events' : subject.startsWith(`${this.namespace}.cmd.`) ? 'commands' : null;
    if (!kind) throw new Error(`no stream captures subject ${subject}`);
    const now = Date.now();
    for (const [id, at] of this.dedupe) if (now - at > DUPLICATE_WINDOW_MS) this.dedupe.delete(id);
    if (this.dedupe.has(opts.msgId)) return;
    const encoded = encodeMessage(subject, data, this.maxPayload);
    this.dedupe.set(opts.msgId, now);
    const headers = injectTrace({ ...opts.headers, 'nats-msg-id': opts.msgId });
    this.streams[kind].push({ seq: ++this.seq, subject, payload: Buffer.from(encoded).toString('utf8'), headers });
    for (const wake of this.wakers) wake();
  }

  async consume(spec: ConsumerSpec): Promise<Stoppable> {
    const key = `${spec.stream}/${spec.durable}`;
    let state = this.durables.get(key);
    if (!state) {
      state = { cursor: 0, pending: new Map() };
      this.durables.set(key, state);
    }
    const durable = state;
    const ackWait = spec.ackWaitMs ?? DEFAULT_ACK_WAIT_MS;
    const maxDeliver = spec.maxDeliver ?? -1;
    const gate = new Semaphore(spec.concurrency ?? 4);
    let running = true;
    let wake: () => void = () => undefined;
    const waker = () => wake();
    this.wakers.add(waker);

    const loop = (async () => {
      const stream = this.streams[spec.stream];
      while (running && !this.closed) {
        const now = Date.now();
        const due = dueMessages(stream, durable, spec.filter, maxDeliver, now);
        for (const m of due) {
          await gate.acquire();
          if (!running) {
            gate.release();
            break;
          }
          void deliver(spec, durable, m, { ackWait, maxDeliver }).finally(() => gate.release());
        }
        const nextRedelivery = Math.min(...[...durable.pending.values()].map((p) => p.redeliverAt), now + 1000);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.max(5, nextRedelivery - Date.now()));
          wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
      }
    })();

    return {
      stop: async () => {
        running = false;
        wake();
        this.wakers.delete(waker);
        await loop;
        await gate.idle();
      },
    };
  }

  async kv(bucket: string, opts: KvOptions = {}): Promise<KvStore> {
    let b = this.buckets.get(bucket);
    if (!b) {
      b = { ttlMs: opts.ttlMs, revision: 0, entries: new Map() };
      this.buckets.set(bucket, b);
    }
    const store = b;
    const live = (key: string) => {
      const e = store.entries.get(key);
      if (e && store.ttlMs && Date.now() - e.at > store.ttlMs) {
        store.entries.delete(key);
        return undefined;
      }
      return e;
    };
    const write = (key: string, value: string) => {
      const revision = ++store.revision;
      store.entries.set(key, { value, revision, at: Date.now() });
      return revision;
    };
    const guard = () => {
      if (this.closed) throw new BusUnavailableError(bucket, 'bus closed');
    };
    const get = async (key: string) => {
      guard();
      const e = live(key);
      return e ? { value: e.value, revision: e.revision } : null;
    };
    return {
      get,
      // One copy: what it holds is the latest.
      getLatest: get,
      async create(key, value) {
        guard();
        if (live(key)) throw new KvConflictError(key);
        return write(key, value);
      },
      async update(key, value, revision) {
        guard();
        const e = live(key);
        if (!e || e.revision !== revision) throw new KvConflictError(key);
        return write(key, value);
      },
      async put(key, value) {
        guard();
        return write(key, value);
      },
      async delete(key) {
        guard();
        store.entries.delete(key);
      },
      async keys() {
        guard();
        return [...store.entries.keys()].filter((k) => live(k) !== undefined);
      },
    };
  }

  notify(subject: string, data: unknown): void {
    if (this.closed) return;
    const payload = Buffer.from(encodeMessage(subject, data, this.maxPayload)).toString('utf8');
    // Delivered later, as over a socket: a notifier never runs its listeners' code in its own turn.
    setImmediate(() => {
      for (const l of this.listeners) {
        if (!subjectMatches(l.subject, subject)) continue;
        try {
          l.handler(JSON.parse(payload), subject);
        } catch {
          // A listener's failure is its own (NATS core delivery does not report it either).
        }
      }
    });
  }

  async listen(subject: string, handler: (data: unknown, subject: string) => void): Promise<Stoppable> {
    const entry = { subject, handler };
    this.listeners.add(entry);
    return { stop: async () => void this.listeners.delete(entry) };
  }

  /** One process, no servers: nothing is ever lost. */
  onServerLost(): () => void {
    return () => undefined;
  }

  async healthy(): Promise<boolean> {
    return !this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.uncollect();
    for (const wake of this.wakers) wake();
  }
}

/**
 * The messages of `stream` due to the durable now: those whose redelivery has come (and that may be
 * delivered again), then the new ones its filter takes, which the cursor moves past and which are
 * pending from then on.
 */
function dueMessages(stream: StoredMessage[], durable: DurableState, filter: string, maxDeliver: number, now: number): StoredMessage[] {
  const due: StoredMessage[] = [];
  for (const [seq, p] of durable.pending) {
    if (p.redeliverAt <= now && (maxDeliver <= 0 || p.deliveries < maxDeliver)) {
      const m = stream.find((s) => s.seq === seq);
      if (m) due.push(m);
      else durable.pending.delete(seq);
    }
  }
  for (const m of stream) {
    if (m.seq <= durable.cursor) continue;
    durable.cursor = m.seq;
    if (!subjectMatches(filter, m.subject)) continue;
    durable.pending.set(m.seq, { deliveries: 0, redeliverAt: 0 });
    due.push(m);
  }
  return due;
}

/** One delivery of a pending message to the consumer's handler, and its outcome kept on the durable. */
async function deliver(spec: ConsumerSpec, durable: DurableState, m: StoredMessage, limits: { ackWait: number; maxDeliver: number }): Promise<void> {
  const { ackWait, maxDeliver } = limits;
  const p = durable.pending.get(m.seq)!;
  p.deliveries++;
  // Like JetStream, a delivery not acked within the ack wait is delivered again, even while the
  // first handler is still running.
  p.redeliverAt = Date.now() + ackWait;
  const delivery = p.deliveries;
  const headers = { ...m.headers };
  let outcome;
  try {
    outcome = await withMessageSpan(`consume ${m.subject}`, 'consumer', headers, () =>
      spec.handler({ subject: m.subject, data: JSON.parse(m.payload), headers, deliveryCount: p.deliveries, msgId: headers['nats-msg-id'] }),
    );
  } catch {
    outcome = { type: 'nak' as const, delayMs: Math.min(30_000, 250 * 2 ** Math.min(p.deliveries, 7)) };
  }
  if (outcome.type === 'ack' || outcome.type === 'term') durable.pending.delete(m.seq);
  else if (p.deliveries === delivery) p.redeliverAt = Date.now() + outcome.delayMs;
  if (maxDeliver > 0 && p.deliveries >= maxDeliver && durable.pending.get(m.seq) === p) durable.pending.delete(m.seq);
}
