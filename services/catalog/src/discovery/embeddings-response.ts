import { MAX_ENCODER_DIMENSIONS } from '@aex/platform';

/** What an embeddings endpoint answered, checked: unit vectors in the order of the texts, or why not. */
export type EmbeddingsAnswer = { ok: true; vectors: Float32Array[] } | { ok: false; reason: string };

/**
 * D22.1: an OpenAI-style embeddings answer (`{ data: [{ index, embedding }], model }`) for `count`
 * texts, checked before any of it reaches the index: one item per text, each index once, every
 * embedding an array of finite numbers of one length (`dims` when known) that is not all zeros.
 * Each vector comes back at unit length, so that a dot product is the cosine. Anything else is a
 * failure of the encoder with its reason — never a crash, never a vector of the wrong shape.
 */
export function readEmbeddingsAnswer(body: unknown, count: number, dims: number | null): EmbeddingsAnswer {
  const fail = (reason: string): EmbeddingsAnswer => ({ ok: false, reason: `the embeddings endpoint answered ${reason}` });
  if (typeof body !== 'object' || body === null || !Array.isArray((body as { data?: unknown }).data)) return fail('without a data list');
  const data = (body as { data: unknown[] }).data;
  if (data.length !== count) return fail(`${data.length} embeddings for ${count} texts`);
  const vectors: (Float32Array | undefined)[] = new Array(count);
  let length = dims;
  for (const item of data) {
    if (typeof item !== 'object' || item === null) return fail('an item that is not an object');
    const { index, embedding } = item as { index?: unknown; embedding?: unknown };
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= count) return fail(`an index out of range (${String(index).slice(0, 20)})`);
    if (vectors[index]) return fail(`index ${index} twice`);
    if (!Array.isArray(embedding)) return fail(`an embedding that is not a list of numbers (index ${index})`);
    if (embedding.length === 0 || embedding.length > MAX_ENCODER_DIMENSIONS) return fail(`an embedding of ${embedding.length} dimensions (index ${index})`);
    if (length !== null && embedding.length !== length) return fail(`an embedding of ${embedding.length} dimensions where ${length} were expected (index ${index})`);
    length = embedding.length;
    const unit = unitVector(embedding);
    if (typeof unit === 'string') return fail(`${unit} (index ${index})`);
    vectors[index] = unit;
  }
  return { ok: true, vectors: vectors as Float32Array[] };
}

/** `values` scaled to length 1, or why it cannot be: a value that is not a finite number, or all zeros. */
function unitVector(values: unknown[]): Float32Array | string {
  let norm = 0;
  for (const x of values) {
    if (typeof x !== 'number' || !Number.isFinite(x)) return 'a value that is not a finite number';
    norm += x * x;
  }
  norm = Math.sqrt(norm);
  if (!Number.isFinite(norm)) return 'an embedding with values too large for one';
  if (norm === 0) return 'an embedding with no direction (all zeros)';
  const out = new Float32Array(values.length);
  for (let k = 0; k < values.length; k++) out[k] = (values[k] as number) / norm;
  return out;
}

/**
 * The wait a 429 or 5xx asks for in `Retry-After` (seconds, or an HTTP date), in milliseconds; null
 * when absent or unreadable.
 */
export function retryAfterMs(header: string | null, nowMs: number): number | null {
  if (header === null || header.trim() === '') return null;
  const text = header.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}
