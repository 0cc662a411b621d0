/** Measuring retrieval quality on a test collection: index its corpus, run its queries, score against its judgements. */

import {
  AnalyzerConfig,
  Bm25Params,
  type ChunkerConfig,
  type FusionConfig,
  type RetrievalMode
} from "@funcpipe/domain/Config"
import type { AnnConfig } from "@funcpipe/domain/Manifest"
import type { Rule } from "@funcpipe/domain/Rule"
import { Clock, Effect, FileSystem, Path, Result, Schema } from "effect"
import { analyze } from "../analysis/Analyzer.ts"
import { parseQrels, parseQueries } from "../eval/Collection.ts"
import { type MetricValues, meanMetrics, queryMetrics } from "../eval/Metrics.ts"
import { systemReason } from "../platform/SystemReason.ts"
import { defaultMode, FUSION_DEPTH, scoreQuery, topDocumentsOfView } from "../search/Engine.ts"
import { type ExpansionConfig, expandQuery } from "../search/Expansion.ts"
import { DEFAULT_EF_SEARCH } from "../search/Hnsw.ts"
import { prepareQuery } from "../search/Query.ts"
import { topVectors } from "../search/VectorScan.ts"
import { IndexStore, readSnapshot } from "../store/IndexStore.ts"
import { type IndexReport, indexPaths } from "./IndexRun.ts"
import { embedQueries, openSnapshot } from "./QueryIndex.ts"

/** The folder is not a test collection FuncPipe can read. */
export class CollectionInvalid extends Schema.TaggedError<CollectionInvalid>()("CollectionInvalid", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `${this.path} is not a test collection: ${this.reason} (expected corpus.jsonl, queries.jsonl and qrels.tsv)`
  }
}

/** How deep each query's document ranking goes: MAP and recall@1000 look this far. */
export const EVAL_DEPTH = 1000

/** How a collection is evaluated. */
export interface EvalOptions {
  readonly mode?: RetrievalMode
  readonly bm25?: Bm25Params
  /** How hybrid mode fuses its rankings (default `FusionConfig.default`). */
  readonly fusion?: FusionConfig
  readonly chunker?: ChunkerConfig
  readonly analyzer?: AnalyzerConfig
  /** An existing index keeps its analyzer version (see `IndexOptions.analyzerVersionFromIndex`). */
  readonly analyzerVersionFromIndex?: boolean
  /** Which documents of the corpus to index (default: all). */
  readonly keep?: Rule
  /** Expand each query from its best first-pass chunks (pseudo-relevance feedback); off by default. */
  readonly expand?: ExpansionConfig
  readonly rebuild?: boolean
  /** The collection index's approximate vector index (see `IndexOptions.ann`); absent, the index keeps its own. */
  readonly ann?: AnnConfig | "exact"
  /** Called while indexing (documents) and while querying (queries). */
  readonly progress?: (stage: "indexing" | "querying", done: number, total: number) => Effect.Effect<void>
}

/** One query's outcome: its ranked documents and, if it is judged, its metrics. */
export interface QueryOutcome {
  readonly queryId: string
  readonly results: ReadonlyArray<{ readonly docId: string; readonly score: number }>
  readonly metrics: MetricValues | null
}

/** The evaluation of one collection in one mode. */
export interface Evaluation {
  readonly collection: string
  readonly mode: RetrievalMode
  readonly index: IndexReport
  readonly queries: number
  readonly metrics: MetricValues
  readonly perQuery: ReadonlyArray<QueryOutcome>
  readonly elapsedMillis: number
  /**
   * With an approximate vector index, and a mode that embeds queries: the share of each query's exact top 10 chunks
   * (by the full scan) that the index's graphs find at the default efSearch; `null` otherwise.
   */
  readonly annRecall: number | null
}

/**
 * Indexes `<dir>/corpus.jsonl` (incrementally: a second run reuses the index), runs every query of
 * `<dir>/queries.jsonl` with document-level results (a document ranks by its best chunk, EVAL_DEPTH deep), and
 * averages the metrics over the queries judged in `<dir>/qrels.tsv`.
 */
