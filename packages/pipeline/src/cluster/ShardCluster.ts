/**
 * Sharded serving on `effect/cluster`: each shard of a PostgreSQL index is an entity that loads its documents from
 * the store and answers its local top k with the whole index's BM25 statistics; the entry point pins one committed
 * version, fans out in two rounds (statistics, then search) and merges in the one ranking order.
 */

import { Bm25Params, FusionConfig, RetrievalMode } from "@funcpipe/domain/Config"
import type { ScoreKind } from "@funcpipe/domain/Ranking"
import { Rule } from "@funcpipe/domain/Rule"
import { Cause, Context, Duration, Effect, Layer, Option, Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { analyze } from "../analysis/Analyzer.ts"
import { embedQueries, IndexMissing, queryFilter } from "../programs/QueryIndex.ts"
import { defaultMode, FUSION_DEPTH } from "../search/Engine.ts"
import { prepareQuery } from "../search/Query.ts"
import { makePartitionReader, type Partition, type PartitionReader } from "./PgPartition.ts"
import {
  fuseHits,
  type Hit,
  mergeHits,
  scoreKind,
  shardAnswer,
  shardOf,
  statsOf,
  sumStats,
  withGlobalStats
} from "./Shards.ts"

/** The shard had loaded, or could load, only another committed version than the one the query pinned. */
export class ShardVersionMoved extends Schema.TaggedError<ShardVersionMoved>()("ShardVersionMoved", {
  wanted: Schema.String,
  found: Schema.String
}) {
  override get message(): string {
    return `the index changed while the query ran (asked for version ${this.wanted}, the store has ${this.found})`
  }
}

/** A shard could not read its documents, or they were damaged. */
export class ShardLoadFailed extends Schema.TaggedError<ShardLoadFailed>()("ShardLoadFailed", {
  reason: Schema.String
}) {
  override get message(): string {
    return `a shard could not load its documents: ${this.reason}`
  }
}

/** Not every shard answered within the query's time limit (a runner died and its shards are not yet reassigned). */
export class ShardsUnavailable extends Schema.TaggedError<ShardsUnavailable>()("ShardsUnavailable", {
  seconds: Schema.Number
}) {
  override get message(): string {
    return (
      `not every shard answered within ${this.seconds} s (a runner may have stopped; its shards move to ` +
      `another runner within the lock expiry); no partial answer is given, try again`
    )
  }
}

/** The connection to a shard's runner was lost mid-call (the runner stopped, or did not answer in time). */
export class ShardConnectionLost extends Schema.TaggedError<ShardConnectionLost>()("ShardConnectionLost", {
  shard: Schema.String
}) {
  override get message(): string {
    return `the connection to the runner of shard ${this.shard} was lost mid-query`
  }
}

/**
 * A call to a shard, with a lost connection (which the cluster's client reports as an interruption of the call, not
 * of the caller) turned into `ShardConnectionLost`, so the query can ask again rather than end without a reason.
 */
const call = <A, E, R>(shard: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | ShardConnectionLost, R> =>
  Effect.catchCause(
    effect,
    (cause): Effect.Effect<never, E | ShardConnectionLost> =>
      Cause.hasInterruptsOnly(cause) ? Effect.fail(new ShardConnectionLost({ shard })) : Effect.failCause(cause)
  )

const ShardError = Schema.Union([ShardVersionMoved, ShardLoadFailed])

const HitSchema = Schema.Struct({
  score: Schema.Number,
  docId: Schema.String,
  start: Schema.Number,
  end: Schema.Number,
  text: Schema.String,
  title: Schema.String
})

/** Round one: the shard's live chunks, their summed lengths and each of the distinct `terms`' df, at `token`. */
export const Stats = Rpc.make("Stats", {
  payload: { token: Schema.String, terms: Schema.Array(Schema.String) },
  success: Schema.Struct({ chunks: Schema.Number, totalLength: Schema.Number, df: Schema.Array(Schema.Number) }),
  error: ShardError
})

/**
 * Round two: the shard's answer at `token`, scored with the whole index's statistics (`df` follows the distinct
 * terms of `terms` in first-seen order).
 */
export const Search = Rpc.make("Search", {
  payload: {
    token: Schema.String,
    terms: Schema.Array(Schema.String),
    vector: Schema.NullOr(Schema.Array(Schema.Number)),
    mode: RetrievalMode,
    where: Schema.NullOr(Rule),
    k: Schema.Number,
    depth: Schema.Number,
    k1: Schema.Number,
    b: Schema.Number,
    chunks: Schema.Number,
    totalLength: Schema.Number,
    df: Schema.Array(Schema.Number)
  },
  success: Schema.Struct({
    hits: Schema.Array(HitSchema),
    lexical: Schema.Array(HitSchema),
    vector: Schema.Array(HitSchema)
  }),
  error: ShardError
})

/** Round three, hybrid only: the text and title of chunks of the shard at `token`, named by doc id and span. */
export const Fetch = Rpc.make("Fetch", {
  payload: {
    token: Schema.String,
    chunks: Schema.Array(Schema.Struct({ docId: Schema.String, start: Schema.Number, end: Schema.Number }))
  },
  success: Schema.Array(Schema.Struct({ text: Schema.String, title: Schema.String })),
  error: ShardError
})

/** A shard of the index: entity id `<shards>/<shard>`, e.g. `8/3` for the fourth of eight. */
export const IndexShard = Entity.make("IndexShard", [Stats, Search, Fetch])

/** The entity id of shard `shard` of `shards`. */
export const shardEntityId = (shard: number, shards: number): string => `${shards}/${shard}`

const distinct = (terms: ReadonlyArray<string>): Array<string> => [...new Set(terms)]

/** Where shards read their documents, and entry points their pins: the index at one `postgres://` URL. */
export class PartitionSource extends Context.Service<PartitionSource, PartitionReader>()("pipeline/PartitionSource") {
  static readonly layer = (url: string) => Layer.effect(PartitionSource, makePartitionReader(url))
}

/**
 * The shard entities of a runner. A shard loads its documents on its first request and whenever a query pins a newer
 * version; it answers only for the version the query pinned, else `ShardVersionMoved`, so no query mixes versions.
 * Its state is lost when its shard moves to another runner, and the new owner loads again from the store.
 */
export const layerShardEntities = IndexShard.toLayer(
  Effect.gen(function* () {
    const address = yield* Entity.CurrentAddress
    const [shards, shard] = address.entityId.split("/").map(Number) as [number, number]
    const source = yield* PartitionSource
    let current: Partition | undefined
    const failed = (error: { readonly message: string }) => new ShardLoadFailed({ reason: error.message })
    const at = (token: string) =>
      Effect.gen(function* () {
        if (current?.token === token) return current
        if (current !== undefined) {
          // Reload only if the store moved on from what is loaded (a stale pin is refused without reading).
          const pin = yield* Effect.mapError(source.pin, failed)
          if (Option.isSome(pin) && pin.value.token === current.token) {
            return yield* new ShardVersionMoved({ wanted: token, found: current.token })
          }
        }
        const loaded = yield* Effect.mapError(source.load(shard, shards), failed)
        if (Option.isNone(loaded)) return yield* new ShardVersionMoved({ wanted: token, found: "none" })
        current = loaded.value
        if (current.token !== token) return yield* new ShardVersionMoved({ wanted: token, found: current.token })
        return current
      })
    const scoring = <A>(f: () => A) =>
      Effect.try({ try: f, catch: (error) => new ShardLoadFailed({ reason: String(error) }) })
    return IndexShard.of({
      Stats: ({ payload }) =>
        Effect.flatMap(at(payload.token), (p) => scoring(() => statsOf(p.snapshot, payload.terms))),
      Search: ({ payload }) =>
        Effect.flatMap(at(payload.token), (p) =>
          scoring(() => {
            const view = withGlobalStats(p.snapshot, distinct(payload.terms), payload)
            const query = { terms: payload.terms, vector: payload.vector ?? undefined }
            const params = new Bm25Params({ k1: payload.k1, b: payload.b } as Bm25Params)
            const filter = payload.where === null ? undefined : p.snapshot.filter(payload.where)
            return shardAnswer(view, query, payload.mode, params, payload.k, payload.depth, filter)
          })
        ),
      Fetch: ({ payload }) =>
        Effect.flatMap(at(payload.token), (p) =>
          scoring(() =>
            payload.chunks.map(({ docId, end, start }) => {
              const stored = p.snapshot.document(docId)
              const chunk = stored?.chunks.find((c) => c.start === start && c.end === end)
              if (stored === undefined || chunk === undefined) throw new Error(`no chunk ${docId} [${start}, ${end})`)
              return { text: chunk.text, title: stored.doc.title }
            })
          )
        )
    })
  }),
  // A shard's documents are costly to load: keep an idle shard in memory for a long while.
  { maxIdleTime: "6 hours" }
)

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
  /** The longest a query may take before `ShardsUnavailable` (default 30 s). */
  readonly timeout?: Duration.Input
}

/** A sharded answer: the version it is exact for, the mode and score kind, and the results in the ranking order. */
export interface ShardedAnswer {
  readonly token: string
  readonly mode: RetrievalMode
  readonly kind: ScoreKind
  readonly hits: ReadonlyArray<Hit>
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
    const mode = options.mode ?? defaultMode(manifest.model)
    const terms = analyze(prepared.text, manifest.analyzer)
    const unique = distinct(terms)
    const vector = mode === "lexical" ? null : (yield* embedQueries([prepared.text], manifest))[0]!.vector
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
    return { token, mode, kind: scoreKind(mode, fusion), hits } satisfies ShardedAnswer
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
