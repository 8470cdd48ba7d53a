import { randomUUID } from 'node:crypto';
import { ExchangeClient, type Outcome } from '@agent-exchange/client';
import { routes } from '@aex/gateway';
import type { Fault, ServiceName } from './chaos-deployment.js';

// Every request of the chaos test as it went: which gateway, which route, when, and what it answered.
// The gateways' clients send through a recording fetch; a 5xx (or no answer) is then judged against
// the faults of its moment: excused only when it is its own service's outage, or the database's.

export interface Sent {
  gateway: number;
  method: string;
  path: string;
  /** HTTP status; 0 when no answer came (refused, reset, or the client's timeout). */
  status: number;
  start: number;
  end: number;
  /** A 5xx's error code and message: what a failure is reported with. */
  error?: string;
}

/** The routes' owners: the service whose operation answers each route (the gateway's own otherwise). */
const OWNERS = routes.map((r) => ({
  method: r.method,
  pattern: new RegExp(`^${r.url.replace(/:[^/]+/g, '[^/]+')}$`),
  service: (r.op?.service ?? 'gateway') as ServiceName,
}));

export function ownerOf(method: string, path: string): ServiceName {
  const bare = path.split('?')[0]!;
  return OWNERS.find((o) => o.method === method && o.pattern.test(bare))?.service ?? 'gateway';
}

/** How long after a fault is healed its answers still count as its own (a restarted replica joining). */
export const GRACE_MS = 2_000;

export type Verdict = { ok: true } | { ok: false; excused: string } | { ok: false; failure: string };

/**
 * Judges one answer against the faults: fine below 500; a 5xx or no answer is excused when, during the
 * request, its route's own service had no replica left — or the service its 503 names as the one
 * that did not answer (identity authenticating a key no cache holds) — Postgres (every service's
 * store) was frozen, or the gateway it was sent to was killed. A NATS node or one replica of a
 * service down excuses nothing: the other nodes and the other replica are there to answer.
 */
export function judge(s: Sent, faults: readonly Fault[]): Verdict {
  if (s.status > 0 && s.status < 500) return { ok: true };
  const during = faults.filter((f) => f.from <= s.end && (f.to === null || f.to + GRACE_MS >= s.start));
  const owner = ownerOf(s.method, s.path);
  const silent = /The (\w+) service did not answer in time/.exec(s.error ?? '')?.[1];
  const own = during.find((f) => f.kind === 'postgres'
    || (f.kind === 'service' && (f.service === owner || f.service === silent))
    || (f.kind === 'replica' && f.service === 'gateway' && f.replica === s.gateway));
  const what = `${s.status === 0 ? 'no answer' : s.status} ${s.method} ${s.path.replace(/[0-9a-f-]{36}/g, ':id')} (${owner}) via gateway#${s.gateway}${s.error ? ` [${s.error}]` : ''}`;
  if (own) return { ok: false, excused: `${what} during ${own.label}` };
  return { ok: false, failure: `${what}${during.length ? ` during ${during.map((f) => f.label).join(' + ')}` : ' with no fault'}` };
}

/** Counts of a list of strings, most frequent first: what a report prints. */
export function tally(items: readonly string[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const i of items) counts.set(i, (counts.get(i) ?? 0) + 1);
  return Object.fromEntries([...counts].sort((a, b) => b[1] - a[1]));
}

export class Traffic {
  readonly sent: Sent[] = [];
  /** Every keyed request's final answers (each time its outcome was known): one outcome each (D5.5). */
  readonly keys = new Map<string, { what: string; answers: string[] }>();
  /** What the checks of the flows found wrong (races, answers contradicting the state). */
  readonly violations: string[] = [];

  constructor(private readonly gateways: string[]) {}

