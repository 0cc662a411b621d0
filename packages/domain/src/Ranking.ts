/** The one total ranking order used by every retrieval mode, backend and merge, and the ranked result type. */

import type { Order } from "effect"
import { Schema } from "effect"
import { Chunk } from "./Chunk.ts"

/**
 * Compares strings by Unicode code point. JavaScript's `<` compares UTF-16 units, which puts U+1F600 (a surrogate
 * pair starting at 0xD83D) before U+FF5E; by code point U+FF5E comes first, as in Python.
 */
export const compareCodePoints: Order.Order<string> = (a, b) => {
  if (a === b) return 0
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i)
    let y = b.charCodeAt(i)
    if (x !== y) {
      // Only where both units are at or above the surrogate range can UTF-16 order disagree with code point
      // order: shift surrogates (0xD800–0xDFFF) above 0xE000–0xFFFF, keeping each range's inner order.
      if (x >= 0xd800 && y >= 0xd800) {
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000
      }
      return x < y ? -1 : 1
    }
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0
}

/** What the ranking order looks at. */
export interface RankKey {
  readonly score: number
  readonly docId: string
  readonly start: number
  readonly end: number
  readonly text: string
}

/**
 * The ranking order: score descending, then doc id, start, end and text ascending (strings by code point).
 * It is total on finite scores, so equal keys mean equal results.
 */
export const rankingOrder: Order.Order<RankKey> = (a, b) => {
  if (a.score !== b.score) return a.score > b.score ? -1 : 1
  return keyOrder(a, b)
}

/** The ranking order between equal scores: doc id, start, end, then text (read only if all else is equal). */
export const keyOrder: Order.Order<Omit<RankKey, "score">> = (a, b) => {
  const byDoc = compareCodePoints(a.docId, b.docId)
  if (byDoc !== 0) return byDoc
  if (a.start !== b.start) return a.start < b.start ? -1 : 1
  if (a.end !== b.end) return a.end < b.end ? -1 : 1
  return compareCodePoints(a.text, b.text)
}

/** A cosine similarity: finite and within [-1, 1]. */
export const CosineScore = Schema.Finite.check(Schema.isBetween({ minimum: -1, maximum: 1 })).pipe(
  Schema.brand("CosineScore")
)
export type CosineScore = typeof CosineScore.Type

/** A 1-based position in a result list. */
export const Rank = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.brand("Rank"))
export type Rank = typeof Rank.Type

/** The ranking key of a scored chunk. */
export const rankKey = (chunk: Chunk, score: number): RankKey => ({
  score,
  docId: chunk.docId,
  start: chunk.start,
  end: chunk.end,
  text: chunk.text
})

/** What a score measures: cosine similarity, a BM25 sum, or a reciprocal rank fusion. */
export const ScoreKind = Schema.Literals(["cosine", "bm25", "rrf", "linear"])
export type ScoreKind = typeof ScoreKind.Type

/**
 * One retrieval result, of any mode: the chunk, its score and its 1-based rank. The score's range depends on its
 * kind: cosine in [-1, 1], BM25 above 0, a fused score in (0, 1]. Results of every mode are ordered by `rankingOrder`.
 * The CLI, the server and library callers all get this one type.
 */
export class RankedChunk extends Schema.Class<RankedChunk>("domain/RankedChunk")(
  Schema.Struct({ chunk: Chunk, score: Schema.Finite, rank: Rank, kind: ScoreKind }).check(
    Schema.makeFilter((r: { readonly score: number; readonly kind: ScoreKind }) =>
      (
        r.kind === "cosine"
          ? r.score >= -1 && r.score <= 1
          : r.kind === "bm25"
            ? r.score > 0
            : r.score > 0 && r.score <= 1
      )
        ? undefined
        : { path: ["score"], issue: `a ${r.kind} score cannot be ${r.score}` }
    )
  )
) {}
