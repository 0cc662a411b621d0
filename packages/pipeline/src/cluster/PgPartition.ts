/**
 * A shard's view of a PostgreSQL index: the committed version and manifest (what a query pins), and the documents of
 * one shard loaded into a snapshot, both read so that they belong to one committed state.
 */
import { PgClient } from "@effect/sql-pg"
import type { IndexManifest } from "@funcpipe/domain/Manifest"
import { Effect, Option, Result } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, type SqlError } from "effect/sql"
import type { Snapshot } from "../store/IndexStore.ts"
import { storeError } from "../store/postgres/PgFailures.ts"
import { graphTablesOf } from "../store/postgres/PgGraphs.ts"
import { PG_LAYOUT } from "../store/postgres/PgIndexStore.ts"
import { decodeManifest, loadSnapshot } from "../store/postgres/PgRows.ts"
import { parsePgUrl, scrubUrl } from "../store/postgres/PgUrl.ts"
import { IndexCorrupt, type StoreError, StoreFailure } from "../store/StoreErrors.ts"

/** A committed state of the index: its token (generation and version, changed by every commit) and manifest. */
export interface Pin {
  readonly token: string
  readonly manifest: IndexManifest
}

/** A shard's documents of one committed state, as a snapshot, with that state's pin. */
export interface Partition extends Pin {
  readonly snapshot: Snapshot
}

/** Reads pins and partitions of the index at a `postgres://` URL. */
export interface PartitionReader {
  readonly location: string
  /** The index's current committed state, or none before the first run. */
  readonly pin: Effect.Effect<Option.Option<Pin>, StoreError>
  /** The documents of shard `shard` of `shards` at the current committed state, or none before the first run. */
  readonly load: (shard: number, shards: number) => Effect.Effect<Option.Option<Partition>, StoreError>
}

/** A reader over its own connection pool, closed with the scope. */
export const makePartitionReader = Effect.fn("makePartitionReader")(function* (url: string) {
  const target = yield* Effect.fromResult(parsePgUrl(url)).pipe(
    Effect.mapError((reason) => new StoreFailure({ location: scrubUrl(url), reason }))
  )
  const { location, schema } = target
  const sql = yield* PgClient.make({
    url: target.url,
    maxConnections: 2,
    connectTimeout: 10_000,
    applicationName: "funcpipe-shard",
    maxMessageSize: 1024 * 1024 * 1024
  }).pipe(
    Effect.provide(Reactivity.layer),
    Effect.mapError((error) => storeError(target, "connecting", error))
  )
  const corrupt = (detail: string) => new IndexCorrupt({ location, detail })
  const meta = sql(`${schema}.meta`)
  const documents = sql(`${schema}.documents`)
  const graphTables = graphTablesOf(sql, schema)

  /** The pin, from one statement (so one committed state); none when the schema has no index yet. */
  const readPin = Effect.gen(function* () {
    const exists = yield* sql<{ readonly n: number }>`
      SELECT count(*)::int AS n FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${schema} AND c.relname = 'meta'`
    if (exists[0]!.n === 0) return Option.none<Pin>()
    const rows = yield* sql<{ readonly key: string; readonly value: string }>`SELECT key, value FROM ${meta}`
    const values = new Map(rows.map((row) => [row.key, row.value]))
    if (values.get("application") !== "funcpipe") return yield* corrupt("its settings table is not FuncPipe's")
    if (Number(values.get("layout")) !== PG_LAYOUT) {
      const reason = `its layout is ${values.get("layout")}; shards read ${PG_LAYOUT}`
      return yield* new StoreFailure({ location, reason })
    }
    const json = values.get("manifest")
    if (json === undefined) return Option.none<Pin>()
    const decoded = decodeManifest(json)
    if (Result.isFailure(decoded)) return yield* corrupt(`manifest: ${decoded.failure}`)
    return Option.some({ token: `${values.get("generation")}:${values.get("version")}`, manifest: decoded.success })
  })

  const inOneState = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>) =>
    sql.withTransaction(effect).pipe(
      Effect.provideService(SqlClient.BeginTransaction, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
      Effect.catchIf(
        (error): error is SqlError.SqlError => (error as { readonly _tag?: unknown })._tag === "SqlError",
        (error) => Effect.fail(storeError(target, what, error))
      )
    )

  const pin = inOneState("reading the index's version", readPin)

  const load = (shard: number, shards: number) =>
    inOneState(
      "loading a shard",
      Effect.gen(function* () {
        const found = yield* readPin
        if (Option.isNone(found)) return Option.none<Partition>()
        // The shard of each row as `shardOf` computes it (see cluster/Shards.ts).
        const inShard = sql`('x' || lpad(substr(md5(doc_id), 1, 8), 16, '0'))::bit(64)::bigint % ${shards} = ${shard}`
        const snapshot = yield* loadSnapshot(sql, documents, location, found.value.manifest, inShard, graphTables)
        return Option.some({ ...found.value, snapshot })
      })
    )

  return { location, pin, load } satisfies PartitionReader
})
