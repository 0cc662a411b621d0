/**
 * The cosines of a block of 16-bit coded vectors with a query, computed in WebAssembly by the very operations, in the
 * same order, as the engine's JavaScript loop (`scanCoded`): each component decoded as `code / 65535`, its square and
 * its product with the query's component added left to right, then `dot / (|q| · sqrt(Σ x²))` clamped to [-1, 1].
 * WebAssembly's float arithmetic is IEEE 754's, as JavaScript's is, so every cosine has the same bits.
 *
 * Why: a cold process runs a JavaScript loop unoptimized until V8 has seen it run for a while, so the scan's first
 * 8,000 rows or so cost a cold vector query over 442k rows about 20 ms. WebAssembly is compiled before it runs: the
 * whole cold scan takes about 19 ms instead of 33 ms (docs/decisions/0074-cold-vector-scans-in-webassembly.md).
 */

import { compiled, get, i32, moduleOf, name, reserve, section, set, unsigned, type WasmMemory } from "./Wasm.ts"

const f64 = (value: number): Array<number> => {
  const bytes = new Uint8Array(8)
  new DataView(bytes.buffer).setFloat64(0, value, true)
  return [0x44, ...bytes]
}

// scan(codes, count, d, q, qLength, out): params 0–5; locals 6 row, 7 j, 8 at (a code's address), 9 qAt (the query
// component's), 10 dot, 11 sum, 12 x, 13 magnitude, 14 cosine. `out[row]` gets the row's cosine, or NaN for a row of
// magnitude 0 (its cosine is undefined; the loop in JavaScript skips it, as `scanCoded` does).
const BODY = [
  ...[0x02, 0x04, 0x7f, 0x05, 0x7c], // 4 i32 locals, 5 f64 locals
  ...get(0),
  ...set(8),
  ...[0x02, 0x40, 0x03, 0x40], // block, loop (rows)
  ...get(6),
  ...get(1),
  ...[0x4f, 0x0d, 1], // row >= count: done
  ...f64(0),
  ...set(10),
  ...f64(0),
  ...set(11),
  ...i32(0),
  ...set(7),
  ...get(3),
  ...set(9),
  ...[0x02, 0x40, 0x03, 0x40], // block, loop (components)
  ...get(7),
  ...get(2),
  ...[0x4f, 0x0d, 1], // j >= d: the row is summed
  ...get(8),
  ...[0x2f, 1, 0, 0xb8], // i32.load16_u, f64.convert_i32_u
  ...f64(65535),
  0xa3, // f64.div
  ...set(12),
  ...get(11),
  ...get(12),
  ...get(12),
  ...[0xa2, 0xa0], // sum = sum + x * x
  ...set(11),
  ...get(10),
  ...get(9),
  ...[0x2b, 3, 0], // f64.load
  ...get(12),
  ...[0xa2, 0xa0], // dot = dot + q[j] * x
  ...set(10),
  ...get(8),
  ...i32(2),
  0x6a,
  ...set(8),
  ...get(9),
  ...i32(8),
  0x6a,
  ...set(9),
  ...get(7),
  ...i32(1),
  0x6a,
  ...set(7),
  ...[0x0c, 0, 0x0b, 0x0b], // next component; end loop, end block
  ...get(11),
  0x9f, // f64.sqrt
  ...set(13),
  ...get(13),
  ...f64(0),
  ...[0x61, 0x04, 0x7c], // magnitude == 0: if (result f64)
  ...f64(Number.NaN),
  0x05, // else
  ...get(10),
  ...get(4),
  ...get(13),
  ...[0xa2, 0xa3, 0x0b], // dot / (qLength * magnitude); end if
  ...set(14),
  // clamp: cosine > 1 ? 1 : cosine < -1 ? -1 : cosine (NaN stays NaN)
  ...f64(1),
  ...f64(-1),
  ...get(14),
  ...get(14),
  ...f64(-1),
  ...[0x63, 0x1b], // f64.lt, select
  ...get(14),
  ...f64(1),
  ...[0x64, 0x1b], // f64.gt, select
  ...set(14),
  ...get(5),
  ...get(6),
  ...i32(3),
  ...[0x74, 0x6a], // out + row << 3
  ...get(14),
  ...[0x39, 3, 0], // f64.store
  ...get(6),
  ...i32(1),
  0x6a,
  ...set(6),
  ...[0x0c, 0, 0x0b, 0x0b], // next row; end loop, end block
  0x0b
]

const MODULE = moduleOf(
  section(1, [1, 0x60, 6, 0x7f, 0x7f, 0x7f, 0x7f, 0x7c, 0x7f, 0]),
  section(3, [1, 0]),
  section(5, [1, 0, 4]),
  section(7, [2, ...name("scan"), 0, 0, ...name("memory"), 2, 0]),
  section(10, [1, ...unsigned(BODY.length), ...BODY])
)

interface Kernel {
  readonly scan: (codes: number, count: number, d: number, q: number, qLength: number, out: number) => void
  readonly memory: WasmMemory
}

const instances = compiled(MODULE)

/** The kernel, instantiated, or `null` where WebAssembly cannot be used. */
const makeKernel = (): Kernel | null => {
  if (instances === null) return null
  const exports = instances()
  return { scan: exports["scan"] as Kernel["scan"], memory: exports["memory"] as WasmMemory }
}

/**
 * Scores coded blocks in a WebAssembly kernel of its own (instantiated on first use), owned by whoever owns the scan's
 * working memory (a `ScoringScratch`).
 */
export class CodedScanner {
  private kernel: Kernel | null | undefined
  /** Whether a block's cosines are in the kernel's memory and still being read (see `cosines`). */
  private inUse = false

  private made(): Kernel | null {
    if (this.kernel === undefined) this.kernel = makeKernel()
    return this.kernel
  }

  /**
   * Calls `read` with the cosines of the block's `count` rows of `d` coded components with `q` (of magnitude
   * `qLength`), NaN where a row's magnitude is 0, and returns true; returns false (without calling it) where the
   * kernel cannot be used, or while an earlier call's `read` is still running (the cosines live in the kernel's memory
   * until it returns), so the caller scores the block itself.
   */
  cosines(
    codes: Uint16Array,
    count: number,
    d: number,
    q: Float64Array,
    qLength: number,
    read: (cosines: Float64Array) => void
  ): boolean {
    const k = this.inUse ? null : this.made()
    if (k === null) return false
    const qAt = (count * d * 2 + 7) & ~7
    const outAt = qAt + d * 8
    const size = outAt + count * 8
    reserve(k.memory, size)
    const memory = k.memory.buffer
    new Uint16Array(memory, 0, count * d).set(codes.subarray(0, count * d))
    new Float64Array(memory, qAt, d).set(q.subarray(0, d))
    k.scan(0, count, d, qAt, qLength, outAt)
    this.inUse = true
    try {
      read(new Float64Array(memory, outAt, count))
    } finally {
      this.inUse = false
    }
    return true
  }

  /** Whether scans of coded blocks go through WebAssembly here (false without it, or on a big-endian machine). */
  available(): boolean {
    return this.made() !== null
  }
}
