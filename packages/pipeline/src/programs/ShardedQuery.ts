/**
 * A query answered by the shards of a PostgreSQL index: the entry point pins one committed version, fans out in two
 * rounds (statistics, then search) and merges in the one ranking order, so the answer is the undivided index's.
 */

import { type AnswerView, plainPassage } from "@funcpipe/domain/Answer"
import { Bm25Params, FusionConfig, type RetrievalMode } from "@funcpipe/domain/Config"
import type { IndexManifest } from "@funcpipe/domain/Manifest"
import type { ScoreKind } from "@funcpipe/domain/Ranking"
import type { Rule } from "@funcpipe/domain/Rule"
import { Duration, Effect, Option } from "effect"
import { analyze } from "../analysis/Analyzer.ts"
import { call, IndexShard, PartitionSource, ShardsUnavailable, shardEntityId } from "../cluster/Protocol.ts"
import { distinct, fuseHits, type Hit, mergeHits, scoreKind, shardOf, sumStats } from "../cluster/Shards.ts"
import { defaultMode, FUSION_DEPTH } from "../search/Engine.ts"
import { DEFAULT_EF_SEARCH } from "../search/Hnsw.ts"
import { prepareQuery } from "../search/Query.ts"
import { IndexMissing } from "../search/QueryErrors.ts"
import { queryFilter, queryVector, stopWordsOnly } from "./QueryIndex.ts"

/** How a sharded query is answered. */
export interface ShardedQueryOptions {
  /** How many shards the documents are spread over (1 or more). */
  readonly shards: number
  /** Defaults to `defaultMode` of the index's model. */
  readonly mode?: RetrievalMode
  readonly bm25?: Bm25Params
  readonly fusion?: FusionConfig
  /**
   * Search only the chunks of documents that satisfy this rule (not `body`), as `queryIndex` does: applied on every
   * shard before its top k, with the whole index's BM25 statistics, so the answer is the single node's.
   */
  readonly where?: Rule
  /**
   * Score every vector even where the index has an approximate vector index (its graphs); without it, vector and
   * hybrid queries on such an index walk each shard's graphs, as `serve` does.
   */
  readonly exact?: boolean
  /** How many candidates each graph proposes (`efSearch`; default `DEFAULT_EF_SEARCH`). */
  readonly annCandidates?: number
  /** The longest a query may take before `ShardsUnavailable` (default 30 s). */
  readonly timeout?: Duration.Input
}

/**
 * A sharded answer: the answer shape of `queryIndex` (rank, score and chunk of each result, the titles, the asked
 * query), with the committed version it is exact for and its score kind.
 */
export interface ShardedAnswer extends AnswerView {
  readonly token: string
  readonly kind: ScoreKind
  readonly manifest: IndexManifest
}

/**
 * Answers `text` over the shards: pins the current committed version, gathers the shards' statistics for the query
 * terms, sums them, and has every shard score its part with those sums; the merged answer is bit-identical to one
 * undivided index at that version. If the index moves on mid-query, or a runner's connection drops, the whole query
 * starts again (at most 3 times);
 * a query that cannot finish within the timeout fails with `ShardsUnavailable`, never a partial answer.
 */
