/**
 * The index in a PostgreSQL schema, for teams: one row per document holding its fields and its search data as
 * typed-array `bytea`s, read page by page into a `LoadedSnapshot` and scored in Node by the same engine as the SQLite
 * file.
 */

import { randomUUID } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { oneLine } from "@funcpipe/domain/Decode"
import type { IndexManifest } from "@funcpipe/domain/Manifest"
import { Effect, Layer, Option, Result } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, type SqlError } from "effect/sql"
import { PackReader } from "../../index/BodyPack.ts"
import {
  emptyWriter,
  IndexStore,
  type IndexWriter,
  type Snapshot,
  type StoredEntry,
  type TransactionOptions
} from "../IndexStore.ts"
import { storedDocOf } from "../LoadedSnapshot.ts"
import { ForeignSchema, IndexCorrupt, IndexTooNew, IndexTooOld, type StoreError, StoreFailure } from "../StoreErrors.ts"
import { storeError } from "./PgFailures.ts"
import {
  decodeManifest,
  decodeRoots,
  encodeManifest,
  FLUSH_BYTES,
  FLUSH_ROWS,
  loadSnapshot,
  type Row,
  rowOf
} from "./PgRows.ts"
import { type PgTarget, parsePgUrl, scrubUrl } from "./PgUrl.ts"

/** How the PostgreSQL store connects and waits. */
export interface PgStoreOptions {
  /** Connections in the pool (default 4: a writer and a few readers). */
  readonly maxConnections?: number
  /** How long a writer waits for another's lock before `IndexBusy` (default 2 s, as the SQLite store). */
  readonly busyTimeoutMillis?: number
  /** How long opening a connection may take before `IndexUnreachable` (default 10 s). */
  readonly connectTimeoutMillis?: number
}

/**
 * The index in the schema the URL names on a PostgreSQL server (see `parsePgUrl`). Nothing connects until the first
 * use; a schema that does not exist, or has no tables, is an empty index until the first transaction creates it.
 * Writers take a transaction-scoped advisory lock, so a second one fails with `IndexBusy`; readers read in one
 * repeatable-read transaction, so they see one committed state. A snapshot is the whole index loaded into memory and
 * kept while no transaction commits, so a server that holds it answers without asking the database again.
 */
export const layerPostgres = (url: string, options: PgStoreOptions = {}): Layer.Layer<IndexStore, StoreError> =>
  Layer.effect(
    IndexStore,
    Effect.gen(function* () {
      const target = yield* Effect.fromResult(parsePgUrl(url)).pipe(
        Effect.mapError((reason) => new StoreFailure({ location: scrubUrl(url), reason }))
      )
      const sql = yield* PgClient.make({
        url: target.url,
        maxConnections: options.maxConnections ?? 4,
        connectTimeout: options.connectTimeoutMillis ?? 10_000,
        applicationName: "funcpipe",
        // A document's row (its vectors above all) can be far larger than the driver's default 16 MiB.
        maxMessageSize: 1024 * 1024 * 1024
      }).pipe(
        Effect.provide(Reactivity.layer),
        Effect.mapError((error) => storeError(target, "connecting", error))
      )
      return make(sql, target, options)
    })
  )

/** The layout of the tables this build writes and reads; stored in `meta` as `layout`. */
export const PG_LAYOUT = 1

/** 'FPIP': the first key of every FuncPipe advisory lock (the second is the schema's name, hashed). */
const LOCK_CLASS = 0x46504950

/** What a schema holds: nothing of FuncPipe's yet, or an index with its `meta` values. */
type State =
  | { readonly _tag: "Empty" }
  | {
      readonly _tag: "Index"
      readonly layout: number
      /** Changes with every commit that changed something, and with every rebuild. */
      readonly token: string
      readonly manifest: string | undefined
      readonly roots: string | undefined
    }

