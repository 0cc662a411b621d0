/**
 * The dot product of two float32 rows in float32 SIMD (WebAssembly `f32x4`), for the HNSW graph's walks: building a
 * graph spends nearly all of its time in these products, and a query walking graphs spends most of its time in them.
 *
 * The sum's order is fixed: four 4-lane accumulators over each 16 components, a fifth pass of 4 components into the
 * first, the accumulators added as (0 + 1) + (2 + 3) lane by lane and the lanes as (0 + 1) + (2 + 3), then the last
 * components one by one, every operation rounded to float32. `dotFloat32` does the same in JavaScript with
 * `Math.fround` (float64 holds a float32 sum or product exactly enough that rounding it again gives the float32
 * result), so a graph is the same, bit for bit, with or without WebAssembly.
 */

import {
  ADD,
  bump,
  compiled,
  get,
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

// dot(a, b, d) -> f32: params 0–2 (a's and b's addresses, the components); locals 3 j, 4 d rounded down to 16, 5 to 4,
// 6–9 the accumulators, 10 the sum.
const ACCUMULATORS = [6, 7, 8, 9]
const BODY = [
  ...[0x03, 3, 0x7f, 4, 0x7b, 1, 0x7d], // 3 i32, 4 v128 and 1 f32 locals
  ...[...get(2), 0x41, 0x70, 0x71, ...set(4)], // d & -16
  ...[...get(2), 0x41, 0x7c, 0x71, ...set(5)], // d & -4
  ...ACCUMULATORS.flatMap((local) => [...ZERO, ...set(local)]),
  ...loop(3, 4, [
    ...ACCUMULATORS.flatMap((local, k) => [
      ...get(local),
      ...get(0),
      ...load(16 * k),
      ...get(1),
      ...load(16 * k),
      ...MUL,
      ...ADD,
      ...set(local)
    ]),
    ...bump(0, 64),
    ...bump(1, 64),
    ...bump(3, 16)
  ]),
  ...loop(3, 5, [
    ...[...get(6), ...get(0), ...load(0), ...get(1), ...load(0), ...MUL, ...ADD, ...set(6)],
    ...bump(0, 16),
    ...bump(1, 16),
    ...bump(3, 4)
  ]),
  ...[...get(6), ...get(7), ...ADD, ...get(8), ...get(9), ...ADD, ...ADD, ...set(6)],
  ...lanes(6),
  ...set(10),
  ...loop(3, 2, [
    ...[...get(10), ...get(0), 0x2a, 2, 0, ...get(1), 0x2a, 2, 0, 0x94, 0x92, ...set(10)], // s + a[j] * b[j]
    ...bump(0, 4),
    ...bump(1, 4),
    ...bump(3, 1)
  ]),
  ...get(10),
  0x0b
]

const MODULE = moduleOf(
  section(1, [1, 0x60, 3, 0x7f, 0x7f, 0x7f, 1, 0x7d]),
  section(3, [1, 0]),
  section(5, [1, 0, 0]),
  section(7, [2, ...name("dot"), 0, 0, ...name("memory"), 2, 0]),
  section(10, [1, ...unsigned(BODY.length), ...BODY])
)

const instances = compiled(MODULE)

/** A kernel over rows held in its memory: `dot(a, b)` of the rows (or query) starting at components `a` and `b`. */
export interface RowKernel {
  readonly dot: (a: number, b: number) => number
}

/** The fewest components held in a kernel's memory (1 MiB): below it, the JavaScript twin costs little. */
export const MIN_HELD = 262_144

/** Kernels by the memory buffer their rows are held in (a buffer that never grows once made). */
const kernels = new WeakMap<ArrayBuffer, RowKernel>()

/**
 * Room for `length` float32 components in the memory of a kernel of their own, for the caller to fill: products of
 * rows held there run in SIMD (`kernelOf`). A plain array for fewer than `MIN_HELD` components, or where WebAssembly
 * cannot be used or the memory cannot be had.
 */
export const holdRows = (length: number, d: number): Float32Array => {
  // A WebAssembly memory reserves gigabytes of address space, however small: rows fewer than this walk in JavaScript.
  if (instances === null || length < MIN_HELD || length * 4 > 2 ** 32 - 65_536) return new Float32Array(length)
  try {
    const exports = instances()
    const memory = exports["memory"] as WasmMemory
    const dot = exports["dot"] as (a: number, b: number, d: number) => number
    reserve(memory, length * 4)
    kernels.set(memory.buffer, { dot: (a, b) => dot(a * 4, b * 4, d) })
    return new Float32Array(memory.buffer, 0, length)
  } catch {
    return new Float32Array(length)
  }
}

/** The kernel of rows held by `holdRows`, or undefined for any other array. */
export const kernelOf = (data: Float32Array): RowKernel | undefined =>
  data.byteOffset === 0 ? kernels.get(data.buffer as ArrayBuffer) : undefined

/**
 * The product of `a[ai …]` and `b[bi …]` over `d` components, in the kernel's order, in float32 (see above): 16 lanes
 * summed a step of 16 at a time, then 4 lanes a step of 4, the lanes folded pairwise, the rest added one by one. The
 * lanes are locals, not an array: this runs for every pair of rows a small graph's build compares.
 */
export const dotFloat32 = (a: Float32Array, ai: number, b: Float32Array, bi: number, d: number): number => {
  const f = Math.fround
  let s0 = 0,
    s1 = 0,
    s2 = 0,
    s3 = 0,
    s4 = 0,
    s5 = 0,
    s6 = 0,
    s7 = 0
  let s8 = 0,
    s9 = 0,
    s10 = 0,
    s11 = 0,
    s12 = 0,
    s13 = 0,
    s14 = 0,
    s15 = 0
  const d16 = d & -16
  const d4 = d & -4
  let j = 0
  for (; j < d16; j += 16) {
    const x = ai + j
    const y = bi + j
    s0 = f(s0 + f(a[x]! * b[y]!))
    s1 = f(s1 + f(a[x + 1]! * b[y + 1]!))
    s2 = f(s2 + f(a[x + 2]! * b[y + 2]!))
    s3 = f(s3 + f(a[x + 3]! * b[y + 3]!))
    s4 = f(s4 + f(a[x + 4]! * b[y + 4]!))
    s5 = f(s5 + f(a[x + 5]! * b[y + 5]!))
    s6 = f(s6 + f(a[x + 6]! * b[y + 6]!))
    s7 = f(s7 + f(a[x + 7]! * b[y + 7]!))
    s8 = f(s8 + f(a[x + 8]! * b[y + 8]!))
    s9 = f(s9 + f(a[x + 9]! * b[y + 9]!))
    s10 = f(s10 + f(a[x + 10]! * b[y + 10]!))
    s11 = f(s11 + f(a[x + 11]! * b[y + 11]!))
    s12 = f(s12 + f(a[x + 12]! * b[y + 12]!))
    s13 = f(s13 + f(a[x + 13]! * b[y + 13]!))
    s14 = f(s14 + f(a[x + 14]! * b[y + 14]!))
    s15 = f(s15 + f(a[x + 15]! * b[y + 15]!))
  }
  for (; j < d4; j += 4) {
    const x = ai + j
    const y = bi + j
    s0 = f(s0 + f(a[x]! * b[y]!))
    s1 = f(s1 + f(a[x + 1]! * b[y + 1]!))
    s2 = f(s2 + f(a[x + 2]! * b[y + 2]!))
    s3 = f(s3 + f(a[x + 3]! * b[y + 3]!))
  }
  const lane0 = f(f(s0 + s4) + f(s8 + s12))
  const lane1 = f(f(s1 + s5) + f(s9 + s13))
  const lane2 = f(f(s2 + s6) + f(s10 + s14))
  const lane3 = f(f(s3 + s7) + f(s11 + s15))
  let s = f(f(lane0 + lane1) + f(lane2 + lane3))
  for (; j < d; j++) s = f(s + f(a[ai + j]! * b[bi + j]!))
  return s
}