export const queryShards = Effect.fn("queryShards")(function* (
  text: string,
  topK: number,
  options: ShardedQueryOptions
) {
  const where = (yield* queryFilter(options.where)) ?? null
  const source = yield* PartitionSource
  const clientFor = yield* IndexShard.client
  const ids = Array.from({ length: options.shards }, (_, i) => shardEntityId(i, options.shards))
  const fusion = options.fusion ?? FusionConfig.default
  const params = options.bm25 ?? Bm25Params.default
  /** The hits with their texts and titles, asked of the shards that hold them (in parallel, at `token`). */
  const withTexts = (token: string, hits: ReadonlyArray<Hit>) =>
    Effect.gen(function* () {
      const owners = hits.map((hit) => shardOf(hit.docId, options.shards))
      const filled = hits.slice()
      yield* Effect.forEach(
        [...new Set(owners)],
        (shard) => {
          const mine = hits.flatMap((_, i) => (owners[i] === shard ? [i] : []))
          const chunks = mine.map((i) => ({ docId: hits[i]!.docId, start: hits[i]!.start, end: hits[i]!.end }))
          return Effect.map(call(ids[shard]!, clientFor(ids[shard]!).Fetch({ token, chunks })), (found) =>
            mine.forEach((i, j) => {
              filled[i] = { ...hits[i]!, ...found[j]! }
            })
          )
        },
        { concurrency: "unbounded", discard: true }
      )
      return filled
    })
  const attempt = Effect.gen(function* () {
    const pinned = yield* source.pin
    if (Option.isNone(pinned)) return yield* new IndexMissing({ location: source.location })
    const { manifest, token } = pinned.value
    const prepared = yield* Effect.fromResult(prepareQuery(text, topK, manifest.cleaner))
    const terms = analyze(prepared.text, manifest.analyzer)
    const unique = distinct(terms)
    // As unsharded: a query the model finds nothing in is answered by its words alone, with a note.
    const asked = yield* queryVector(prepared.text, manifest, options.mode ?? defaultMode(manifest.model))
    const { mode, note } = asked
    const vector = asked.vector ?? null
    // The runners keep their shards' graphs in memory, so a sharded query walks them unless told to scan.
    const ef =
      manifest.ann === undefined || options.exact === true ? {} : { ef: options.annCandidates ?? DEFAULT_EF_SEARCH }
    const parts =
      mode === "vector"
        ? ids.map(() => ({ chunks: 0, totalLength: 0, df: unique.map(() => 0) }))
        : yield* Effect.forEach(ids, (id) => call(id, clientFor(id).Stats({ token, terms: unique })), {
            concurrency: "unbounded"
          })
    const stats = sumStats(parts, unique.length)
    const answers = yield* Effect.forEach(
      ids,
      (id) =>
        call(
          id,
          clientFor(id).Search({
            token,
            terms,
            vector,
            mode,
            where,
            k: prepared.topK,
            depth: FUSION_DEPTH,
            k1: params.k1,
            b: params.b,
            ...ef,
            ...stats
          })
        ),
      { concurrency: "unbounded" }
    )
    const hits =
      mode === "hybrid"
        ? yield* withTexts(
            token,
            fuseHits(
              answers.map((a) => a.lexical),
              answers.map((a) => a.vector),
              FUSION_DEPTH,
              prepared.topK,
              fusion
            )
          )
        : mergeHits(
            answers.map((a) => a.hits),
            prepared.topK
          )
    const query = {
      text: prepared.text,
      topK: prepared.topK,
      mode,
      stopWordsOnly: stopWordsOnly(prepared.text, terms),
      ...(note === undefined ? {} : { note })
    }
    const answer: ShardedAnswer = {
      token,
      kind: scoreKind(mode, fusion),
      manifest,
      query,
      results: hits.map((hit, i) => ({
        chunk: { docId: hit.docId, start: hit.start, end: hit.end, text: hit.text },
        score: hit.score,
        rank: i + 1
      })),
      titles: new Map(hits.map((hit) => [hit.docId, hit.title])),
      shown: hits.map((hit) => hit.shown ?? { passage: plainPassage(hit.text), section: [], source: "" }),
      explanations: undefined
    }
    return answer
  })
  const timeout = Duration.fromInputUnsafe(options.timeout ?? "30 seconds")
  return yield* attempt.pipe(
    // Another version, or a lost runner connection: ask again, within the deadline.
    Effect.retry({
      times: 3,
      while: (error) => error._tag === "ShardVersionMoved" || error._tag === "ShardConnectionLost"
    }),
    Effect.timeoutOrElse({
      duration: timeout,
      orElse: () => Effect.fail(new ShardsUnavailable({ seconds: Duration.toSeconds(timeout) }))
    })
  )
})
