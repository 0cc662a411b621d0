/**
 * What every approximate search shares once its graphs have proposed candidates: the query made a unit vector for the
 * walk, and each candidate scored exactly, by the float64 operations of the exact scan, so a returned score is the
 * exact score whatever the store.
 */

import { decodeRows } from "../index/VectorCodec.ts"
import type { AnnFound } from "./IndexView.ts"
import { clamp } from "./VectorScan.ts"

/** A vector query as the graphs are walked with it (`unit`) and as candidates are scored with it (`q`, `qLength`). */
export interface WalkQuery {
  readonly q: Float64Array
  readonly qLength: number
  readonly unit: Float32Array
}

/**
 * The query prepared for a walk, or `undefined` when its length is not a normal number: it cannot be made a unit
 * vector (its scores are those of the exact scan's arithmetic, which copes), so the caller answers `NO_WALK`.
 */
export const walkQuery = (query: ArrayLike<number>, d: number): WalkQuery | undefined => {
  const q = Float64Array.from(query)
  let qLength = 0
  for (let j = 0; j < d; j++) qLength += q[j]! * q[j]!
  qLength = Math.sqrt(qLength)
  if (!(qLength >= 2 ** -511 && qLength < Number.POSITIVE_INFINITY)) return undefined
  return { q, qLength, unit: Float32Array.from(q, (x) => x / qLength) }
}

/** No candidates, with a cut at +Infinity: the caller scans exactly. */
export const NO_WALK: AnnFound = {
  positions: new Int32Array(0),
  scores: new Float64Array(0),
  cutAt: Number.POSITIVE_INFINITY
}

/** A row's exact cosine with the query (`vector` in float64 with its `magnitude`), NaN where it is undefined. */
export const exactScore = (query: WalkQuery, vector: Float64Array, magnitude: number, d: number): number => {
  const { q, qLength } = query
  let dot = 0
  for (let j = 0; j < d; j++) dot += q[j]! * vector[j]!
  return magnitude === 0 ? Number.NaN : clamp(dot / (qLength * magnitude))
}

/** A block of rows held in memory: float32 components, or decoded float64 ones with each row's magnitude. */
export type HeldRows =
  | { readonly floats: Float32Array; readonly vectors?: undefined; readonly magnitudes?: undefined }
  | { readonly floats?: undefined; readonly vectors: Float64Array; readonly magnitudes: Float64Array }

/**
 * Row `at` of a held block in float64, with its magnitude into `magnitude[0]`, by the operations of the exact scan: a
 * float32 row widened into `row64`, a decoded row as it is. `undefined` where a float32 component is not finite.
 */
export const heldRow = (
  block: HeldRows,
  at: number,
  d: number,
  row64: Float64Array,
  magnitude: Float64Array
): Float64Array | undefined => {
  if (block.floats === undefined) {
    magnitude[0] = block.magnitudes[at]!
    return block.vectors.subarray(at * d, (at + 1) * d)
  }
  const bytes = new Uint8Array(block.floats.buffer, block.floats.byteOffset + at * d * 4, d * 4)
  return decodeRows(bytes, "f32", 1, d, row64, magnitude) === "ok" ? row64 : undefined
}
