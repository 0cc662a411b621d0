/**
 * The shard protocol of sharded serving (on `effect/cluster`): the index shard entity, its three RPCs (statistics,
 * search, fetch), their errors, and where shards read their documents.
 */

import { RetrievalMode } from "@funcpipe/domain/Config"
import { Rule } from "@funcpipe/domain/Rule"
import { Cause, Context, Effect, Layer, Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { makePartitionReader, type PartitionReader } from "./PgPartition.ts"

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
export const call = <A, E, R>(
  shard: string,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | ShardConnectionLost, R> =>
  Effect.catchCause(
    effect,
    (cause): Effect.Effect<never, E | ShardConnectionLost> =>
      Cause.hasInterruptsOnly(cause) ? Effect.fail(new ShardConnectionLost({ shard })) : Effect.failCause(cause)
  )

const ShardError = Schema.Union([ShardVersionMoved, ShardLoadFailed])

/** What a result shows: its passage, the headings it is under and its document's source. */
const ShownSchema = Schema.Struct({
  passage: Schema.String,
  section: Schema.Array(Schema.String),
  source: Schema.String
})

const HitSchema = Schema.Struct({
  score: Schema.Number,
  docId: Schema.String,
  start: Schema.Number,
  end: Schema.Number,
  text: Schema.String,
  title: Schema.String,
  shown: Schema.optionalKey(ShownSchema)
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
    df: Schema.Array(Schema.Number),
    /** Candidates each of the shard's graphs proposes (`efSearch`); absent, every vector is scored. */
    ef: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)))
  },
  success: Schema.Struct({
    hits: Schema.Array(HitSchema),
    lexical: Schema.Array(HitSchema),
    vector: Schema.Array(HitSchema)
  }),
  error: ShardError
})

/**
 * Round three, hybrid only: the text, title and what shows of chunks of the shard at `token`, named by doc id and
 * span.
 */
export const Fetch = Rpc.make("Fetch", {
  payload: {
    token: Schema.String,
    chunks: Schema.Array(Schema.Struct({ docId: Schema.String, start: Schema.Number, end: Schema.Number }))
  },
  success: Schema.Array(Schema.Struct({ text: Schema.String, title: Schema.String, shown: ShownSchema })),
  error: ShardError
})

/** A shard of the index: entity id `<shards>/<shard>`, e.g. `8/3` for the fourth of eight. */
export const IndexShard = Entity.make("IndexShard", [Stats, Search, Fetch])

/** The entity id of shard `shard` of `shards`. */
export const shardEntityId = (shard: number, shards: number): string => `${shards}/${shard}`

/** Where shards read their documents, and entry points their pins: the index at one `postgres://` URL. */
export class PartitionSource extends Context.Service<PartitionSource, PartitionReader>()("pipeline/PartitionSource") {
  static readonly layer = (url: string) => Layer.effect(PartitionSource, makePartitionReader(url))
}
