/**
 * Dot products of one query with many embedding rows, quantised (at 100,000 services the
 * float scan in JavaScript cost 40 ms per discover on this machine; this one costs a few).
 *
 * Rows are signed bytes, the query signed 16-bit integers, both `stride` values long (a multiple of
 * 16). `dotRows` writes the integer dot product of the query with each of `count` rows. It runs as a
 * WebAssembly function using 128-bit SIMD (16 bytes of a row per step: widened to 16 bits, multiplied
 * with the query and summed in pairs by `i32x4.dot_i16x8_s`), assembled below from its instructions;
 * where WebAssembly SIMD is not available, the same sums are made in JavaScript.
 *
 * Overflow: every partial sum is at most 127 · |q|max · stride, which `queryMax` keeps below 2³¹.
 */

/** The largest query value whose dot product with `stride` bytes cannot overflow a 32-bit sum. */
export function queryMax(stride: number): number {
  return Math.min(32_767, Math.floor((2 ** 31 - 1) / (127 * stride)));
}

/** Where things are in the memory the kernel reads (byte offsets, each a multiple of 16). */
export interface DotLayout {
  /** The query: `stride` Int16 values. */
  query: number;
  /** The first row: `count` rows of `stride` Int8 values, one after the other. */
  rows: number;
  /** The results: `count` Int32 values. */
  out: number;
}

export interface DotKernel {
  /** `simd` (WebAssembly) or `js`: which implementation runs. */
  readonly kind: 'simd' | 'js';
  readonly memory: WebAssembly.Memory;
  dotRows(at: DotLayout, stride: number, count: number): void;
}

/** The kernel over `memory`: the WebAssembly one when this runtime validates it, else JavaScript. */
export function dotKernel(memory: WebAssembly.Memory, prefer: 'simd' | 'js' = 'simd'): DotKernel {
  if (prefer === 'simd' && WebAssembly.validate(MODULE)) {
    const instance = new WebAssembly.Instance(new WebAssembly.Module(MODULE), { env: { memory } });
    const dot = instance.exports.dot as (query: number, rows: number, count: number, stride: number, out: number) => void;
    return { kind: 'simd', memory, dotRows: (at, stride, count) => dot(at.query, at.rows, count, stride, at.out) };
  }
  return {
    kind: 'js',
    memory,
    dotRows(at, stride, count) {
      const q = new Int16Array(memory.buffer, at.query, stride);
      const rows = new Int8Array(memory.buffer, at.rows, count * stride);
      const out = new Int32Array(memory.buffer, at.out, count);
      for (let r = 0, i = 0; r < count; r++) {
        let sum = 0;
        for (let k = 0; k < stride; k++, i++) sum += rows[i]! * q[k]!;
        out[r] = sum;
      }
    },
  };
}

// --- the WebAssembly module ------------------------------------------------------------------
//
// (module
//   (import "env" "memory" (memory 1))
//   (func (export "dot") (param $query i32) (param $rows i32) (param $count i32) (param $stride i32) (param $out i32)
//     for r in 0..count:   acc = 0
//       for k in 0..stride step 16:
//         v = load128(row + k)
//         acc += dot_i16x8(extend_low(v), load128(query + 2k)) + dot_i16x8(extend_high(v), load128(query + 2k + 16))
//       out[r] = acc[0] + acc[1] + acc[2] + acc[3];   row += stride))

const OP = {
  block: 0x02, loop: 0x03, br: 0x0c, brIf: 0x0d, end: 0x0b, void: 0x40,
  localGet: 0x20, localSet: 0x21, i32Store: 0x36, i32Const: 0x41, i32GeU: 0x4f, i32Add: 0x6a, i32Shl: 0x74,
} as const;
/** Fixed-width SIMD instructions (prefix 0xfd, then the instruction's number). */
const SIMD = {
  load: 0x00, const: 0x0c, i32x4ExtractLane: 0x1b, extendLowI8: 0x87, extendHighI8: 0x88, i32x4Add: 0xae, dotI16: 0xba,
} as const;
const TYPE = { i32: 0x7f, v128: 0x7b, func: 0x60 } as const;

