import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_ENCODER_DIMENSIONS, type Logger } from '@aex/platform';
import { readEmbeddingsAnswer, retryAfterMs } from './embeddings-response.js';
import type { SentenceEncoder } from './sentence-encoder.js';

export interface OpenAIEncoderOptions {
  /** The endpoint's base URL: requests go to `<url>/embeddings`. */
  url: string;
  model: string;
  /** Sent as `Authorization: Bearer …`; kept in a private field, so no log of the encoder shows it. */
  apiKey?: string | undefined;
  /** Asked for as `dimensions`; unset, the model's own (learned from its first answer). */
  dimensions?: number | undefined;
  batchSize: number;
  timeoutMs: number;
}

/** The model's name as stored with its embeddings (D22.1): `openai:<model>`, or `openai:<model>@<dims>` when dimensions are asked for. */
export const openaiModelName = (model: string, dimensions?: number) => `openai:${model}${dimensions ? `@${dimensions}` : ''}`;

/** Wait before the one retry of a 429 or 5xx that gives no Retry-After. */
const RETRY_MS = 250;
/** Probes of a failing endpoint: after 1 s, doubling up to a minute (as the builtin worker's restarts). */
const PROBE_MIN_MS = 1000;
const PROBE_MAX_MS = 60_000;
/** Texts are cut here, as the builtin encoder's are: endpoints such as TEI refuse inputs beyond their token limit. */
const MAX_CHARS = 2000;
const PROBE_TEXT = 'health check';
/** Answers about the request's texts rather than the endpoint (bad input, too large, unprocessable). */
const REFUSALS = new Set([400, 413, 422]);

/** The endpoint answered, refusing these texts. */
class TextsRefused extends Error {}

/**
 * D22.1: sentence embeddings from an OpenAI-compatible endpoint (`POST <url>/embeddings` with
 * `{ model, input, dimensions?, encoding_format: 'float' }`), as served by Text Embeddings Inference,
 * Ollama, vLLM, LiteLLM or a hosted API. A larger embedding is sent in batches of `batchSize` texts,
 * one after the other; each request, with its one retry after a 429 or 5xx, must be answered within
 * `timeoutMs`. Answers are checked (`readEmbeddingsAnswer`) and the vectors made unit length.
 *
 * A failing endpoint degrades discovery as a stopped builtin worker does: `problem` says why (the
 * catalog is not ready and discovers warn), the failure is logged once when it starts and once when
 * it ends, and a probe retries in the background (1 s, doubling to a minute) until it answers.
 */
export class OpenAIEmbeddingsEncoder implements SentenceEncoder {
  readonly name: string;
  /** 0 until the first answer when no dimensions were asked for. */
  dims: number;
  problem: string | null = 'the embeddings endpoint has not answered yet';
  readonly #apiKey: string | undefined;
  private readonly endpoint: string;
  private state: 'starting' | 'up' | 'down' = 'starting';
  private probeDelayMs = PROBE_MIN_MS;
  private probeTimer: NodeJS.Timeout | undefined;
  private readonly closing = new AbortController();
  /** The settings but the key (which lives in `#apiKey` only). */
  private readonly options: Omit<OpenAIEncoderOptions, 'apiKey'>;

  constructor({ apiKey, ...options }: OpenAIEncoderOptions, private readonly logger: Logger | null = null) {
    this.options = options;
    this.name = openaiModelName(options.model, options.dimensions);
    this.dims = options.dimensions ?? 0;
    this.#apiKey = apiKey;
    const endpoint = new URL(options.url);
    endpoint.pathname = `${endpoint.pathname.replace(/\/+$/, '')}/embeddings`;
    this.endpoint = endpoint.toString();
  }

