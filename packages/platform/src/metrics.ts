/**
 * Prometheus metrics, written in the text exposition format (version 0.0.4) that Prometheus and
 * every compatible scraper read. One registry per process (`metrics`): the gateway serves it at
 * `/metrics`, a service run on its own on its health port (docs/metrics.md). Counters and
 * histograms are kept in memory as things happen; gauges of state held elsewhere (the database, the
 * stream) are read by collectors when scraped, each within a time bound, so a scrape never waits on
 * a stalled dependency.
 */

import { bearerToken, sameSecret } from './secrets.js';

export type Labels = Record<string, string>;

/** A collector's part of a scrape: it sets gauges from where the state lives. */
export type Collector = () => Promise<void>;

/** A collector's reading answers within this time or is left out of the scrape (its gauges keep their last values). */
const COLLECT_MS = 1_000;

/** Seconds: HTTP requests, saga steps and webhook attempts all fall in these. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function labelText(labels: Labels, extra?: [string, string]): string {
  const pairs = Object.entries(labels);
  if (extra) pairs.push(extra);
  return pairs.length === 0 ? '' : `{${pairs.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
}

/** A series' key: its label values in the metric's label order (names outside it: sorted after). */
function keyOf(labelNames: readonly string[], labels: Labels): string {
  let key = '';
  for (const n of labelNames) key += `${labels[n]}\u0000`;
  if (Object.keys(labels).length === labelNames.length) return key;
  return key + JSON.stringify(Object.entries(labels).filter(([k]) => !labelNames.includes(k)).sort(([a], [b]) => a.localeCompare(b)));
}

const formatValue = (v: number) => (Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v));

abstract class Metric<S> {
  protected readonly series = new Map<string, { labels: Labels; state: S }>();

  constructor(readonly name: string, readonly help: string, readonly type: 'counter' | 'gauge' | 'histogram', readonly labelNames: readonly string[]) {
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw new Error(`invalid metric name ${name}`);
  }

  protected stateOf(labels: Labels, initial: () => S): S {
    const key = keyOf(this.labelNames, labels);
    let s = this.series.get(key);
    if (!s) {
      for (const n of this.labelNames) if (labels[n] === undefined) throw new Error(`metric ${this.name}: label ${n} missing`);
      s = { labels: { ...labels }, state: initial() };
      this.series.set(key, s);
    }
    return s.state;
  }

