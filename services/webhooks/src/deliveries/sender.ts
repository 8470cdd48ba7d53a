import http from 'node:http';
import https from 'node:https';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { AttemptErrorClass } from '@aex/contracts';
import { addressProblem, normalizeHost } from '@aex/platform';
import type { AttemptResult } from '../db/schema.js';

export interface SenderOptions {
  timeoutMs: number;
  /** D14.5: `WEBHOOK_ALLOW_PRIVATE_NETWORKS` — plain http and any address (local use only). */
  allowPrivateNetworks: boolean;
  /** Sockets kept per receiver origin (keep-alive); more requests to one origin wait for one. */
  socketsPerOrigin?: number;
  /** Sockets open at once across all receivers. */
  totalSockets?: number;
}

/** How much of a receiver's answer is read: the excerpt kept, and the most read before giving up. */
const EXCERPT_BYTES = 1024;

class RefusedAddress extends Error {
  constructor(readonly address: string, problem: string) {
    super(`the receiver's address ${address} is a ${problem} address`);
  }
}
class Timeout extends Error {}

/**
 * Sends webhook requests (D14.3–D14.5). The address actually connected to is checked on every
 * connection — the DNS answer of this attempt, not the one seen at registration — unless private
 * networks are allowed; redirects are never followed (Node's client does not); the answer is read up
 * to an excerpt and the rest dropped, so no receiver can hold memory; each attempt has one deadline
 * for everything (connect, TLS, request, answer). Sockets are pooled per origin with a bound per
 * origin and overall, so one slow receiver cannot take every socket.
 */
export class WebhookSender {
  private readonly http: http.Agent;
  private readonly https: https.Agent;

  constructor(private readonly opts: SenderOptions) {
    const pool = { keepAlive: true, maxSockets: opts.socketsPerOrigin ?? 16, maxTotalSockets: opts.totalSockets ?? 512, maxFreeSockets: 4, scheduling: 'lifo' as const };
    this.http = new http.Agent(pool);
    this.https = new https.Agent(pool);
  }

  close(): void {
    this.http.destroy();
    this.https.destroy();
  }

  /** POSTs `body` with `headers` to `url` and reports what happened; never throws. */
  async post(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const started = performance.now();
    const result = (r: Omit<AttemptResult, 'latencyMs'>): AttemptResult => ({ ...r, latencyMs: Math.round(performance.now() - started) });
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return result({ ok: false, address: null, statusCode: null, errorClass: 'connection', error: 'the webhook URL is not a valid URL', responseExcerpt: null });
    }
    const secure = target.protocol === 'https:';
    if (!secure && (target.protocol !== 'http:' || !this.opts.allowPrivateNetworks)) {
      return result({ ok: false, address: null, statusCode: null, errorClass: 'refused_address', error: 'webhook URLs must use https', responseExcerpt: null });
    }
    const host = normalizeHost(target.hostname);
    // An IP literal is connected to without a lookup: checked here.
    if (isIP(host) && !this.opts.allowPrivateNetworks) {
      const problem = addressProblem(host);
      if (problem) return result({ ok: false, address: host, statusCode: null, errorClass: 'refused_address', error: new RefusedAddress(host, problem).message, responseExcerpt: null });
    }
    return new Promise<AttemptResult>((resolve) => {
      let address: string | null = null;
      let settled = false;
      const finish = (r: Omit<AttemptResult, 'latencyMs' | 'address'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve(result({ ...r, address }));
      };
      const fail = (err: unknown) => finish({ ok: false, statusCode: null, errorClass: classify(err), error: describe(err), responseExcerpt: null });
      const req = (secure ? https : http).request(target, {
        method: 'POST',
        agent: secure ? this.https : this.http,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'agent-exchange-webhooks/1', ...headers },
        lookup: this.lookup,
      });
      const deadline = setTimeout(() => req.destroy(new Timeout(`no answer within ${this.opts.timeoutMs} ms`)), this.opts.timeoutMs);
      req.on('socket', (socket) => {
        const seen = () => (address = socket.remoteAddress ?? address);
        if (socket.remoteAddress) seen();
        else socket.once('connect', seen);
      });
      req.on('error', fail);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          const statusCode = res.statusCode ?? 0;
          const ok = statusCode >= 200 && statusCode < 300;
          const excerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
          finish({ ok, statusCode, errorClass: ok ? null : 'http_status', error: ok ? null : `the receiver answered ${statusCode}${statusCode >= 300 && statusCode < 400 ? ' (redirects are not followed)' : ''}`, responseExcerpt: excerpt });
        };
        res.on('data', (chunk: Buffer) => {
          if (size < EXCERPT_BYTES) chunks.push(chunk);
          size += chunk.length;
          // Enough read: the rest is not waited for (the socket is dropped, not reused).
          if (size >= EXCERPT_BYTES) {
            done();
            res.destroy();
          }
        });
        res.on('end', done);
        res.on('error', (err) => (size >= EXCERPT_BYTES ? undefined : fail(err)));
      });
      req.end(body);
    });
  }

  /** D14.5 at connect time: every address the name resolves to now must be public. */
  private readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return (callback as (e: Error) => void)(err);
      if (!this.opts.allowPrivateNetworks) {
        for (const a of addresses) {
          const problem = addressProblem(a.address);
          if (problem) return (callback as (e: Error) => void)(new RefusedAddress(a.address, problem));
        }
      }
      if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0]!;
      (callback as (e: null, a: string, f: number) => void)(null, first.address, first.family);
    });
  };
}

function classify(err: unknown): AttemptErrorClass {
  if (err instanceof RefusedAddress) return 'refused_address';
  if (err instanceof Timeout) return 'timeout';
  const code = (err as { code?: string }).code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA') return 'dns';
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code.includes('CERT') || code === 'DEPTH_ZERO_SELF_SIGNED_CERT' || code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE') return 'tls';
  return 'connection';
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return (e.code ? `${e.code}: ` : '') + (e.message ?? String(err)).slice(0, 300);
}
