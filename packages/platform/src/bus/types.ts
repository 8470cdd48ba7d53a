/**
 * The bus contract both implementations honour (docs/messaging.md, README "Run it, test it"):
 * request/reply with queue groups, durable at-least-once streams with publish dedupe by message id,
 * ack / nak(delay) / term, and KV buckets with compare-and-set and a time to live.
 * `bus.contract.int.test.ts` runs one suite against JetStream and against the in-process bus.
 */
export type MsgHeaders = Record<string, string>;

export interface BusMessage {
  subject: string;
  data: unknown;
  headers: MsgHeaders;
  /** 1 on first delivery. */
  deliveryCount: number;
  msgId: string | undefined;
}

export type Outcome = { type: 'ack' } | { type: 'nak'; delayMs: number } | { type: 'term'; reason: string };
/** How long the events and commands streams keep a message (`max_age`): none older is delivered again. */
export const STREAM_MAX_AGE_MS = 7 * 86_400_000;

export const ack = (): Outcome => ({ type: 'ack' });
export const nak = (delayMs: number): Outcome => ({ type: 'nak', delayMs });
export const term = (reason: string): Outcome => ({ type: 'term', reason });

export type StreamKind = 'events' | 'commands';

export interface ConsumerSpec {
  stream: StreamKind;
  /** Durable name: one per (service, purpose); replicas sharing it share the work. */
  durable: string;
  /** One subject filter (NATS 2.9 has no filter_subjects). */
  filter: string;
  handler: (msg: BusMessage) => Promise<Outcome>;
  concurrency?: number;
  /**
   * How long a delivered, unacknowledged message waits before redelivery — what a consumer that
   * died mid-message costs. Handlers are short database transactions, so the default is 10 s.
   */
  ackWaitMs?: number;
  maxDeliver?: number;
}

export const DEFAULT_ACK_WAIT_MS = 10_000;

export interface KvEntry {
  value: string;
  revision: number;
}

export interface KvStore {
  get(key: string): Promise<KvEntry | null>;
  /**
   * The key's last value as the bucket's leader has it, whatever the bucket's `reads`: for a reader
   * of a bucket read from any copy whose compare-and-set keeps failing on a copy that lags behind.
   */
  getLatest(key: string): Promise<KvEntry | null>;
  /** Creates the key; KvConflictError when it already holds a value. */
  create(key: string, value: string): Promise<number>;
  /** Compare-and-set on the revision; KvConflictError when the key changed since. */
  update(key: string, value: string, revision: number): Promise<number>;
  put(key: string, value: string): Promise<number>;
  delete(key: string): Promise<void>;
  /** The keys that hold a value now (deleted and expired ones left out). */
  keys(): Promise<string[]>;
}

export interface Stoppable {
  stop(): Promise<void>;
}

export interface Bus {
  readonly namespace: string;
  /** Which implementation: shown in logs and /readyz. */
  readonly kind: 'jetstream' | 'memory';
  /** The largest message the bus carries, in bytes (NATS `max_payload`); larger ones are refused. */
  readonly maxPayload: number;
  /** Rejects with PayloadTooLargeError when `data` encodes to more than `maxPayload`. */
  request(subject: string, data: unknown, opts: { timeoutMs: number; headers?: MsgHeaders }): Promise<unknown>;
  /** The handler's result is sent as JSON, or as is when it already is bytes (an encoded reply). */
  serve(subject: string, queue: string, handler: (data: unknown, headers: MsgHeaders) => Promise<unknown>): Promise<Stoppable>;
  /** Durable publish to the events or commands stream; a repeated msgId inside the window is dropped. */
  publish(subject: string, data: unknown, opts: { msgId: string; headers?: MsgHeaders }): Promise<void>;
  consume(spec: ConsumerSpec): Promise<Stoppable>;
  /**
   * A notice to every listener of `subject`, on every replica: at most once, kept nowhere (NATS core
   * publish). For hints that save a wait, never for something that must arrive.
   */
  notify(subject: string, data: unknown): void;
  /** Listens for notices on `subject` (NATS wildcards `*` and `>`); each listener gets every one. */
  listen(subject: string, handler: (data: unknown, subject: string) => void): Promise<Stoppable>;
  kv(bucket: string, opts?: KvOptions): Promise<KvStore>;
  /** True while the bus can reach its backend. */
  healthy(): Promise<boolean>;
  /**
   * Calls `listener` whenever a server was lost — this connection's own, or another node of the
   * cluster: requests in flight through it may be gone, and a write waiting for its answer is
   * better asked again now (rpc-attempts.ts). Returns the way to stop listening. (A bus without
   * servers never calls it.)
   */
  onServerLost(listener: () => void): () => void;
  close(): Promise<void>;
}

/** How a KV bucket is opened. */
export interface KvOptions {
  /** Entries older than this are removed (none: kept until deleted). */
  ttlMs?: number;
  /**
   * `leader` (the default): a read sees every write acknowledged before it, and fails while the
   * bucket elects a leader. `any`: any copy answers, possibly a few writes behind, and reads go on
   * through an election — only for a bucket whose readers decide nothing on a stale value (each write
   * is a compare-and-set that a stale read merely makes fail and retry).
   */
  reads?: 'leader' | 'any';
}

export class KvConflictError extends Error {
  constructor(key: string) {
    super(`KV key "${key}" changed concurrently`);
    this.name = 'KvConflictError';
  }
}

/** No replica answered in time, or none is listening. */
export class BusUnavailableError extends Error {
  /** NATS said at once that nobody listens on the subject: the request reached no replica. */
  readonly noResponders: boolean;

  constructor(subject: string, reason: string) {
    super(`No answer on ${subject}: ${reason}`);
    this.name = 'BusUnavailableError';
    this.noResponders = reason === NO_RESPONDERS;
  }
}

/** The reason a request gives when NATS answered that no subscription matched it (status 503). */
export const NO_RESPONDERS = 'no responders';

/** A message larger than the bus carries: refused before it is sent, never dropped silently. */
export class PayloadTooLargeError extends Error {
  constructor(subject: string, readonly bytes: number, readonly limit: number) {
    super(`Message on ${subject} is ${bytes} bytes; the bus carries at most ${limit}`);
    this.name = 'PayloadTooLargeError';
  }
}

/** NATS's default `max_payload`; the in-process bus keeps the same limit so both behave alike. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** JSON bytes of a value (or the bytes themselves), refused above `limit`. */
export function encodeMessage(subject: string, data: unknown, limit: number): Uint8Array {
  const bytes = data instanceof Uint8Array ? data : Buffer.from(JSON.stringify(data ?? null), 'utf8');
  if (bytes.length > limit) throw new PayloadTooLargeError(subject, bytes.length, limit);
  return bytes;
}

/** NATS subject matching with `*` (one token) and `>` (the rest). */
export function subjectMatches(filter: string, subject: string): boolean {
  const f = filter.split('.');
  const s = subject.split('.');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (f[i] !== '*' && f[i] !== s[i]) return false;
  }
  return f.length === s.length;
}

/** Bounded concurrency for consumers. */
export class Semaphore {
  private waiting: Array<() => void> = [];
  private active = 0;
  constructor(private readonly limit: number) {}
  async acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  /** Whether every place is taken: work is under way at full concurrency. */
  get saturated(): boolean {
    return this.active >= this.limit;
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }
  async idle(): Promise<void> {
    while (this.active > 0) await new Promise((r) => setTimeout(r, 5));
  }
}
