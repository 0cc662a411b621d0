/** Cosine similarity with the reference's exact float64 arithmetic. */

import { CosineScore } from "@funcpipe/domain/Ranking"
import { Result } from "effect"
import { DimensionMismatch, ZeroVector } from "./QueryErrors.ts"

/** Clamps rounding overshoot (a self-similarity can come out as 1.0000000000000002) into [-1, 1]. */
// biome-ignore lint/complexity/useMathMinMax: the reference's clamp, written as its comparisons
export const clampScore = (raw: number): CosineScore => CosineScore.make(raw > 1 ? 1 : raw < -1 ? -1 : raw)

/**
 * `dot / (sqrt(|a|²) * sqrt(|b|²))` accumulated left to right in float64, the raw value before clamping. The sums
 * are independent, so a norm computed once ahead (see `squaredNorm`) gives the same bits as one computed here.
 */
export const rawCosine = (
  a: ArrayLike<number>,
  b: ArrayLike<number>
): Result.Result<number, DimensionMismatch | ZeroVector> => {
  if (a.length !== b.length) return Result.fail(new DimensionMismatch({ expected: a.length, actual: b.length }))
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i]!
    dot += x * y
    na += x * x
    nb += y * y
  }
  if (na === 0 || nb === 0) return Result.fail(new ZeroVector({ length: na === 0 ? a.length : b.length }))
  return Result.succeed(dot / (Math.sqrt(na) * Math.sqrt(nb)))
}

/** Cosine similarity clamped to [-1, 1]; a length mismatch, an empty or an all-zero vector is a typed failure. */
export const cosineSimilarity = (
  a: ArrayLike<number>,
  b: ArrayLike<number>
): Result.Result<CosineScore, DimensionMismatch | ZeroVector> => Result.map(rawCosine(a, b), clampScore)

/** `Σ x*x` summed left to right, as `rawCosine` sums it. */
export const squaredNorm = (v: ArrayLike<number>, from = 0, to = v.length): number => {
  let sum = 0
  for (let i = from; i < to; i++) sum += v[i]! * v[i]!
  return sum
}
