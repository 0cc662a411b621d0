/**
 * The query engine: scores a query against an index view (segments of typed arrays and lazily read postings) in
 * every retrieval mode, touching only what the mode needs, and selects the top k in the ranking order.
 */

import { type Bm25Params, FusionConfig, type RetrievalMode } from "@funcpipe/domain/Config"
import type { ScoreKind } from "@funcpipe/domain/Ranking"
import { LOCAL_SHA256 } from "../analysis/Embed.ts"
import type { TermExplanation } from "./Bm25.ts"
import type { IndexView, PositionFilter } from "./IndexView.ts"
import { bm25, bm25At, bm25Listed, explainTerms, type LoadedTerm, listPays, loadTerms } from "./Lexical.ts"
import { prunePays, topLexicalPruned } from "./Pruned.ts"
import {
  type Candidates,
  documentTies,
  fuseLinear,
  fuseWeightedRanks,
  fusionShares,
  positiveScore,
  type Top,
  topDocumentsOf,
  topOf
} from "./Ranker.ts"
import { cosineAt, scanVectors, tiesOf, topVectors } from "./VectorScan.ts"

/** How deep each ranking goes before hybrid fusion: enough for document-level evaluation at depth 1000. */
export const FUSION_DEPTH = 1000

/** A query as the engine takes it: its analyzed terms and, for the vector and hybrid modes, its vector. */
export interface EngineQuery {
  readonly terms: ReadonlyArray<string>
  readonly vector: ReadonlyArray<number> | undefined
  /**
   * How many candidates a segment's approximate vector index proposes (`efSearch`), where the index has one;
   * absent, every vector is scanned (exact).
   */
  readonly ef?: number | undefined
  /** Times the stages the ranking runs (postings, scan, fuse) for telemetry, where given. */
  readonly time?: (<A>(stage: EngineStage, f: () => A) => A) | undefined
}

/** Why a result scored what it did, as far as the mode used each part. */
export interface Explanation {
  readonly cosine: number | null
  readonly bm25: { readonly score: number; readonly terms: ReadonlyArray<TermExplanation> } | null
  readonly vectorRank: number | null
  readonly lexicalRank: number | null
  /** In hybrid mode: how the fused score was made and what each ranking added to it. */
  readonly fusion: {
    readonly method: "linear" | "rrf"
    readonly alpha: number
    readonly lexical: number
    readonly vector: number
  } | null
}

/** A query scored in one mode: its candidates, what kind of score they carry, and explanations on demand. */
export interface Scored {
  readonly mode: RetrievalMode
  readonly kind: ScoreKind
  readonly candidates: Candidates
  readonly explain: (position: number) => Explanation
  /** The exact top `k` found without visiting every candidate, or `undefined` where no shortcut applies. */
  readonly shortcut?: (k: number) => Array<Top> | undefined
  /** The filter the candidates were restricted to, if any. */
  readonly filter?: PositionFilter | undefined
}

/** Each ranked position's rank (1 for the best). */
const ranksOf = (ranking: ReadonlyArray<Top>) => new Map(ranking.map((top, i) => [top.position, i + 1] as const))

/**
 * Scores `query` in `mode`: `vector` visits every live chunk with a defined cosine, `lexical` only the chunks holding
 * a query term, `hybrid` fuses the best `depth` of each as `fusion` says. The query's vector is needed by the vector
 * and hybrid modes only. With a `filter`, only its positions are candidates, in every mode and before any top k is
 * taken (the hybrid's `depth` of each ranking included), so a filtered top k is exact; BM25's statistics (N, df, the
 * mean length) stay those of the whole index, so a chunk scores the same with or without a filter.
 */
