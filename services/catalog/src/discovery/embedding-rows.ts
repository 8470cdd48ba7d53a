import { dotKernel, queryMax, type DotKernel } from './int8-dot.js';

const PAGE_BYTES = 65_536;
/** Rows are added this many at a time at least (the memory grows in pages, and never shrinks). */
const MIN_GROWTH = 1024;

/**
 * The services' sentence embeddings, one row per slot of the scorer, compared with a need's in one
 * pass. Each row is kept as signed bytes with a scale of its own (`x ≈ byte · scale`, the
 * largest component at ±127): 512 bytes for a 512-dimension embedding instead of 2 KiB, and a scan of
 * 100,000 rows in a few milliseconds (int8-dot.ts). The cosines it gives are within about 0.002 of
 * the float ones: the scale is 1/127 of the row's largest component, so each component is off by at
 * most half of that, and the need's vector (16-bit) by far less; `closeness` spans 0.45 of cosine.
 *
 * Memory layout (one WebAssembly memory): the need's vector, then the rows, then the scan's results.
 * It grows as slots are added and does not shrink when the scorer compacts.
 */
export class EmbeddingRows {
  /** Values per row: the dimensions rounded up to the kernel's 16. */
  readonly stride: number;
  private readonly kernel: DotKernel;
  private readonly rowsAt: number;
  private scales = new Float32Array(0);
  private capacity = 0;

  constructor(readonly dims: number, prefer: 'simd' | 'js' = 'simd') {
    this.stride = Math.ceil(dims / 16) * 16;
    this.rowsAt = Math.ceil((this.stride * 2) / 16) * 16;
    this.kernel = dotKernel(new WebAssembly.Memory({ initial: 1 }), prefer);
  }

  /** Which implementation scans: `simd` (WebAssembly) or `js`. */
  get kind(): 'simd' | 'js' {
    return this.kernel.kind;
  }

  /** Row `slot` becomes `v` (`dims` values); `null` makes it zeros, which is close to nothing. */
  set(slot: number, v: Float32Array | null): void {
    this.ensure(slot + 1);
    const row = new Int8Array(this.kernel.memory.buffer, this.rowsAt + slot * this.stride, this.stride);
    row.fill(0);
    let max = 0;
    if (v) for (let k = 0; k < this.dims; k++) max = Math.max(max, Math.abs(v[k]!));
    const scale = max / 127;
    this.scales[slot] = scale;
    if (scale === 0) return;
    for (let k = 0; k < this.dims; k++) row[k] = Math.round(v![k]! / scale);
  }

  /** Copies row `from` to `to` (the scorer's compaction, which only moves rows down). */
  move(from: number, to: number): void {
    const at = (slot: number) => this.rowsAt + slot * this.stride;
    new Uint8Array(this.kernel.memory.buffer).copyWithin(at(to), at(from), at(from) + this.stride);
    this.scales[to] = this.scales[from]!;
  }

  /** The cosine of `q` (`dims` values) with each of rows 0…count−1. */
  cosines(q: Float32Array, count: number): Float32Array {
    this.ensure(count);
    const buffer = this.kernel.memory.buffer;
    let max = 0;
    for (let k = 0; k < this.dims; k++) max = Math.max(max, Math.abs(q[k]!));
    const out = new Float32Array(count);
    if (max === 0 || count === 0) return out;
    const qScale = max / queryMax(this.stride);
    const query = new Int16Array(buffer, 0, this.stride);
    query.fill(0);
    for (let k = 0; k < this.dims; k++) query[k] = Math.round(q[k]! / qScale);
    const results = this.rowsAt + this.capacity * this.stride;
    this.kernel.dotRows({ query: 0, rows: this.rowsAt, out: results }, this.stride, count);
    const dots = new Int32Array(buffer, results, count);
    for (let slot = 0; slot < count; slot++) out[slot] = dots[slot]! * this.scales[slot]! * qScale;
    return out;
  }

  /** Room for `rows` rows and their results. */
  private ensure(rows: number): void {
    if (rows <= this.capacity) return;
    const capacity = Math.max(rows, this.capacity * 2, MIN_GROWTH);
    const bytes = this.rowsAt + capacity * (this.stride + 4);
    const memory = this.kernel.memory;
    if (bytes > memory.buffer.byteLength) memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / PAGE_BYTES));
    const scales = new Float32Array(capacity);
    scales.set(this.scales);
    this.scales = scales;
    this.capacity = capacity;
  }
}
