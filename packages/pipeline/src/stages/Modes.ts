/** The retrieval modes over per-chunk scores: vector (cosine), lexical (BM25) and hybrid (reciprocal rank fusion). */
import type { Chunk } from "@funcpipe/domain/Chunk"
import type { RetrievalMode } from "@funcpipe/domain/Config"
import { Rank, ScoredChunk, type ScoreKind } from "@funcpipe/domain/Ranking"
import { anyScore, type IsCandidate, positiveScore, reciprocalRankFusion, type Top, topChunks, topDocuments } from "./Ranker.ts"

/** How deep each ranking goes before hybrid fusion: enough for document-level evaluation at depth 1000. */
export const FUSION_DEPTH = 1000

/** One mode's scores over the index's chunks, and for hybrid the rank of each chunk in the two fused rankings. */
export interface ModeScores {
  readonly mode: RetrievalMode
  readonly kind: ScoreKind
  readonly scores: Float64Array
  readonly isCandidate: IsCandidate
  readonly vectorRanks: ReadonlyMap<number, number>
  readonly lexicalRanks: ReadonlyMap<number, number>
}

const ranksOf = (ranking: ReadonlyArray<Top>) => new Map(ranking.map((top, i) => [top.position, i + 1] as const))

/**
 * The scores of `mode`: cosine similarities (every chunk with a defined cosine is a candidate), BM25 sums (chunks
 * with at least one query term), or reciprocal rank fusion of the best `depth` chunks of both.
 * `cosine` and `bm25` are only called when the mode needs them.
 */
export const modeScores = (
  mode: RetrievalMode,
  chunks: ReadonlyArray<Chunk>,
  cosine: () => Float64Array,
  bm25: () => Float64Array,
  depth = FUSION_DEPTH
): ModeScores => {
  switch (mode) {
    case "vector":
      return { mode, kind: "cosine", scores: cosine(), isCandidate: anyScore, vectorRanks: new Map(), lexicalRanks: new Map() }
    case "lexical":
      return { mode, kind: "bm25", scores: bm25(), isCandidate: positiveScore, vectorRanks: new Map(), lexicalRanks: new Map() }
    case "hybrid": {
      const vector = topChunks(cosine(), chunks, depth, anyScore)
      const lexical = topChunks(bm25(), chunks, depth, positiveScore)
      return {
        mode,
        kind: "rrf",
        scores: reciprocalRankFusion([vector, lexical], chunks.length),
        isCandidate: positiveScore,
        vectorRanks: ranksOf(vector),
        lexicalRanks: ranksOf(lexical)
      }
    }
  }
}

/** Results in the ranking order, with each result's position in the index's chunk list. */
export interface Ranked {
  readonly results: ReadonlyArray<ScoredChunk>
  readonly positions: ReadonlyArray<number>
}

/** The best `topK` chunks of a mode. */
export const rankChunks = (scores: ModeScores, chunks: ReadonlyArray<Chunk>, topK: number): Ranked =>
  toResults(topChunks(scores.scores, chunks, topK, scores.isCandidate), scores.kind, chunks)

/** The best `topK` documents of a mode, each represented by its best chunk. */
export const rankDocuments = (scores: ModeScores, chunks: ReadonlyArray<Chunk>, topK: number): Ranked =>
  toResults(topDocuments(scores.scores, chunks, topK, scores.isCandidate), scores.kind, chunks)

const toResults = (tops: ReadonlyArray<Top>, kind: ScoreKind, chunks: ReadonlyArray<Chunk>): Ranked => ({
  results: tops.map((top, i) => new ScoredChunk({ chunk: chunks[top.position]!, score: top.score, rank: Rank.make(i + 1), kind })),
  positions: tops.map((top) => top.position)
})