export const evaluateCollection = Effect.fn("evaluateCollection")(function* (dir: string, options: EvalOptions = {}) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const store = yield* IndexStore
  const startedAt = yield* Clock.currentTimeMillis
  const progress = options.progress ?? (() => Effect.void)

  const folder = yield* fs
    .stat(dir)
    .pipe(Effect.mapError((error) => new CollectionInvalid({ path: dir, reason: systemReason(error) })))
  if (folder.type !== "Directory") {
    return yield* new CollectionInvalid({ path: dir, reason: "it is a file, not a folder" })
  }

  /** Reads and parses one file of the collection; any problem is the collection's. */
  const readParsed = <A>(
    name: string,
    parse: (text: string, source: string) => Result.Result<A, { readonly message: string }>
  ) =>
    fs.readFileString(path.join(dir, name)).pipe(
      Effect.mapError(
        (error) =>
          new CollectionInvalid({
            path: dir,
            reason:
              error.reason._tag === "NotFound" ? `${name} is missing` : `cannot read ${name}: ${systemReason(error)}`
          })
      ),
      Effect.flatMap((text) =>
        Effect.fromResult(
          Result.mapError(
            parse(text, path.join(dir, name)),
            (e) => new CollectionInvalid({ path: dir, reason: e.message })
          )
        )
      )
    )
  const queries = yield* readParsed("queries.jsonl", parseQueries)
  const qrels = yield* readParsed("qrels.tsv", parseQrels)
  const corpus = path.join(dir, "corpus.jsonl")
  if (!(yield* fs.exists(corpus).pipe(Effect.orElseSucceed(() => false)))) {
    return yield* new CollectionInvalid({ path: dir, reason: "corpus.jsonl is missing" })
  }

  const index = yield* indexPaths([corpus], {
    ...(options.chunker === undefined ? {} : { chunker: options.chunker }),
    analyzer: options.analyzer ?? AnalyzerConfig.default,
    analyzerVersionFromIndex: options.analyzerVersionFromIndex === true,
    ...(options.keep === undefined ? {} : { keep: options.keep }),
    rebuild: options.rebuild === true,
    ...(options.ann === undefined ? {} : { ann: options.ann }),
    // The index is this collection's own, mirroring one file: deleting what left the corpus (or the keep rule) is safe.
    prune: true,
    progress: (done, total) => progress("indexing", done, total)
  })
  const params = options.bm25 ?? Bm25Params.default
  const { annRecall, mode, perQuery, rankings } = yield* Effect.scoped(
    Effect.gen(function* () {
      const snapshot = yield* openSnapshot()
      const { manifest } = snapshot
      const mode = options.mode ?? defaultMode(manifest.model)
      // A query that cleans to nothing cannot be asked; it stays in the run with no results.
      const prepared = queries.map((q) => {
        const p = prepareQuery(q.text, EVAL_DEPTH, manifest.cleaner)
        return Result.isSuccess(p)
          ? { id: q.id, text: p.success.text, terms: analyze(p.success.text, manifest.analyzer) }
          : { id: q.id, text: null, terms: [] }
      })
      const askable = prepared.filter((q) => q.text !== null)
      const embeddings =
        mode === "lexical"
          ? []
          : yield* embedQueries(
              askable.map((q) => q.text!),
              manifest
            )
      const embeddingOf = new Map(askable.map((q, i) => [q.id, embeddings[i]] as const))
      const rankings = new Map<string, ReadonlyArray<string>>()
      const perQuery: Array<QueryOutcome> = []
      let found = 0
      let wanted = 0
      for (let i = 0; i < prepared.length; i++) {
        const q = prepared[i]!
        let results: Array<{ readonly docId: string; readonly score: number }> = []
        if (q.text !== null) {
          const expand = options.expand
          const terms =
            expand === undefined || mode === "vector"
              ? q.terms
              : yield* readSnapshot(store.location, () =>
                  expandQuery(snapshot, q.terms, params, expand, (t) => analyze(t, manifest.analyzer))
                )
          const query = { terms, vector: embeddingOf.get(q.id)?.vector }
          const vector = query.vector
          if (manifest.ann !== undefined && vector !== undefined) {
            // The graphs' recall: the exact top 10 chunks against what they find.
            const { approximate, exact } = yield* readSnapshot(store.location, () => ({
              exact: topVectors(snapshot, vector, 10),
              approximate: topVectors(snapshot, vector, 10, undefined, DEFAULT_EF_SEARCH)
            }))
            const got = new Set(approximate.map((top) => top.position))
            found += exact.filter((top) => got.has(top.position)).length
            wanted += exact.length
          }
          results = yield* readSnapshot(store.location, () =>
            topDocumentsOfView(
              snapshot,
              scoreQuery(snapshot, query, mode, params, FUSION_DEPTH, options.fusion),
              EVAL_DEPTH
            ).map((top) => ({
              docId: snapshot.keyOf(top.position).docId,
              score: top.score
            }))
          )
        }
        const ranking = results.map((r) => r.docId)
        rankings.set(q.id, ranking)
        const judged = qrels.get(q.id)
        perQuery.push({ queryId: q.id, results, metrics: judged === undefined ? null : queryMetrics(ranking, judged) })
        if ((i + 1) % 10 === 0 || i + 1 === prepared.length) yield* progress("querying", i + 1, prepared.length)
      }
      return { mode, perQuery, rankings, annRecall: wanted === 0 ? null : found / wanted }
    })
  )
  const { metrics, queries: judgedQueries } = meanMetrics(rankings, qrels)
  return {
    collection: dir,
    mode,
    index,
    queries: judgedQueries,
    metrics,
    perQuery,
    elapsedMillis: (yield* Clock.currentTimeMillis) - startedAt,
    annRecall
  } satisfies Evaluation
})