const make = (sql: PgClient.PgClient, target: PgTarget, options: PgStoreOptions) => {
  const { location, schema } = target
  const meta = sql(`${schema}.meta`)
  const documentsTable = sql(`${schema}.documents`)
  const corrupt = (detail: string) => new IndexCorrupt({ location, detail })
  const foreign = (tables: ReadonlyArray<string>) => new ForeignSchema({ location, schema, tables })
  const busyMillis = options.busyTimeoutMillis ?? 2000

  /** What the schema holds, read in the caller's transaction. */
  const inspect = Effect.gen(function* () {
    const tables = yield* sql<{ readonly name: string }>`
      SELECT c.relname AS name FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1`
    const names = tables.map((t) => t.name)
    if (names.length === 0) return { _tag: "Empty" } as State
    if (!names.includes("meta") || !names.includes("documents")) return yield* foreign(names)
    const rows = yield* sql<{ readonly key: unknown; readonly value: unknown }>`SELECT key, value FROM ${meta}`.pipe(
      // Someone else's `meta` table, with other columns.
      Effect.catchIf(
        (error) => error.reason._tag === "SqlSyntaxError",
        () => Effect.fail(foreign(names))
      )
    )
    const values = new Map<unknown, unknown>(rows.map((row) => [row.key, row.value]))
    if (values.get("application") !== "funcpipe") return yield* foreign(names)
    const layout = Number(values.get("layout"))
    const generation = values.get("generation")
    const version = values.get("version")
    if (!Number.isInteger(layout) || typeof generation !== "string" || typeof version !== "string") {
      return yield* corrupt("its settings table is damaged")
    }
    const text = (key: string) => {
      const value = values.get(key)
      return typeof value === "string" ? value : undefined
    }
    const token = `${generation}:${version}`
    return { _tag: "Index", layout, token, manifest: text("manifest"), roots: text("roots") } as State
  })

  /** Refuses a layout this build does not read (an older one too, unless `older` allows it). */
  const checkLayout = (state: State, older = false): Effect.Effect<void, StoreError> => {
    if (state._tag === "Empty") return Effect.void
    if (state.layout > PG_LAYOUT) {
      return Effect.fail(new IndexTooNew({ location, found: state.layout, supported: PG_LAYOUT }))
    }
    if (state.layout < PG_LAYOUT && !older) {
      return Effect.fail(new IndexTooOld({ location, found: state.layout, supported: PG_LAYOUT }))
    }
    return Effect.void
  }

  const manifestOf = (json: string | undefined): Effect.Effect<Option.Option<IndexManifest>, IndexCorrupt> => {
    if (json === undefined) return Effect.succeedNone
    const decoded = decodeManifest(json)
    return Result.isSuccess(decoded)
      ? Effect.succeed(Option.some(decoded.success))
      : Effect.fail(corrupt(`manifest: ${oneLine(decoded.failure.message)}`))
  }
  const rootsOf = (json: string | undefined): Effect.Effect<ReadonlyArray<string>, IndexCorrupt> => {
    if (json === undefined) return Effect.succeed([])
    const decoded = decodeRoots(json)
    return Result.isSuccess(decoded)
      ? Effect.succeed(decoded.success)
      : Effect.fail(corrupt("the list of indexed paths is unreadable"))
  }

  const mapSqlError =
    (what: string) =>
    <A, E, R>(effect: Effect.Effect<A, E | SqlError.SqlError, R>) =>
      Effect.catchIf(
        effect,
        (error): error is SqlError.SqlError => (error as { readonly _tag?: unknown })._tag === "SqlError",
        (error) => Effect.fail(storeError(target, what, error))
      ) as Effect.Effect<A, Exclude<E, SqlError.SqlError> | StoreError, R>

  /** Runs `f` on what the schema holds in one read-only transaction that sees one committed state. */
  const reading = <A, E, R>(what: string, f: (state: State) => Effect.Effect<A, E, R>) =>
    sql
      .withTransaction(Effect.flatMap(inspect, f))
      .pipe(
        Effect.provideService(SqlClient.BeginTransaction, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
        mapSqlError(what)
      )

  const manifest = reading("reading the manifest", (state) =>
    Effect.flatMap(checkLayout(state), () => manifestOf(state._tag === "Index" ? state.manifest : undefined))
  )

  const roots = reading("reading the indexed paths", (state) =>
    rootsOf(state._tag === "Index" ? state.roots : undefined)
  )

  const documents = reading("reading documents", (state) =>
    Effect.gen(function* () {
      if (state._tag === "Empty") return []
      yield* checkLayout(state)
      const rows = yield* sql<Parameters<typeof storedDocOf>[1]>`
        SELECT doc_id AS "docId", source, title, categories, hash, chunks FROM ${documentsTable} ORDER BY id`
      return yield* Effect.try({
        try: () => rows.map((row) => storedDocOf(location, row)),
        catch: (error) => (error instanceof IndexCorrupt ? error : corrupt(String(error)))
      })
    })
  )

  const version = reading("checking for changes", (state) =>
    Effect.succeed(state._tag === "Empty" ? "none" : state.token)
  )

  /** The snapshot of the last state loaded, kept while no commit changes the token. */
  let cached: { readonly token: string; readonly snapshot: Snapshot } | undefined

  const snapshot = reading("reading the index", (state) =>
    Effect.gen(function* () {
      if (state._tag === "Empty") return Option.none<Snapshot>()
      yield* checkLayout(state)
      const found = yield* manifestOf(state.manifest)
      if (Option.isNone(found)) return Option.none<Snapshot>()
      if (cached?.token === state.token) return Option.some(cached.snapshot)
      const loaded = yield* loadSnapshot(sql, documentsTable, location, found.value, sql.literal("TRUE"))
      cached = { token: state.token, snapshot: loaded }
      return Option.some(loaded)
    })
  )

  const createTables = Effect.gen(function* () {
    yield* sql`CREATE SCHEMA IF NOT EXISTS ${sql(schema)}`
    yield* sql`CREATE TABLE ${meta} (key text PRIMARY KEY, value text NOT NULL)`
    yield* sql`INSERT INTO ${meta} (key, value) VALUES ('application', 'funcpipe'), ('layout', ${String(PG_LAYOUT)}),
      ('generation', ${randomUUID()}), ('version', '0')`
    yield* sql`CREATE TABLE ${documentsTable} (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      doc_id text NOT NULL UNIQUE,
      source text NOT NULL,
      title text NOT NULL,
      categories text,
      hash text NOT NULL,
      chunks integer NOT NULL,
      body bytea NOT NULL,
      spans bytea NOT NULL,
      lengths bytea NOT NULL,
      terms text NOT NULL,
      term_ids bytea NOT NULL,
      vectors bytea NOT NULL
    )`
    // The body is deflated already and vectors do not compress: spare the server trying.
    yield* sql`ALTER TABLE ${documentsTable} ALTER COLUMN body SET STORAGE EXTERNAL,
      ALTER COLUMN vectors SET STORAGE EXTERNAL`
  })

  /**
   * The writer of one transaction (`readOnly` for a dry run, which writes nothing). Documents are buffered and written
   * in multi-row inserts; anything that reads or deletes documents writes the buffer first. On an older layout only
   * `clear` may write, and it lays the tables out anew.
   */
  const makeWriter = (state: Extract<State, { _tag: "Index" }>, readOnly: boolean) => {
    let layoutCurrent = state.layout === PG_LAYOUT
    let manifestValue: Option.Option<IndexManifest> | undefined
    let rootsValue: ReadonlyArray<string> | undefined
    let changed = false
    const pending = new Map<string, Row>()
    let pendingBytes = 0
    /** Reads the bodies out of the packs they were prepared in. */
    const packs = new PackReader()
    const refuse = Effect.fail(new StoreFailure({ location, reason: "a dry run writes nothing" }))
    const tooOld = new IndexTooOld({ location, found: state.layout, supported: PG_LAYOUT })
    const writing = <A, E>(what: string, effect: Effect.Effect<A, E | SqlError.SqlError>) =>
      readOnly
        ? refuse
        : Effect.suspend(() => {
            if (!layoutCurrent) return Effect.fail(tooOld)
            changed = true
            return mapSqlError(what)(effect)
          })

    const flush = Effect.suspend(() => {
      if (pending.size === 0) return Effect.void
      const rows = [...pending.values()] as unknown as readonly [Row, ...Array<Row>]
      pending.clear()
      pendingBytes = 0
      return mapSqlError("writing documents")(
        sql`
        INSERT INTO ${documentsTable} ${sql.insert(rows)}
        ON CONFLICT (doc_id) DO UPDATE SET source = EXCLUDED.source, title = EXCLUDED.title,
          categories = EXCLUDED.categories, hash = EXCLUDED.hash, chunks = EXCLUDED.chunks, body = EXCLUDED.body,
          spans = EXCLUDED.spans, lengths = EXCLUDED.lengths, terms = EXCLUDED.terms, term_ids = EXCLUDED.term_ids,
          vectors = EXCLUDED.vectors`.pipe(Effect.asVoid)
      )
    })

    const upsertMeta = (key: string, value: string) =>
      sql`INSERT INTO ${meta} (key, value) VALUES (${key}, ${value})
        ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`

    const writer: IndexWriter = {
      manifest: Effect.suspend(() =>
        manifestValue !== undefined
          ? Effect.succeed(manifestValue)
          : Effect.map(manifestOf(state.manifest), (found) => (manifestValue = found))
      ),
      roots: Effect.suspend(() =>
        rootsValue !== undefined
          ? Effect.succeed(rootsValue)
          : Effect.map(rootsOf(state.roots), (found) => (rootsValue = found))
      ),
      storedDocs: Effect.suspend(() => {
        if (!layoutCurrent) return Effect.fail(tooOld)
        return Effect.andThen(
          flush,
          mapSqlError("reading documents")(
            sql<{ readonly doc_id: string; readonly hash: string; readonly source: string; readonly chunks: number }>`
              SELECT doc_id, hash, source, chunks FROM ${documentsTable}`
          )
        ).pipe(
          Effect.map((rows) => {
            const stored = new Map<string, StoredEntry>()
            for (const r of rows) {
              stored.set(r.doc_id, { docId: r.doc_id, hash: r.hash, source: r.source, chunks: r.chunks })
            }
            return stored as ReadonlyMap<string, StoredEntry>
          })
        )
      }),
      clear: readOnly
        ? refuse
        : Effect.suspend(() => {
            pending.clear()
            pendingBytes = 0
            changed = true
            manifestValue = Option.none()
            rootsValue = []
            const wasCurrent = layoutCurrent
            layoutCurrent = true
            return mapSqlError("clearing")(
              wasCurrent
                ? Effect.all(
                    [
                      sql`DELETE FROM ${documentsTable}`,
                      sql`DELETE FROM ${meta} WHERE key IN ('manifest', 'roots')`,
                      sql`UPDATE ${meta} SET value = ${randomUUID()} WHERE key = 'generation'`
                    ],
                    { discard: true }
                  )
                : Effect.andThen(sql`DROP TABLE ${documentsTable}, ${meta}`, createTables)
            )
          }),
      deleteDoc: (docId) =>
        writing(
          "deleting a document",
          Effect.andThen(flush, sql`DELETE FROM ${documentsTable} WHERE doc_id = ${docId}`)
        ),
      putDoc: (doc, chunks, terms, vectors) =>
        writing(
          "writing a document",
          Effect.suspend(() => {
            const row = rowOf(packs, doc, chunks, terms, vectors)
            pending.set(doc.docId, row)
            pendingBytes +=
              (row["body"] as Uint8Array).byteLength +
              (row["vectors"] as Uint8Array).byteLength +
              (row["term_ids"] as Uint8Array).byteLength +
              8 * chunks.length
            return pending.size >= FLUSH_ROWS || pendingBytes >= FLUSH_BYTES ? flush : Effect.void
          })
        ),
      putDocs: (docs, terms) =>
        Effect.forEach(docs, ({ chunks, doc, vectors }) => writer.putDoc(doc, chunks, terms, vectors), {
          discard: true
        }),
      putManifest: (m) =>
        writing(
          "writing the manifest",
          Effect.suspend(() => {
            manifestValue = Option.some(m)
            return upsertMeta("manifest", encodeManifest(m))
          })
        ),
      putRoots: (paths) =>
        writing(
          "writing the indexed paths",
          Effect.suspend(() => {
            rootsValue = paths
            return upsertMeta("roots", JSON.stringify(paths))
          })
        )
    }
    /** Writes what is buffered and, if anything changed, moves the version on; called once, just before the commit. */
    const finish = Effect.andThen(
      flush,
      Effect.suspend(() =>
        changed
          ? mapSqlError("committing")(sql`UPDATE ${meta} SET value = (value::bigint + 1)::text WHERE key = 'version'`)
          : Effect.void
      )
    )
    return { writer, finish }
  }

  const transaction = <A, E, R>(
    body: (writer: IndexWriter) => Effect.Effect<A, E, R>,
    transactionOptions: TransactionOptions = {}
  ): Effect.Effect<A, E | StoreError, R> => {
    if (transactionOptions.readOnly === true) {
      // A dry run: what is committed now, without the lock; an older layout is read too (a rebuild's plan).
      return reading("reading the index", (state) =>
        state._tag === "Empty"
          ? body(emptyWriter(location))
          : Effect.flatMap(checkLayout(state, true), () => body(makeWriter(state, true).writer))
      )
    }
    return Effect.uninterruptibleMask((restore) =>
      mapSqlError("writing the index")(
        sql.withTransaction(
          Effect.gen(function* () {
            // Wait a little for another writer, as the SQLite store does, then report the index busy.
            yield* sql`SELECT set_config('lock_timeout', ${`${busyMillis}ms`}, true)`
            yield* sql`SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext(${schema}))`
            yield* sql`SELECT set_config('lock_timeout', '0', true)`
            // Read committed: everything read from here on sees the last writer's commit, so no plan is stale.
            let state = yield* inspect
            if (state._tag === "Empty") {
              yield* createTables
              state = yield* inspect
            }
            if (state._tag === "Empty") return yield* corrupt("its tables vanished while it was being written")
            yield* checkLayout(state, true)
            const { finish, writer } = makeWriter(state, false)
            const result = yield* restore(body(writer))
            yield* finish
            return result
          })
        )
      )
    )
  }

  return IndexStore.of({
    location,
    manifest,
    roots,
    documents,
    snapshot,
    version,
    checkpoint: Effect.void,
    transaction
  })
}
