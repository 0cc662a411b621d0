/** Vector retrieval: score every chunk against a query and keep the best `topK` in the ranking order. */
import { Result, Schema } from "effect"
import type { Chunk } from "@funcpipe/domain/Chunk"
import type { ModelLabel } from "@funcpipe/domain/Embedding"
import type { SearchQuery } from "@funcpipe/domain/Query"
import { Rank, RankedChunk, rankingOrder, type RankKey } from "@funcpipe/domain/Ranking"
import { clampScore, DimensionMismatch, squaredNorm, ZeroVector } from "./Cosine.ts"

/** The query and the index were embedded by different models, so their vectors cannot be compared. */
export class ModelMismatch extends Schema.TaggedError<ModelMismatch>()("ModelMismatch", {
  index: Schema.String,
  query: Schema.String
}) {
  override get message(): string {
    return `the index was built with the model "${this.index}" but the query was embedded with "${this.query}"; ` +
      `query with the index's model or rebuild the index`
  }
}

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

interface Candidate extends RankKey {
  readonly index: number
}

const candidate = (chunk: Chunk, score: number, index: number): Candidate => ({
  score,
  docId: chunk.docId,
  start: chunk.start,
  end: chunk.end,
  text: chunk.text,
  index
})

/** Max-heap on the ranking order: the root is the worst of the kept candidates. */
const siftDown = (heap: Array<Candidate>, from: number): void => {
  const n = heap.length
  let i = from
  for (;;) {
    const left = 2 * i + 1
    const right = left + 1
    let worst = i
    if (left < n && rankingOrder(heap[left]!, heap[worst]!) > 0) worst = left
    if (right < n && rankingOrder(heap[right]!, heap[worst]!) > 0) worst = right
    if (worst === i) return
    const tmp = heap[i]!
    heap[i] = heap[worst]!
    heap[worst] = tmp
    i = worst
  }
}

const siftUp = (heap: Array<Candidate>, from: number): void => {
  let i = from
  while (i > 0) {
    const parent = (i - 1) >> 1
    if (rankingOrder(heap[i]!, heap[parent]!) <= 0) return
    const tmp = heap[i]!
    heap[i] = heap[parent]!
    heap[parent] = tmp
    i = parent
  }
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
): Result.Result<ReadonlyArray<RankedChunk>, ModelMismatch | DimensionMismatch | ZeroVector> => {
  const q = query.embedding.vector
  if (query.embedding.model !== index.model) {
    return Result.fail(new ModelMismatch({ index: index.model, query: query.embedding.model }))
  }
  const d = index.dimensions
  if (q.length !== d) return Result.fail(new DimensionMismatch({ expected: d, actual: q.length }))
  const qNorm = squaredNorm(q)
  if (qNorm === 0) return Result.fail(new ZeroVector({ length: q.length }))
  const qLength = Math.sqrt(qNorm)
  const { chunks, norms, vectors } = index
  const k = query.topK
  const heap: Array<Candidate> = []
  for (let i = 0; i < chunks.length; i++) {
    const norm = norms[i]!
    if (norm === 0) continue
    let dot = 0
    const row = i * d
    for (let j = 0; j < d; j++) dot += q[j]! * vectors[row + j]!
    const score = clampScore(dot / (qLength * Math.sqrt(norm)))
    if (heap.length < k) {
      heap.push(candidate(chunks[i]!, score, i))
      siftUp(heap, heap.length - 1)
    } else if (score >= heap[0]!.score) {
      // Only build the full key when the score can beat or tie the worst kept candidate.
      const next = candidate(chunks[i]!, score, i)
      if (rankingOrder(next, heap[0]!) < 0) {
        heap[0] = next
        siftDown(heap, 0)
      }
    }
  }
  heap.sort(rankingOrder)
  return Result.succeed(
    heap.map((c, position) => new RankedChunk({ chunk: chunks[c.index]!, score: clampScore(c.score), rank: Rank.make(position + 1) }))
  )
}
