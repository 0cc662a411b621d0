/** Answering a query from the stored index, in any retrieval mode, with optional score breakdowns. */
import { Effect, Option, Result, Schema } from "effect"
import { Bm25Params, type RetrievalMode } from "@funcpipe/domain/Config"
import type { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { Embedder } from "../services/Embedder.ts"
import { IndexStore, type SearchData } from "../services/IndexStore.ts"
import { analyze } from "../stages/Analyzer.ts"
import { bm25Scores, explainBm25, type TermExplanation } from "../stages/Bm25.ts"
import { LOCAL_SHA256 } from "../stages/Embed.ts"
import { type ModeScores, modeScores, rankChunks } from "../stages/Modes.ts"
import { prepareQuery } from "../stages/Query.ts"
import type { DimensionMismatch, ZeroVector } from "../stages/Cosine.ts"
import { cosineScores, ModelMismatch, type VectorIndex, vectorIndex } from "../stages/Retrieve.ts"

/** Nothing has been indexed at the location yet. */
export class IndexMissing extends Schema.TaggedError<IndexMissing>()("IndexMissing", {
  location: Schema.String
}) {
  override get message(): string {
    return `there is no index at ${this.location} yet; build one with: funcpipe index <paths...>`
  }
}

/** The stored manifest, or `IndexMissing`. */
export const requireManifest = Effect.fn("requireManifest")(function*() {
  const store = yield* IndexStore
  const manifest = yield* store.manifest
  if (Option.isNone(manifest)) return yield* new IndexMissing({ location: store.location })
  return manifest.value
})

/** The stored manifest, checked to match the `Embedder` in use (`ModelMismatch` otherwise), before anything is scored. */
export const requireManifestFor = Effect.fn("requireManifestFor")(function*() {
  const embedder = yield* Embedder
  const manifest = yield* requireManifest()
  if (manifest.model !== embedder.model || manifest.dimensions !== embedder.dimensions) {
    return yield* new ModelMismatch({ index: manifest.model, query: embedder.model })
  }
  return manifest
})

/**
 * The best mode for an index's model: `local-sha256` vectors only match identical text, so its indexes answer
 * lexically (BM25); a real embedding model's indexes fuse both rankings.
 */
export const defaultMode = (model: ModelLabel): RetrievalMode => (model === LOCAL_SHA256 ? "lexical" : "hybrid")

/** How a query is answered. */
export interface QueryOptions {
  /** Defaults to `defaultMode` of the index's model. */
  readonly mode?: RetrievalMode
  readonly bm25?: Bm25Params
  /** Also return each result's score breakdown. */
  readonly explain?: boolean
}

/** Why a result scored what it did, as far as the mode used each part. */
export interface Explanation {
  readonly cosine: number | null
  readonly bm25: { readonly score: number; readonly terms: ReadonlyArray<TermExplanation> } | null
  readonly vectorRank: number | null
  readonly lexicalRank: number | null
}

/** A query scored against loaded index data in one mode. */
export interface Scorer {
  readonly mode: RetrievalMode
  readonly terms: ReadonlyArray<string>
  readonly scores: ModeScores
  readonly explain: (position: number) => Explanation
}

/** Loaded index data ready for many queries: the vector layout is built once, on first use. */
export interface Scoring {
  readonly data: SearchData
  readonly vectors: () => Result.Result<VectorIndex, ModelMismatch | DimensionMismatch>
}

/** Prepares loaded data for scoring queries against an index of `manifest`'s model. */
export const scoring = (data: SearchData, manifest: { readonly model: ModelLabel; readonly dimensions: number }): Scoring => {
  let vectors: Result.Result<VectorIndex, ModelMismatch | DimensionMismatch> | undefined
  return { data, vectors: () => (vectors ??= vectorIndex(manifest.model, manifest.dimensions, data.chunks)) }
}

/**
 * Scores one cleaned and analyzed query in `mode`. `embedding` is the query's vector, needed by the vector and hybrid
 * modes only.
 */
export const scoreQuery = (
  context: Scoring,
  terms: ReadonlyArray<string>,
  embedding: Embedding | undefined,
  mode: RetrievalMode,
  params: Bm25Params
): Result.Result<Scorer, ModelMismatch | DimensionMismatch | ZeroVector> =>
  Result.gen(function*() {
    const { data } = context
    let cosine: Float64Array | undefined
    if (embedding !== undefined && mode !== "lexical") cosine = yield* cosineScores(embedding, yield* context.vectors())
    let lexical: Float64Array | undefined
    const bm25 = () => (lexical ??= bm25Scores(terms, data.lexical, params))
    const scores = modeScores(mode, data.chunks, () => cosine!, bm25)
    const explain = (position: number): Explanation => ({
      cosine: cosine === undefined ? null : cosine[position]!,
      bm25: mode === "vector" ? null : { score: bm25()[position]!, terms: explainBm25(terms, position, data.lexical, params) },
      vectorRank: scores.vectorRanks.get(position) ?? null,
      lexicalRank: scores.lexicalRanks.get(position) ?? null
    })
    return { mode, terms, scores, explain }
  })

/**
 * Answers `text` from the stored index. The embedder must be the index's model (checked before anything is read or
 * scored); the text is cleaned with the index's clean rules and analyzed with its analyzer; vectors are laid out in
 * one contiguous array and ranked by the same code as the in-memory path. Results follow the ranking order in every
 * mode.
 */
export const queryIndex = Effect.fn("queryIndex")(function*(text: string, topK: number, options: QueryOptions = {}) {
  const store = yield* IndexStore
  const embedder = yield* Embedder
  const manifest = yield* requireManifestFor()
  const prepared = yield* Effect.fromResult(prepareQuery(text, topK, manifest.cleaner))
  const mode = options.mode ?? defaultMode(manifest.model)
  const terms = analyze(prepared.text, manifest.analyzer)
  const embedding = mode === "lexical" ? undefined : (yield* embedder.embedMany([prepared.text]))[0]
  const data = yield* store.searchData(terms)
  const scorer = yield* Effect.fromResult(
    scoreQuery(scoring(data, manifest), terms, embedding, mode, options.bm25 ?? Bm25Params.default)
  )
  const { positions, results } = rankChunks(scorer.scores, data.chunks, prepared.topK)
  const explanations = options.explain === true ? positions.map(scorer.explain) : undefined
  return { manifest, query: { text: prepared.text, topK: prepared.topK, mode, terms }, results, explanations } as const
})
