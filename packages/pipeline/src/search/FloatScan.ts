/**
 * Exact cosines over float32 vectors at the speed of SIMD: a WebAssembly kernel computes every row's cosine in float32
 * with `f32x4` lanes, a number within a proven bound of the exact one; only the rows that bound cannot rule out of the
 * top k are scored again exactly, by the engine's float64 operations in its order. So every visited score has the
 * bits of the float64 scan, and the rows visited are the ones it visits (docs/decisions/0084-float32-scans-in-simd.md).
 *
 * The bound. The query is scaled to length 1 and rounded to float32 (relative error u = 2^-24 a component, or 2^-150
 * where it falls below float32's normal range); the kernel sums a row's products and squares over 16 lanes, then
 * lane by lane, then the last components one by one: every product meets at most d + 16 roundings, so each sum is
 * off by at most γ = (d + 16)·u/(1 − (d + 16)·u) of its terms' absolute sum, which Cauchy–Schwarz bounds by the
 * row's length (and by its square for the squares). The square root and the division add two roundings more.
 * Altogether the kernel's cosine is within 2u + 3γ of the exact one, and within 1e-12 of the float64 one; `MARGIN`
 * takes 4(d + 16)·u + 2^-40, more than both. A row whose float32 sum of squares is below 1e-30 (where underflow could
 * break the bound), not finite (a damaged or enormous vector) or whose cosine is not a number is always scored exactly.
 */

import {
  ADD,
  bump,
  compiled,
  f32,
  get,
  i32,
  lanes,
  load,
  loop,
  MUL,
  moduleOf,
  name,
  reserve,
  section,
  set,
  unsigned,
  type WasmMemory,
  ZERO
} from "./Wasm.ts"

/** The margin that covers the kernel's error at `d` dimensions (see above). */
export const marginOf = (d: number): number => 4 * (d + 16) * 2 ** -24 + 2 ** -40

// cosines(values, count, d, q, out): params 0–4; locals 5 row, 6 at (a component's address), 7 j, 8 qAt, 9 d rounded
// down to 16, 10 to 4; 11–14 the dot products' lanes, 15–18 the squares', 19 x; 20 s, 21 n, 22 a last component.
const DOTS = [11, 12, 13, 14]
const SQUARES = [15, 16, 17, 18]
const sixteen = DOTS.flatMap((dot, k) => [
  ...get(6),
  ...load(16 * k),
  ...set(19),
  ...get(dot),
  ...get(19),
  ...get(8),
  ...load(16 * k),
  ...MUL,
  ...ADD,
  ...set(dot),
  ...get(SQUARES[k]!),
  ...get(19),
  ...get(19),
  ...MUL,
  ...ADD,
  ...set(SQUARES[k]!)
])
const four = [
  ...get(6),
  ...load(0),
  ...set(19),
  ...get(11),
  ...get(19),
  ...get(8),
  ...load(0),
  ...MUL,
  ...ADD,
  ...set(11),
  ...get(15),
  ...get(19),
  ...get(19),
  ...MUL,
  ...ADD,
  ...set(15)
]
const one = [
  ...get(6),
  ...[0x2a, 2, 0], // f32.load
  ...set(22),
  ...get(20),
  ...get(22),
  ...get(8),
  ...[0x2a, 2, 0],
  ...[0x94, 0x92], // s + x * q
  ...set(20),
  ...get(21),
  ...get(22),
  ...get(22),
  ...[0x94, 0x92], // n + x * x
  ...set(21)
]
const BODY = [
  ...[0x03, 6, 0x7f, 9, 0x7b, 3, 0x7d], // 6 i32, 9 v128 and 3 f32 locals
  ...[...get(2), 0x41, 0x70, 0x71, ...set(9)], // d & -16
  ...[...get(2), 0x41, 0x7c, 0x71, ...set(10)], // d & -4
  ...get(0),
  ...set(6),
  ...loop(5, 1, [
    ...[...DOTS, ...SQUARES].flatMap((local) => [...ZERO, ...set(local)]),
    ...i32(0),
    ...set(7),
    ...get(3),
    ...set(8),
    ...loop(7, 9, [...sixteen, ...bump(6, 64), ...bump(8, 64), ...bump(7, 16)]),
    ...loop(7, 10, [...four, ...bump(6, 16), ...bump(8, 16), ...bump(7, 4)]),
    ...[...get(11), ...get(12), ...ADD, ...get(13), ...get(14), ...ADD, ...ADD, ...set(11)],
    ...[...get(15), ...get(16), ...ADD, ...get(17), ...get(18), ...ADD, ...ADD, ...set(15)],
    ...lanes(11),
    ...set(20),
    ...lanes(15),
    ...set(21),
    ...loop(7, 2, [...one, ...bump(6, 4), ...bump(8, 4), ...bump(7, 1)]),
    // out[row] = 1e-30 <= n < Infinity ? s / sqrt(n) : Infinity
    ...[...get(4), ...get(5), ...i32(2), 0x74, 0x6a],
    ...[...get(20), ...get(21), 0x91, 0x95],
    ...f32(Number.POSITIVE_INFINITY),
    ...[...get(21), ...f32(1e-30), 0x60, ...get(21), ...f32(Number.POSITIVE_INFINITY), 0x5d, 0x71],
    0x1b, // select
    ...[0x38, 2, 0], // f32.store
    ...bump(5, 1)
  ]),
  0x0b
]

