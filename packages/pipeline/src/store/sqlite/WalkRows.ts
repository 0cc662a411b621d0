/**
 * The rows a snapshot walks a group's graph over, made once per graph from the segments' kept vector blocks: unit
 * float32 rows, as the graph was built from (4 bytes a component), or their scan codes (`--vector-codes i8`: 1 byte a
 * component and a scale a row), unless stored with the graph (read whole here, or a row at a time, GraphRows.ts).
 * Either only chooses where a walk goes; what it finds is scored from the blocks.
 */

import { type CodedRows, type CodeRows, codeDistance, codeRow, holdCodes } from "../../search/CodeKernel.ts"
import { unitRowInto } from "../../search/GraphBuild.ts"
import { holdRows } from "../../search/GraphKernel.ts"
import { type Graph, searchGraphBy, searchGraphWithin } from "../../search/Hnsw.ts"
import type { RowSource } from "./GraphRows.ts"
import type { KeptBlock, SegmentRow } from "./Tables.ts"

/** A group's rows held for walking its graph. */
export interface WalkRows {
  /**
   * The rows nearest the unit `query` that `keep` allows (`searchGraph`), found through these rows, with their
   * distances by these rows (1 - their product with the query), nearest first; rows not held yet are read through
   * `source`.
   */
  readonly search: (
    graph: Graph,
    query: Float32Array,
    ef: number,
    keep: ((row: number) => boolean) | undefined,
    source: RowSource
  ) => { readonly rows: Int32Array; readonly dists: Float64Array }
  /** Reads up to `budget` more of the rows not held yet (`pagedCodeRows`); how many, 0 once all are held. */
  readonly fill?: (source: RowSource, budget: number) => number
}

/** One of a group's segments, with its kept blocks and the group's row where it starts. */
export interface WalkPart {
  readonly segment: SegmentRow
  readonly blocks: ReadonlyArray<KeptBlock>
  readonly at: number
}

/**
 * The rows of a group of `count` rows held for its walks: unit float32 rows in a kernel's memory, or (`codes` "i8")
 * their codes: as stored with the graph (`stored`), or made segment by segment, so that no float32 copy of the whole
 * group is made. `parts` is asked for only when the rows are made here.
 */
export const walkRowsOf = (
  parts: () => ReadonlyArray<WalkPart>,
  count: number,
  d: number,
  codes: "i8" | undefined,
  stored: CodeRows | undefined
): WalkRows => {
  if (codes !== undefined && stored !== undefined)
    return { search: (graph, query, ef, keep) => searchGraphBy(graph, codeDistance(stored, query), ef, keep) }
  if (codes === undefined) {
    const data = holdRows((count + 1) * d, d)
    for (const { at, blocks, segment } of parts()) unitRowsInto(segment, d, blocks, data, at)
    const rows = { count, dimensions: d, data }
    return { search: (graph, query, ef, keep) => searchGraphWithin(graph, rows, query, ef, keep) }
  }
  const coded = holdCodes(count, d)
  for (const { at, blocks, segment } of parts()) {
    const unit = new Float32Array(segment.count * d)
    unitRowsInto(segment, d, blocks, unit, 0)
    for (let r = 0; r < segment.count; r++) coded.scales[at + r] = codeRow(unit, r * d, d, coded.codes, (at + r) * d)
  }
  return { search: (graph, query, ef, keep) => searchGraphBy(graph, codeDistance(coded, query), ef, keep) }
}

/** A segment's rows as unit float32 vectors, from its kept blocks, into `data` from row `at` on. */
export const unitRowsInto = (
  segment: SegmentRow,
  d: number,
  blocks: ReadonlyArray<KeptBlock>,
  data: Float32Array,
  at: number
): void => {
  blocks.forEach((block, b) => {
    const from = at + b * segment.blockRows
    const rows = Math.min(segment.blockRows, segment.count - b * segment.blockRows)
    for (let r = 0; r < rows; r++) {
      if (block.floats !== undefined) unitRowInto(block.floats, r * d, d, data, (from + r) * d)
      else unitRowInto(block.vectors, r * d, d, data, (from + r) * d, block.magnitudes[r]!)
    }
  })
}

/** Where a stored codes blob's scales start: after its `count · d` codes, at a multiple of 8 bytes. */
const scalesAt = (count: number, d: number) => Math.ceil((count * d) / 8) * 8

/** A group's rows as i8 codes, from its unit float32 rows given a segment at a time (as a paged graph stores them). */
export const codeRowsOf = (count: number, d: number, segments: Iterable<Float32Array>): CodedRows => {
  const codes = new Int8Array(count * d)
  const scales = new Float64Array(count)
  let row = 0
  for (const unit of segments) {
    for (let r = 0; r * d < unit.length; r++, row++) scales[row] = codeRow(unit, r * d, d, codes, row * d)
  }
  return { dimensions: d, codes, scales }
}

/**
 * A group's i8 codes as one value, as FuncPipe stored them beside a graph stored whole: the codes, then each row's
 * scale as a little-endian float64.
 */
export const encodeCodes = (rows: CodedRows): Uint8Array => {
  const count = rows.scales.length
  const d = rows.dimensions
  const at = scalesAt(count, d)
  const bytes = new Uint8Array(at + 8 * count)
  bytes.set(new Uint8Array(rows.codes.buffer, rows.codes.byteOffset, count * d))
  const scales = new DataView(bytes.buffer, at)
  for (let row = 0; row < count; row++) scales.setFloat64(8 * row, rows.scales[row]!, true)
  return bytes
}

/** Why stored codes (`encodeCodes`) of `count` rows cannot be walked (their size, a scale out of range), if they cannot. */
export const codesProblem = (bytes: Uint8Array, count: number, d: number): string | undefined => {
  const at = scalesAt(count, d)
  if (bytes.byteLength !== at + 8 * count) return "its scan codes have another size than its rows"
  const scales = new DataView(bytes.buffer, bytes.byteOffset + at, 8 * count)
  for (let r = 0; r < count; r++) {
    const scale = scales.getFloat64(8 * r, true)
    // A unit row's largest component is at most 1, so its scale at most 1/127.
    if (!(scale >= 0 && scale <= 1 / 127)) return "its scan codes have a scale out of range"
  }
  return undefined
}

/** Stored codes (`encodeCodes`) held for walking, or why they cannot be (`codesProblem`). */
export const decodeCodes = (bytes: Uint8Array, count: number, d: number): CodeRows | string => {
  const problem = codesProblem(bytes, count, d)
  if (problem !== undefined) return problem
  const rows = holdCodes(count, d)
  rows.codes.set(new Int8Array(bytes.buffer, bytes.byteOffset, count * d))
  const scales = new DataView(bytes.buffer, bytes.byteOffset + scalesAt(count, d), 8 * count)
  for (let r = 0; r < count; r++) rows.scales[r] = scales.getFloat64(8 * r, true)
  return rows
}