export const scoreQuery = (
  view: IndexView,
  query: EngineQuery,
  mode: RetrievalMode,
  params: Bm25Params,
  depth = FUSION_DEPTH,
  fusion: FusionConfig = FusionConfig.default,
  filter?: PositionFilter
): Scored => {
  const { terms, vector } = query
  let loaded: Map<string, LoadedTerm> | undefined
  const terms$ = () => (loaded ??= loadTerms(view, terms))
  let lexical: Candidates | undefined
  const lexical$ = (): Candidates => {
    if (lexical !== undefined) return lexical
    const entries = terms$()
    return (lexical = listPays(entries, filter)
      ? bm25Listed(view, entries, terms, params, filter.listed)
      : bm25(view, entries, terms, params, filter).candidates)
  }
  const explainWith =
    (
      vectorRanks: ReadonlyMap<number, number>,
      lexicalRanks: ReadonlyMap<number, number>,
      shares?: { readonly lexical: ReadonlyMap<number, number>; readonly vector: ReadonlyMap<number, number> }
    ) =>
    (position: number): Explanation => ({
      cosine: vector === undefined || mode === "lexical" ? null : cosineAt(view, vector, position),
      bm25:
        mode === "vector"
          ? null
          : {
              score: bm25At(view, terms$(), terms, position, params),
              terms: explainTerms(view, terms$(), terms, position, params)
            },
      vectorRank: vectorRanks.get(position) ?? null,
      lexicalRank: lexicalRanks.get(position) ?? null,
      fusion:
        shares === undefined
          ? null
          : {
              method: fusion.method,
              alpha: fusion.alpha,
              lexical: shares.lexical.get(position) ?? 0,
              vector: shares.vector.get(position) ?? 0
            }
    })
  const none = new Map<number, number>()
  switch (mode) {
    case "vector":
      return {
        mode,
        kind: "cosine",
        candidates: (visit) => scanVectors(view, vector!, visit, undefined, filter),
        explain: explainWith(none, none),
        filter
      }
    case "lexical":
      return {
        mode,
        kind: "bm25",
        candidates: (visit) => lexical$()(visit),
        explain: explainWith(none, none),
        shortcut: (k) =>
          prunes(terms$(), filter) ? topLexicalPruned(view, terms$(), terms, params, k, filter) : undefined,
        filter
      }
    case "hybrid": {
      const time = query.time ?? untimed
      const vectorTop = time("scan", () => topVectors(view, vector!, depth, filter, query.ef))
      const lexicalTop = time("postings", () =>
        prunes(terms$(), filter)
          ? topLexicalPruned(view, terms$(), terms, params, depth, filter)
          : topOf(lexical$(), depth, tiesOf(view))
      )
      const fused = time("fuse", () =>
        fusion.method === "linear"
          ? fuseLinear(lexicalTop, vectorTop, fusion.alpha)
          : fuseWeightedRanks(lexicalTop, vectorTop, fusion.alpha)
      )
      return {
        mode,
        kind: fusion.method,
        candidates: (visit) => {
          for (const [position, score] of fused) if (positiveScore(score)) visit(position, score)
        },
        explain: explainWith(ranksOf(vectorTop), ranksOf(lexicalTop), {
          lexical: fusionShares(fusion.method, fusion.alpha, lexicalTop),
          vector: fusionShares(fusion.method, 1 - fusion.alpha, vectorTop)
        }),
        filter
      }
    }
  }
}

/** The stages of a ranking that the engine times when a query asks it to. */
export type EngineStage = "postings" | "scan" | "fuse"

/** Runs a stage untimed. */
const untimed = <A>(_stage: EngineStage, f: () => A): A => f()

/** Whether a lexical top k is pruned: not when a filter's few positions are scored alone, nor for short lists. */
const prunes = (loaded: Map<string, LoadedTerm>, filter: PositionFilter | undefined): boolean =>
  !listPays(loaded, filter) && prunePays(loaded)

/** The best `k` chunks of a scored query, in the ranking order. */
export const topChunksOf = (view: IndexView, scored: Scored, k: number, query?: EngineQuery): Array<Top> =>
  scored.mode === "vector" && query?.vector !== undefined
    ? topVectors(view, query.vector, k, scored.filter, query.ef)
    : (scored.shortcut?.(k) ?? topOf(scored.candidates, k, tiesOf(view)))

/** The best `k` documents of a scored query, each represented by its best chunk, in the ranking order. */
export const topDocumentsOfView = (view: IndexView, scored: Scored, k: number): Array<Top> => {
  const documents = view.documents()
  const { count, docOf } = documents
  return topDocumentsOf(scored.candidates, k, documentTies(documents), (p) => docOf[p]!, count)
}

/**
 * `topDocumentsOfView`, with how many more of each result document's chunks were candidates besides the one shown
 * (in lexical mode: its other chunks that hold a query term; in vector mode: all its other chunks).
 */
export const topDocumentsWithMore = (
  view: IndexView,
  scored: Scored,
  k: number
): { readonly tops: Array<Top>; readonly more: Array<number> } => {
  const documents = view.documents()
  const { count, docOf } = documents
  const counts = new Int32Array(count)
  const tops = topDocumentsOf(scored.candidates, k, documentTies(documents), (p) => docOf[p]!, count, counts)
  return { tops, more: tops.map((top) => counts[docOf[top.position]!]! - 1) }
}

/**
 * The best mode for an index's model: `local-sha256` vectors only match identical text, so its indexes answer
 * lexically (BM25); a real embedding model's indexes fuse both rankings.
 */
export const defaultMode = (model: string): RetrievalMode => (model === LOCAL_SHA256 ? "lexical" : "hybrid")