const MODULE = moduleOf(
  section(1, [1, 0x60, 5, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0]),
  section(3, [1, 0]),
  section(5, [1, 0, 0]),
  section(7, [2, ...name("cosines"), 0, 0, ...name("memory"), 2, 0]),
  section(10, [1, ...unsigned(BODY.length), ...BODY])
)

interface Kernel {
  readonly cosines: (values: number, count: number, d: number, q: number, out: number) => void
  readonly memory: WasmMemory
  /** Where the query and the cosines go: past the held vectors, or from 0 for a kernel that copies each block in. */
  readonly workAt: number
  inUse: boolean
}

const instances = compiled(MODULE)

const kernelOf = (workAt: number): Kernel | null => {
  if (instances === null) return null
  const exports = instances()
  return {
    cosines: exports["cosines"] as Kernel["cosines"],
    memory: exports["memory"] as WasmMemory,
    workAt,
    inUse: false
  }
}

/** `bytes` rounded up to a multiple of 16 (in float64 arithmetic: a memory may pass 2 GiB, where `&` would wrap). */
const align16 = (bytes: number): number => Math.ceil(bytes / 16) * 16

/** The kernels holding vectors in their memory, by that memory's buffer (which never grows once filled). */
const holders = new WeakMap<ArrayBuffer, Kernel>()

/**
 * Room for `length` float32 components (rows of `d`, to be scanned in blocks of at most `maxRows` rows) in the
 * memory of a kernel of their own, for the caller to fill: scans then read them in place instead of copying each block
 * in. `undefined` where WebAssembly cannot be used or the memory cannot be had (a WebAssembly memory holds at most 4
 * GiB); the caller then keeps the components in an array of its own, which scans copy in block by block.
 */
export const holdFloats = (length: number, d: number, maxRows: number): Float32Array | undefined => {
  const workAt = align16(length * 4)
  // A WebAssembly memory holds at most 4 GiB (65,536 pages of 64 KiB).
  if (workAt + align16(d * 4) + maxRows * 4 > 2 ** 32) return undefined
  try {
    const kernel = kernelOf(workAt)
    if (kernel === null) return undefined
    reserve(kernel.memory, workAt + align16(d * 4) + maxRows * 4)
    holders.set(kernel.memory.buffer, kernel)
    return new Float32Array(kernel.memory.buffer, 0, length)
  } catch {
    return undefined
  }
}

/**
 * Runs the kernel over blocks of float32 rows, owned by whoever owns the scan's working memory (a `ScoringScratch`):
 * in place for held vectors (`holdFloats`), else through a kernel of its own that copies each block in.
 */
export class FloatScanner {
  private own: Kernel | null | undefined

  /**
   * Calls `read` with the float32 cosines of the `count` rows of `d` components starting at `floats[0]` with `unit`
   * (the query scaled to length 1, in float32); +Infinity marks a row that must be scored exactly. Returns false
   * (without calling it) where no kernel can be used, or while an earlier call's `read` is still running.
   */
  cosines(
    floats: Float32Array,
    count: number,
    d: number,
    unit: Float32Array,
    read: (cosines: Float32Array) => void
  ): boolean {
    const holder = holders.get(floats.buffer as ArrayBuffer)
    if (this.own === undefined && holder === undefined) this.own = kernelOf(0)
    const k = holder ?? this.own ?? null
    if (k === null || k.inUse) return false
    const valuesAt = holder === undefined ? 0 : floats.byteOffset
    const qAt = holder === undefined ? align16(count * d * 4) : k.workAt
    const outAt = qAt + align16(d * 4)
    if (outAt + count * 4 > 2 ** 32) return false
    if (holder === undefined) {
      try {
        reserve(k.memory, outAt + count * 4)
      } catch {
        // No memory to be had: the caller scores the block itself.
        return false
      }
      new Float32Array(k.memory.buffer, 0, count * d).set(floats.subarray(0, count * d))
    } else if (outAt + count * 4 > k.memory.buffer.byteLength) return false
    const memory = k.memory.buffer
    new Float32Array(memory, qAt, d).set(unit.subarray(0, d))
    k.cosines(valuesAt, count, d, qAt, outAt)
    k.inUse = true
    try {
      read(new Float32Array(memory, outAt, count))
    } finally {
      k.inUse = false
    }
    return true
  }
}
