/** A runner's index shards: each loads its part of a PostgreSQL index and answers with the whole index's statistics. */

import { Bm25Params } from "@funcpipe/domain/Config"
import { Effect, Option } from "effect"
import { Entity } from "effect/cluster"
import { shownChunks } from "../analysis/Display.ts"
import type { Partition } from "./PgPartition.ts"
import { IndexShard, PartitionSource, ShardLoadFailed, ShardVersionMoved } from "./Protocol.ts"
import { distinct, shardAnswer, statsOf, withGlobalStats } from "./Shards.ts"

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
            const query = { terms: payload.terms, vector: payload.vector ?? undefined, ef: payload.ef }
            const params = new Bm25Params({ k1: payload.k1, b: payload.b } as Bm25Params)
            const filter = payload.where === null ? undefined : p.snapshot.filter(payload.where)
            const answer = shardAnswer(view, query, payload.mode, params, payload.k, payload.depth, filter)
            // The hits that carry their texts are results as they are: they carry what they show too.
            const shown = shownChunks(p.snapshot.documentText, p.snapshot.manifest.cleaner, answer.hits)
            return { ...answer, hits: answer.hits.map((hit, i) => ({ ...hit, shown: shown[i]! })) }
          })
        ),
      Fetch: ({ payload }) =>
        Effect.flatMap(at(payload.token), (p) =>
          scoring(() => {
            const found = payload.chunks.map(({ docId, end, start }) => {
              const stored = p.snapshot.document(docId)
              const chunk = stored?.chunks.find((c) => c.start === start && c.end === end)
              if (stored === undefined || chunk === undefined) throw new Error(`no chunk ${docId} [${start}, ${end})`)
              return { docId, start, end, text: chunk.text, title: stored.doc.title }
            })
            const shown = shownChunks(p.snapshot.documentText, p.snapshot.manifest.cleaner, found)
            return found.map(({ text, title }, i) => ({ text, title, shown: shown[i]! }))
          })
        )
    })
  }),
  // A shard's documents are costly to load: keep an idle shard in memory for a long while.
  { maxIdleTime: "6 hours" }
)
