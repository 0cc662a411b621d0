/**
 * The JSON shapes of answers and manifests, built once for `funcpipe query --json`, `status --json` and the HTTP API.
 * Kept apart from `Api.ts` so that the CLI can print them without loading the HTTP modules.
 */

import type { Chunk } from "./Chunk.ts"
import type { FusionMethod, RetrievalMode } from "./Config.ts"
import type { Explanation, ManifestInfo, QueryResponse } from "./http/Api.ts"
import type { IndexManifest } from "./Manifest.ts"
import { isKeepAll, printRule } from "./Rule.ts"

/** A result as the query programs return it (a domain `RankedChunk`). */
export interface AnswerResult {
  readonly chunk: Chunk
  readonly score: number
  readonly rank: number
}

/** The score breakdown as the engine returns it. */
export interface AnswerExplanation {
  readonly cosine: number | null
  readonly bm25: {
    readonly score: number
    readonly terms: ReadonlyArray<{
      readonly term: string
      readonly tf: number
      readonly df: number
      readonly idf: number
      readonly score: number
    }>
  } | null
  readonly vectorRank: number | null
  readonly lexicalRank: number | null
  readonly fusion: {
    readonly method: FusionMethod
    readonly alpha: number
    readonly lexical: number
    readonly vector: number
  } | null
}

/** A query's answer, as `queryIndex` and `searchPaths` return it. */
export interface AnswerView {
  readonly manifest: { readonly model: string }
  readonly query: {
    readonly text: string
    readonly topK: number
    readonly mode: RetrievalMode
    /** The query has words, but every one is a stop word, so lexical search had nothing to look for. */
    readonly stopWordsOnly: boolean
  }
  readonly results: ReadonlyArray<AnswerResult>
  /** The titles of the results' documents, by doc id. */
  readonly titles: ReadonlyMap<string, string>
  readonly explanations: ReadonlyArray<AnswerExplanation> | undefined
}

const explanationJson = (e: AnswerExplanation): Explanation => ({
  cosine: e.cosine,
  bm25: e.bm25 === null ? null : { score: e.bm25.score, terms: e.bm25.terms },
  vector_rank: e.vectorRank,
  lexical_rank: e.lexicalRank,
  fusion: e.fusion
})

/**
 * The JSON form of an answer (`funcpipe query --json`, `POST /v1/query`): stable keys, documented in the README.
 * `highlights`, when given, holds each result's highlighted spans.
 */
export const answerJson = (
  answer: AnswerView,
  highlights?: ReadonlyArray<ReadonlyArray<readonly [number, number]>>
): QueryResponse => ({
  query: answer.query.text,
  top_k: answer.query.topK,
  mode: answer.query.mode,
  model: answer.manifest.model,
  results: answer.results.map((r, i) => ({
    rank: r.rank,
    score: r.score,
    doc_id: r.chunk.docId,
    title: answer.titles.get(r.chunk.docId) ?? "",
    start: r.chunk.start,
    end: r.chunk.end,
    text: r.chunk.text,
    ...(answer.explanations?.[i] === undefined ? {} : { explain: explanationJson(answer.explanations[i]) }),
    ...(highlights?.[i] === undefined ? {} : { highlights: highlights[i] })
  }))
})

const iso = (millis: number) => new Date(millis).toISOString()

/** An index's settings and counts in the JSON of `funcpipe status --json` and `GET /v1/status`. */
export const manifestJson = (m: IndexManifest): ManifestInfo => ({
  format_version: m.formatVersion,
  model: m.model,
  dimensions: m.dimensions,
  clean_rules: m.cleaner.rules,
  chunk_size: m.chunker.chunkSize,
  overlap: m.chunker.overlap,
  tail_policy: m.chunker.tailPolicy,
  stop_words: m.analyzer.stopWords,
  stemmer: m.analyzer.stemmer,
  keep: m.keep === undefined || isKeepAll(m.keep) ? null : printRule(m.keep),
  created_at: iso(m.createdAt),
  updated_at: iso(m.updatedAt),
  documents: m.documents,
  chunks: m.chunks
})
