/**
 * One graph's build as a job a worker thread can take: the rows (unit float32 vectors, one after another) and the
 * settings in, the graph's stored bytes out. The same job gives the same bytes on any thread (the build is
 * deterministic, and its SIMD products and their JavaScript twin agree to the bit), so graphs built in parallel are
 * the graphs a single thread would build.
 */

import { buildGraph } from "./Hnsw.ts"
import { encodeGraph } from "./HnswBytes.ts"

/** What building one graph takes. */
export interface GraphJob {
  /** `count` rows of `dimensions` components (the array may be longer). */
  readonly rows: Float32Array
  readonly count: number
  readonly dimensions: number
  readonly m: number
  readonly efConstruction: number
}

/** Builds the job's graph; its bytes as stored. */
export const buildGraphBytes = (job: GraphJob): Uint8Array =>
  encodeGraph(
    buildGraph(
      { count: job.count, dimensions: job.dimensions, data: job.rows },
      {
        m: job.m,
        efConstruction: job.efConstruction
      }
    )
  )

/**
 * A row as graphs are built from it, into `out` from `to`: each component divided by the row's magnitude (given, or
 * `sqrt(Σ x·x)` summed left to right, as a decoded block has it) and rounded to float32. An all-zero row is left as
 * `out` holds it (zero). Returns the magnitude, for a caller that checks it.
 */
export const unitRowInto = (
  source: ArrayLike<number>,
  from: number,
  d: number,
  out: Float32Array,
  to: number,
  magnitude?: number
): number => {
  let m = magnitude
  if (m === undefined) {
    let sum = 0
    for (let k = 0; k < d; k++) sum += source[from + k]! * source[from + k]!
    m = Math.sqrt(sum)
  }
  if (m !== 0) for (let k = 0; k < d; k++) out[to + k] = source[from + k]! / m
  return m
}