  /** Asks the endpoint once (at most `timeoutMs`): up when it answers, else down and probing in the background. */
  async start(): Promise<this> {
    await this.embed([PROBE_TEXT]).catch(() => undefined);
    return this;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.options.batchSize) {
      const batch = texts.slice(i, i + this.options.batchSize).map((t) => t.slice(0, MAX_CHARS));
      let vectors: Float32Array[];
      try {
        vectors = await this.request(batch);
      } catch (err) {
        // An endpoint that answers refuses these texts (too long, say): that call fails, not the encoder.
        if (!(err instanceof TextsRefused && this.state === 'up')) this.down((err as Error).message);
        throw new Error(`sentence encoder: ${(err as Error).message}`);
      }
      this.up();
      out.push(...vectors);
    }
    return out;
  }

  async close(): Promise<void> {
    clearTimeout(this.probeTimer);
    this.closing.abort();
  }

  /** One batch: the request and, after a 429 or 5xx, one retry when its wait ends before the deadline. */
  private async request(texts: string[]): Promise<Float32Array[]> {
    const deadline = Date.now() + this.options.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      const res = await this.post(texts, deadline);
      if (res.ok) return this.read(res, texts.length);
      await res.body?.cancel().catch(() => undefined);
      const retryable = res.status === 429 || res.status >= 500;
      if (REFUSALS.has(res.status)) throw new TextsRefused(`the embeddings endpoint refused the texts (${res.status})`);
      if (attempt > 1 || !retryable) throw new Error(`the embeddings endpoint answered ${res.status}`);
      const wait = retryAfterMs(res.headers.get('retry-after'), Date.now()) ?? RETRY_MS;
      if (Date.now() + wait >= deadline) throw new Error(`the embeddings endpoint answered ${res.status} and asked to wait beyond the timeout`);
      await sleep(wait, undefined, { signal: this.closing.signal });
    }
  }

  private async post(texts: string[], deadline: number): Promise<Response> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    const body = { model: this.options.model, input: texts, encoding_format: 'float', ...(this.options.dimensions ? { dimensions: this.options.dimensions } : {}) };
    try {
      return await fetch(this.endpoint, {
        method: 'POST', headers, body: JSON.stringify(body), redirect: 'error',
        signal: AbortSignal.any([AbortSignal.timeout(Math.max(1, deadline - Date.now())), this.closing.signal]),
      });
    } catch (err) {
      throw new Error(this.failure(err));
    }
  }

  /** The answer's body, bounded in size and time, checked into unit vectors. */
  private async read(res: Response, count: number): Promise<Float32Array[]> {
    const limit = 65_536 + count * (this.dims || MAX_ENCODER_DIMENSIONS) * 32;
    let text: string;
    try {
      text = await readBounded(res, limit);
    } catch (err) {
      throw new Error(this.failure(err));
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error('the embeddings endpoint answered something that is not JSON');
    }
    const answer = readEmbeddingsAnswer(body, count, this.dims || null);
    if (!answer.ok) throw new Error(answer.reason);
    if (this.dims === 0 && answer.vectors[0]) this.dims = answer.vectors[0].length;
    return answer.vectors;
  }

  /** Why a request failed, in words for readiness and warnings (no URL, no key). */
  private failure(err: unknown): string {
    const e = err as Error & { cause?: { code?: string } };
    if (e.name === 'TimeoutError') return `the embeddings endpoint did not answer within ${this.options.timeoutMs} ms`;
    if (e.name === 'AbortError') return 'the sentence encoder was closed';
    if (e.message === 'too large') return 'the embeddings endpoint answered more than an embedding answer can be';
    return `the embeddings endpoint cannot be reached (${e.cause?.code ?? e.message})`;
  }

  private up(): void {
    this.probeDelayMs = PROBE_MIN_MS;
    if (this.state === 'up') return;
    if (this.state === 'down') this.logger?.info({ model: this.name }, 'the embeddings endpoint answers again: discovery ranks by meaning');
    this.state = 'up';
    this.problem = null;
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
  }

  /** Logged once as the failure starts; while it lasts, the background probe retries quietly. */
  private down(reason: string): void {
    if (this.closing.signal.aborted) return;
    if (this.state !== 'down') {
      this.logger?.error({ model: this.name, reason }, 'the embeddings endpoint is failing: discovery ranks without meaning until it answers again');
    }
    this.state = 'down';
    this.problem = `${reason}; retrying`;
    this.scheduleProbe();
  }

  private scheduleProbe(): void {
    if (this.probeTimer || this.closing.signal.aborted) return;
    const delay = this.probeDelayMs;
    this.probeDelayMs = Math.min(PROBE_MAX_MS, delay * 2);
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined;
      this.embed([PROBE_TEXT]).catch(() => undefined);
    }, delay);
    this.probeTimer.unref();
  }
}

/** The body as text, refusing more than `limit` bytes (an endpoint gone wrong must not fill the memory). */
async function readBounded(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > limit) throw new Error('too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