/** Unsigned LEB128, the integer encoding of the binary format. */
function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}
const simd = (op: number) => [0xfd, ...uleb(op)];
/** A memory access: log2 of the alignment promised (none: 0) and a constant offset. */
const memarg = (offset = 0) => [0, ...uleb(offset)];
const name = (s: string) => [...uleb(s.length), ...Buffer.from(s, 'utf8')];
const section = (id: number, content: number[]) => [id, ...uleb(content.length), ...content];

// Locals: the parameters first, then r, k and row (i32), acc and v (v128).
const [QUERY, ROWS, COUNT, STRIDE, OUT, R, K, ROW, ACC, V] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] as const;
const get = (l: number) => [OP.localGet, l];
const set = (l: number) => [OP.localSet, l];
const i32 = (n: number) => [OP.i32Const, ...uleb(n)]; // small non-negative constants: the same bytes as signed LEB128
/** query + 2k (+ offset in the load). */
const queryAtK = [...get(QUERY), ...get(K), ...i32(1), OP.i32Shl, OP.i32Add];

const BODY = [
  2, 3, TYPE.i32, 2, TYPE.v128, // locals
  ...get(ROWS), ...set(ROW),
  OP.block, OP.void, OP.loop, OP.void,
  ...get(R), ...get(COUNT), OP.i32GeU, OP.brIf, 1,
  ...simd(SIMD.const), ...new Array<number>(16).fill(0), ...set(ACC),
  ...i32(0), ...set(K),
  OP.block, OP.void, OP.loop, OP.void,
  ...get(K), ...get(STRIDE), OP.i32GeU, OP.brIf, 1,
  ...get(ROW), ...get(K), OP.i32Add, ...simd(SIMD.load), ...memarg(), ...set(V),
  ...get(ACC),
  ...get(V), ...simd(SIMD.extendLowI8), ...queryAtK, ...simd(SIMD.load), ...memarg(), ...simd(SIMD.dotI16), ...simd(SIMD.i32x4Add),
  ...get(V), ...simd(SIMD.extendHighI8), ...queryAtK, ...simd(SIMD.load), ...memarg(16), ...simd(SIMD.dotI16), ...simd(SIMD.i32x4Add),
  ...set(ACC),
  ...get(K), ...i32(16), OP.i32Add, ...set(K),
  OP.br, 0, OP.end, OP.end,
  ...get(OUT), ...get(R), ...i32(2), OP.i32Shl, OP.i32Add,
  ...get(ACC), ...simd(SIMD.i32x4ExtractLane), 0,
  ...get(ACC), ...simd(SIMD.i32x4ExtractLane), 1, OP.i32Add,
  ...get(ACC), ...simd(SIMD.i32x4ExtractLane), 2, OP.i32Add,
  ...get(ACC), ...simd(SIMD.i32x4ExtractLane), 3, OP.i32Add,
  OP.i32Store, 2, 0,
  ...get(ROW), ...get(STRIDE), OP.i32Add, ...set(ROW),
  ...get(R), ...i32(1), OP.i32Add, ...set(R),
  OP.br, 0, OP.end, OP.end,
  OP.end,
];

const MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // "\0asm", version 1
  ...section(1, [1, TYPE.func, 5, TYPE.i32, TYPE.i32, TYPE.i32, TYPE.i32, TYPE.i32, 0]), // one type: (i32 ×5) → ()
  ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 1]), // import a memory of at least one page
  ...section(3, [1, 0]), // one function, of type 0
  ...section(7, [1, ...name('dot'), 0x00, 0]), // export it as "dot"
  ...section(10, [1, ...uleb(BODY.length), ...BODY]), // its code
]);