  /** The metric's lines of the exposition, its HELP and TYPE first. */
  render(): string[] {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`];
    for (const { labels, state } of this.series.values()) lines.push(...this.sample(labels, state));
    return lines;
  }

  protected abstract sample(labels: Labels, state: S): string[];
}

export class Counter extends Metric<{ value: number }> {
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    super(name, help, 'counter', labelNames);
  }

  inc(labels: Labels = {}, by = 1): void {
    if (by < 0) throw new Error(`counter ${this.name} cannot go down`);
    this.stateOf(labels, () => ({ value: 0 })).value += by;
  }

  /** One series, found once: what a hot path that always counts the same labels keeps. */
  bind(labels: Labels): { inc(by?: number): void } {
    const s = this.stateOf(labels, () => ({ value: 0 }));
    return { inc: (by = 1) => void (s.value += by) };
  }

  /** A total kept elsewhere and only ever growing (a ledger's sum), as read by a collector. */
  setTotal(labels: Labels, total: number): void {
    this.stateOf(labels, () => ({ value: 0 })).value = total;
  }

  protected sample(labels: Labels, s: { value: number }): string[] {
    return [`${this.name}${labelText(labels)} ${formatValue(s.value)}`];
  }
}

export class Gauge extends Metric<{ value: number }> {
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    super(name, help, 'gauge', labelNames);
  }

  set(labels: Labels, value: number): void {
    this.stateOf(labels, () => ({ value: 0 })).value = value;
  }

  /** Forgets a series (a consumer or a service no longer in this process). */
  remove(labels: Labels): void {
    this.series.delete(keyOf(this.labelNames, labels));
  }

  protected sample(labels: Labels, s: { value: number }): string[] {
    return [`${this.name}${labelText(labels)} ${formatValue(s.value)}`];
  }
}

interface HistogramState { counts: number[]; sum: number; count: number }

export class Histogram extends Metric<HistogramState> {
  constructor(name: string, help: string, labelNames: readonly string[] = [], readonly buckets: readonly number[] = LATENCY_BUCKETS) {
    super(name, help, 'histogram', labelNames);
  }

  observe(labels: Labels, value: number): void {
    this.record(this.stateOf(labels, () => ({ counts: this.buckets.map(() => 0), sum: 0, count: 0 })), value);
  }

  /** One series, found once (see `Counter.bind`). */
  bind(labels: Labels): { observe(value: number): void } {
    const s = this.stateOf(labels, () => ({ counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    return { observe: (value) => this.record(s, value) };
  }

  private record(s: HistogramState, value: number): void {
    // Buckets are cumulative when written out: only the first bucket that holds the value counts it here.
    const i = this.buckets.findIndex((b) => value <= b);
    if (i >= 0) s.counts[i]!++;
    s.sum += value;
    s.count++;
  }

  protected sample(labels: Labels, s: HistogramState): string[] {
    let cumulative = 0;
    const lines = this.buckets.map((b, i) => `${this.name}_bucket${labelText(labels, ['le', formatValue(b)])} ${(cumulative += s.counts[i]!)}`);
    lines.push(`${this.name}_bucket${labelText(labels, ['le', '+Inf'])} ${s.count}`);
    lines.push(`${this.name}_sum${labelText(labels)} ${formatValue(s.sum)}`, `${this.name}_count${labelText(labels)} ${s.count}`);
    return lines;
  }
}

export class MetricsRegistry {
  private readonly metrics = new Map<string, Counter | Gauge | Histogram>();
  private readonly collectors = new Set<Collector>();

  /** The metric `name`, made on first use: every part of the process that records it shares one. */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.metric(name, () => new Counter(name, help, labelNames), Counter);
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.metric(name, () => new Gauge(name, help, labelNames), Gauge);
  }

  histogram(name: string, help: string, labelNames: readonly string[] = [], buckets?: readonly number[]): Histogram {
    return this.metric(name, () => new Histogram(name, help, labelNames, buckets), Histogram);
  }

  /** Adds a collector run at every scrape; the function returned removes it (a component that stops). */
  collect(collector: Collector): () => void {
    this.collectors.add(collector);
    return () => void this.collectors.delete(collector);
  }

  /** The exposition: the collectors run (each bounded by COLLECT_MS), then every metric. */
  async render(): Promise<string> {
    await Promise.all([...this.collectors].map((c) => bounded(c)));
    const lines: string[] = [];
    for (const m of [...this.metrics.values()].sort((a, b) => a.name.localeCompare(b.name))) lines.push(...m.render());
    return `${lines.join('\n')}\n`;
  }

  private metric<M extends Counter | Gauge | Histogram>(name: string, make: () => M, kind: abstract new (...args: never[]) => M): M {
    const existing = this.metrics.get(name);
    if (existing) {
      if (!(existing instanceof kind)) throw new Error(`metric ${name} is already a ${existing.type}`);
      return existing as M;
    }
    const m = make();
    this.metrics.set(name, m);
    return m;
  }
}

async function bounded(collector: Collector): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, COLLECT_MS);
    timer.unref();
  });
  try {
    await Promise.race([collector().catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The process's registry. */
export const metrics = new MetricsRegistry();

/** The content type of the exposition. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * Whether a scrape may read the metrics: always when no METRICS_TOKEN is configured, else only with
 * `Authorization: Bearer <METRICS_TOKEN>` (compared in constant time).
 */
export function metricsAuthorized(token: string | undefined, authorization: string | undefined): boolean {
  if (!token) return true;
  const given = bearerToken(authorization);
  return given !== undefined && sameSecret(given, token);
}

/**
 * The exchange's metrics, each defined once here (docs/metrics.md lists them; the Helm chart's
 * Grafana dashboard queries them). Names follow Prometheus conventions: a unit suffix, `_total` on
 * counters.
 */
export const exchangeMetrics = {
  httpRequests: () => metrics.counter('aex_http_requests_total', 'Requests the gateway answered, by route template, method and status', ['route', 'method', 'status']),
  httpDuration: () => metrics.histogram('aex_http_request_duration_seconds', 'Time the gateway took to answer, by route template and method', ['route', 'method']),
  sagaStep: () => metrics.histogram('aex_saga_step_seconds', 'From a saga command or event being committed to its outbox to its consumer\'s step being committed, by consumer', ['consumer']),
  messagesProcessed: () => metrics.counter('aex_messages_processed_total', 'Messages of the bus each consumer handled: applied, repeat (already applied), deferred (came early), retry, rejected', ['consumer', 'outcome']),
  eventsPublished: () => metrics.counter('aex_events_published_total', 'Events and commands the outbox relays published, by type (transactions.transaction.settled counts settled purchases)', ['type']),
  outboxPending: () => metrics.gauge('aex_outbox_pending', 'Messages written to a service\'s outbox and not yet published', ['service']),
  outboxOldest: () => metrics.gauge('aex_outbox_oldest_seconds', 'Age of the oldest message not yet published from a service\'s outbox (0 when none)', ['service']),
  consumerPending: () => metrics.gauge('aex_jetstream_consumer_pending', 'Messages of the stream a durable consumer has not yet been given (its lag)', ['stream', 'consumer']),
  consumerAckPending: () => metrics.gauge('aex_jetstream_consumer_ack_pending', 'Messages given to a durable consumer and not yet acknowledged', ['stream', 'consumer']),
  webhookAttempts: () => metrics.counter('aex_webhook_attempts_total', 'Webhook delivery attempts by outcome: delivered, failed (tried again later) or dead_lettered', ['outcome']),
  webhookAttemptDuration: () => metrics.histogram('aex_webhook_attempt_duration_seconds', 'Time of one webhook delivery attempt, to the receiver\'s answer or the failure'),
  timersDue: () => metrics.gauge('aex_timers_due', 'Durable timers due and not yet fired (deadlines, offer and approval expiries, review windows)', ['service']),
  timersFired: () => metrics.counter('aex_timers_fired_total', 'Durable timers fired, by kind', ['service', 'kind']),
  moneyHeld: () => metrics.gauge('aex_money_held_cents', 'Exchange-wide: cents held in escrow for purchases in progress (read from the ledger\'s wallets; the same on every replica)'),
  moneySettled: () => metrics.counter('aex_money_settled_cents_total', 'Exchange-wide: cents settled to providers, before the platform fee (read from the wallets; the same on every replica)'),
  sessionCalls: () => metrics.counter('aex_session_calls_total', 'Calls made in prepaid sessions (D17.5), each reserving its price from its session\'s budget'),
  sessionReserved: () => metrics.counter('aex_session_reserved_cents_total', 'Cents reserved from prepaid sessions\' budgets by their calls (D17.5)'),
  sessionReturned: () => metrics.counter('aex_session_returned_cents_total', 'Cents of prepaid sessions\' budgets returned unspent when they closed (D17.6)'),
  platformFees: () => metrics.counter('aex_platform_fees_cents_total', 'Exchange-wide: platform fees earned, in cents (the platform wallet; the same on every replica)'),
};

/** The `service` a component's logger is bound to (each service's logger is a child naming it), for its metrics' label. */
export function serviceOf(logger: { bindings?: () => Record<string, unknown> }): string {
  const bound = logger.bindings?.();
  return typeof bound?.service === 'string' ? bound.service : typeof bound?.app === 'string' ? bound.app : 'unknown';
}
