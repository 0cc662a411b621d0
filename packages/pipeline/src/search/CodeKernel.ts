/**
 * Scan codes for walking a graph (`funcpipe index --ann hnsw --vector-codes i8`): each unit row held as one signed
 * byte a component, a quarter of its float32 bytes, and the query's products with them taken in WebAssembly SIMD
 * (`i32x4.dot_i16x8_s` over 16 components a step).
 *
 * A row `x` is coded by its largest magnitude `s`: `c = round(127 · x / s)`, and `x ≈ c · s / 127`. The query is
 * coded the same way, so a product is an integer sum, exact in any order, times the two scales: the JavaScript twin
 * gives the same number as the kernel, and a walk is the same on every machine. Codes only choose where a walk goes;
 * what it finds is scored from the stored vectors as before.
 */

import {
  bump,
  compiled,
  get,
  load,
  loop,
  moduleOf,
  name,
  reserve,
  section,
  set,
  simd,
  unsigned,
  type WasmMemory,
  ZERO
} from "./Wasm.ts"

/** What a component can be coded to, either way from 0. */
const LEVELS = 127

// dot8(a, b, d) -> i32: params 0–2 (a's and b's byte addresses, the components); locals 3 j, 4 d rounded down to 16,
// 5 the accumulator (i32x4), 6 the sum.
const LOW = simd(0x87) // i16x8.extend_low_i8x16_s
const HIGH = simd(0x88) // i16x8.extend_high_i8x16_s
const DOT = simd(0xba) // i32x4.dot_i16x8_s
const ADD_I32 = simd(0xae) // i32x4.add
const laneI32 = (i: number) => [...simd(0x1b), i] // i32x4.extract_lane
const BODY = [
  ...[0x03, 2, 0x7f, 1, 0x7b, 1, 0x7f], // 2 i32, 1 v128 and 1 i32 locals
  ...[...get(2), 0x41, 0x70, 0x71, ...set(4)], // d & -16
  ...[...ZERO, ...set(5)],
  ...loop(3, 4, [
    ...get(5),
    ...[...get(0), ...load(0), ...LOW, ...get(1), ...load(0), ...LOW, ...DOT, ...ADD_I32],
    ...[...get(0), ...load(0), ...HIGH, ...get(1), ...load(0), ...HIGH, ...DOT, ...ADD_I32],
    ...set(5),
    ...bump(0, 16),
    ...bump(1, 16),
    ...bump(3, 16)
  ]),
  ...[...get(5), ...laneI32(0), ...get(5), ...laneI32(1), 0x6a, ...get(5), ...laneI32(2), ...get(5), ...laneI32(3)],
  ...[0x6a, 0x6a, ...set(6)],
  ...loop(3, 2, [
    ...[...get(6), ...get(0), 0x2c, 0, 0, ...get(1), 0x2c, 0, 0, 0x6c, 0x6a, ...set(6)], // s + a[j] * b[j]
    ...bump(0, 1),
    ...bump(1, 1),
    ...bump(3, 1)
  ]),
  ...get(6),
  0x0b
]

const MODULE = moduleOf(
  section(1, [1, 0x60, 3, 0x7f, 0x7f, 0x7f, 1, 0x7f]),
  section(3, [1, 0]),
  section(5, [1, 0, 0]),
  section(7, [2, ...name("dot8"), 0, 0, ...name("memory"), 2, 0]),
  section(10, [1, ...unsigned(BODY.length), ...BODY])
)

const instances = compiled(MODULE)

/** The fewest codes held in a kernel's memory (1 MiB): below it, the JavaScript twin costs little. */
export const MIN_CODES = 1_048_576

/** Rows coded as bytes: `count` rows of `dimensions` codes, then room for a query's; and each row's scale. */
export interface CodeRows {
  readonly count: number
  readonly dimensions: number
  readonly codes: Int8Array
  /** `s / 127` of each row (0 for a row with no direction). */
  readonly scales: Float64Array
  /** The integer product of the rows (or query) starting at codes `a` and `b`, in the kernel when there is one. */
  readonly dot: (a: number, b: number) => number
  /** Whether `dot` runs in the WebAssembly kernel (or in its JavaScript twin). */
  readonly simd: boolean
}

/** Rows' codes and scales without a kernel: what a graph's stored rows are made from, or read into. */
export type CodedRows = Pick<CodeRows, "dimensions" | "codes" | "scales">

/** The product of `d` codes of `a` from `ai` and of `b` from `bi`: an integer, the same in any order. */
export const dotCodes = (a: Int8Array, ai: number, b: Int8Array, bi: number, d: number): number => {
  let s = 0
  for (let j = 0; j < d; j++) s += a[ai + j]! * b[bi + j]!
  return s
}

/** Codes `x[from … from + d)` into `out` from `at`; returns the scale (0 when every component is 0). */
export const codeRow = (x: ArrayLike<number>, from: number, d: number, out: Int8Array, at: number): number => {
  let largest = 0
  for (let j = 0; j < d; j++) largest = Math.max(largest, Math.abs(x[from + j]!))
  if (!(largest > 0)) {
    out.fill(0, at, at + d)
    return 0
  }
  for (let j = 0; j < d; j++) out[at + j] = Math.round((x[from + j]! / largest) * LEVELS)
  return largest / LEVELS
}

/**
 * Room for `count` rows of `d` codes and a query's, in a kernel's memory when WebAssembly can be used (a plain array
 * otherwise): the caller codes the rows into `codes` with `codeRow` and their scales into `scales`.
 */
export const holdCodes = (count: number, d: number): CodeRows => {
  const length = (count + 1) * d
  const scales = new Float64Array(count)
  const plain = (): CodeRows => {
    const codes = new Int8Array(length)
    return { count, dimensions: d, codes, scales, dot: (a, b) => dotCodes(codes, a, codes, b, d), simd: false }
  }
  // A WebAssembly memory reserves much address space however small, so a few rows are walked in JavaScript; and a
  // product of more than 133,148 components could pass the kernel's 32-bit sum, which the twin's float64 one does not.
  if (instances === null || length < MIN_CODES || length > 2 ** 32 - 65_536 || d * LEVELS * LEVELS >= 2 ** 31)
    return plain()
  try {
    const exports = instances()
    const memory = exports["memory"] as WasmMemory
    const dot8 = exports["dot8"] as (a: number, b: number, d: number) => number
    reserve(memory, length)
    return {
      count,
      dimensions: d,
      codes: new Int8Array(memory.buffer, 0, length),
      scales,
      dot: (a, b) => dot8(a, b, d),
      simd: true
    }
  } catch {
    return plain()
  }
}

/**
 * The distance (1 - the coded product) from a unit `query` to each row, for a walk: the query is coded into the room
 * after the rows, so one walk at a time may use `rows`.
 */
export const codeDistance = (rows: CodeRows, query: ArrayLike<number>): ((row: number) => number) => {
  const { codes, count, dimensions: d, dot, scales } = rows
  const at = count * d
  const scale = codeRow(query, 0, d, codes, at)
  return (row) => 1 - dot(at, row * d) * scale * scales[row]!
}