  private recording(gateway: number): typeof fetch {
    return async (input, init) => {
      const url = new URL(String(input instanceof Request ? input.url : input));
      const s: Sent = { gateway, method: init?.method ?? 'GET', path: url.pathname, status: 0, start: Date.now(), end: 0 };
      this.sent.push(s);
      try {
        const res = await fetch(input, init);
        s.status = res.status;
        if (res.status >= 500) {
          s.error = (await res.clone().text().catch(() => '')).slice(0, 300);
        }
        return res;
      } finally {
        s.end = Date.now();
      }
    };
  }

  /** A client of gateway `g` (both gateways serve everyone, as behind a load balancer). */
  client(g: number, creds: Creds = {}): ExchangeClient {
    return new ExchangeClient({
      baseUrl: this.gateways[g]!,
      fetch: this.recording(g),
      timeoutMs: 30_000,
      ...(creds.apiKey ? { apiKey: creds.apiKey } : {}),
      ...(creds.secretKey ? { signingSecretKey: creds.secretKey } : {}),
      ...(creds.adminToken ? { adminToken: creds.adminToken } : {}),
    });
  }

  /**
   * Sends a keyed request until its outcome is known, as a client does (D5.5): the same key again,
   * on the other gateway, while the answer is none, 429, 5xx or "key in use". Every attempt is
   * recorded; the final answer is kept with the key. `send` gets the clients of one gateway (`via`).
   */
  async keyed<T>(what: string, send: (via: Via, key: string) => Promise<Outcome<T>>, opts: { key?: string; gateway?: number; boundMs?: number } = {}): Promise<Outcome<T>> {
    const key = opts.key ?? randomUUID();
    const deadline = Date.now() + (opts.boundMs ?? 90_000);
    for (let g = opts.gateway ?? Math.floor(Math.random() * this.gateways.length); ; g = (g + 1) % this.gateways.length) {
      const o = await send((creds) => this.client(g, creds), key);
      const retry = o.status === 0 || o.status === 429 || o.status >= 500 || (!o.ok && o.error.code === 'IDEMPOTENCY_KEY_IN_USE');
      if (!retry) {
        const entry = this.keys.get(key) ?? { what, answers: [] };
        entry.answers.push(outcomeOf(o));
        this.keys.set(key, entry);
        return o;
      }
      if (Date.now() > deadline) return o;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** A request sent once, to either gateway: a write without a key, whose client learns an unknown outcome itself. */
  async once<T>(send: (via: Via) => Promise<Outcome<T>>): Promise<Outcome<T>> {
    return send((creds) => this.client(Math.floor(Math.random() * this.gateways.length), creds));
  }

  /** A read repeated (on the other gateway) until it answers below 500, or `boundMs` passes. */
  async read<T>(read: (via: Via) => Promise<Outcome<T>>, boundMs = 60_000): Promise<Outcome<T>> {
    const deadline = Date.now() + boundMs;
    for (let g = Math.floor(Math.random() * this.gateways.length); ; g = (g + 1) % this.gateways.length) {
      const o = await read((creds) => this.client(g, creds));
      if ((o.status > 0 && o.status < 500 && o.status !== 429) || Date.now() > deadline) return o;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  violation(text: string): void {
    this.violations.push(text);
  }
}

/** Credentials of a party: an agent's key (and signing key), or the operator's token. */
export interface Creds { apiKey?: string; secretKey?: string; adminToken?: string }
/** The clients of one gateway. */
export type Via = (creds: Creds) => ExchangeClient;

/** What identifies an outcome: its status, error code or the id of what it made (a session, a payout, a resource). */
export function outcomeOf(o: Outcome<unknown>): string {
  if (!o.ok) return `${o.status} ${o.error?.code ?? ''}`;
  const d = o.data as Record<string, unknown> | null;
  const id = d?.sessionId ?? d?.payoutId ?? d?.id ?? '';
  // 200 and 202 are one outcome (D9.9: the saga finishes on its own); another id or an error is not.
  return `ok ${String(id)}`;
}
