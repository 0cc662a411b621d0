/** Vector retrieval: score every chunk against a query and keep the best `topK` in the ranking order. */

import type { Chunk } from "@funcpipe/domain/Chunk"
import type { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import type { SearchQuery } from "@funcpipe/domain/Query"
import { Rank, RankedChunk } from "@funcpipe/domain/Ranking"
import { Result } from "effect"
import { clampScore, squaredNorm } from "./Cosine.ts"
import { DimensionMismatch, ModelMismatch, ZeroVector } from "./QueryErrors.ts"
import { anyScore, topChunks } from "./Ranker.ts"

/**
 * Chunks with their vectors laid out in one contiguous `Float64Array` (row `i` holds chunk `i`) and each row's
 * squared norm computed once. Every chunk has the index's model and dimensions.
 */
export interface VectorIndex {
  readonly model: ModelLabel
  readonly dimensions: number
  readonly chunks: ReadonlyArray<Chunk>
  readonly vectors: Float64Array
  readonly norms: Float64Array
}

/** Lays out the chunks' vectors; every chunk must carry `model` and vectors of `dimensions` components. */
export const vectorIndex = (
  model: ModelLabel,
  dimensions: number,
  chunks: ReadonlyArray<Chunk>
): Result.Result<VectorIndex, ModelMismatch | DimensionMismatch> => {
  const vectors = new Float64Array(chunks.length * dimensions)
  const norms = new Float64Array(chunks.length)
  for (let i = 0; i < chunks.length; i++) {
    const { model: chunkModel, vector } = chunks[i]!.embedding
    if (chunkModel !== model) return Result.fail(new ModelMismatch({ index: model, query: chunkModel }))
    if (vector.length !== dimensions) {
      return Result.fail(new DimensionMismatch({ expected: dimensions, actual: vector.length }))
    }
    vectors.set(vector, i * dimensions)
    norms[i] = squaredNorm(vector)
  }
  return Result.succeed({ model, dimensions, chunks, vectors, norms })
}

/**
 * The clamped cosine similarity of the query with every chunk, in chunk order; NaN for a chunk whose vector is all
 * zeros (its cosine is undefined). Fails when the query's model or dimensions differ from the index's, or when the
 * query vector is all zeros.
 */
export const cosineScores = (
  embedding: Embedding,
  index: VectorIndex
): Result.Result<Float64Array, ModelMismatch | DimensionMismatch | ZeroVector> => {
  const q = embedding.vector
  if (embedding.model !== index.model)
    return Result.fail(new ModelMismatch({ index: index.model, query: embedding.model }))
  const d = index.dimensions
  if (q.length !== d) return Result.fail(new DimensionMismatch({ expected: d, actual: q.length }))
  const qNorm = squaredNorm(q)
  if (qNorm === 0) return Result.fail(new ZeroVector({ length: q.length }))
  const qLength = Math.sqrt(qNorm)
  const { norms, vectors } = index
  const scores = new Float64Array(norms.length)
  for (let i = 0; i < norms.length; i++) {
    const norm = norms[i]!
    if (norm === 0) {
      scores[i] = NaN
      continue
    }
    let dot = 0
    const row = i * d
    for (let j = 0; j < d; j++) dot += q[j]! * vectors[row + j]!
    scores[i] = clampScore(dot / (qLength * Math.sqrt(norm)))
  }
  return Result.succeed(scores)
}

/**
 * Scores every chunk by clamped cosine similarity and returns the best `query.topK` as `RankedChunk`s in the ranking
 * order (score descending, then doc id, start, end, text by code point). Extra memory is O(topK): a bounded heap,
 * never a sort of all chunks. Fails when the query's model or dimensions differ from the index's, or when the query
 * vector is all zeros; an all-zero chunk vector can never match and is passed over.
 */
export const retrieve = (
  query: SearchQuery,
  index: VectorIndex
): Result.Result<ReadonlyArray<RankedChunk>, ModelMismatch | DimensionMismatch | ZeroVector> =>
  Result.map(cosineScores(query.embedding, index), (scores) =>
    topChunks(scores, index.chunks, query.topK, anyScore).map(
      (top, i) =>
        new RankedChunk({
          chunk: index.chunks[top.position]!,
          score: clampScore(top.score),
          rank: Rank.make(i + 1),
          kind: "cosine"
        })
    )
  )
