/**
 * The index in a PostgreSQL schema, for teams: one row per document holding its fields and its search data as
 * typed-array `bytea`s, read page by page into a `LoadedSnapshot` and scored in Node by the same engine as the SQLite
 * file.
 */

import { randomUUID } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { IndexManifest } from "@funcpipe/domain/Manifest"
import { Effect, Exit, Layer, Option, Result, Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, type SqlError, type Statement } from "effect/sql"
import { decodeStamps, encodeStamps } from "../../base/Stamps.ts"
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
import { dropGraphs, type GraphTables, graphTablesOf, updateGraphs } from "./PgGraphs.ts"
import { reconnecting } from "./PgReconnect.ts"
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
      const scope = yield* Effect.scope
      // Each attempt's pool lives in a scope of its own: kept when the database answers, closed when it does not.
      const connect = Effect.gen(function* () {
        const attempt = yield* Scope.fork(scope)
        return yield* Effect.gen(function* () {
          const sql = yield* PgClient.make({
            url: target.url,
            maxConnections: options.maxConnections ?? 4,
            connectTimeout: options.connectTimeoutMillis ?? 10_000,
            applicationName: "funcpipe",
            // A document's row (its vectors above all) can be far larger than the driver's default 16 MiB.
            maxMessageSize: 1024 * 1024 * 1024
          }).pipe(Effect.provide(Reactivity.layer), Scope.provide(attempt))
          // The pool connects lazily: one query shows whether the database is there.
          yield* sql`SELECT 1`
          return make(sql, target, options)
        }).pipe(
          Effect.mapError((error) => storeError(target, "connecting", error)),
          Effect.onError(() => Scope.close(attempt, Exit.void))
        )
      })
      return reconnecting(target.location, connect)
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

/** What the parts of one store share: the client, the schema's tables, and the snapshot of the last state loaded. */
interface PgStore {
  readonly sql: PgClient.PgClient
  readonly target: PgTarget
  readonly location: string
  readonly schema: string
  readonly meta: Statement.Identifier
  readonly documentsTable: Statement.Identifier
  /** The tables the vector graphs are read and written with. */
  readonly graphTables: GraphTables
  readonly busyMillis: number
  /** The snapshot of the last state loaded, kept while no commit changes the token. */
  cached: { readonly token: string; readonly snapshot: Snapshot } | undefined
}

/** The store's error for damage found in the schema. */
const corrupt = (c: PgStore, detail: string) => new IndexCorrupt({ location: c.location, detail })

/** The place named holds tables that are not a FuncPipe index. */
const foreign = (c: PgStore, tables: ReadonlyArray<string>) =>
  new ForeignSchema({ location: c.location, schema: c.schema, tables })

/** What the schema holds, read in the caller's transaction. */
const inspect = (c: PgStore) =>
  Effect.gen(function* () {
    const tables = yield* c.sql<{ readonly name: string }>`
      SELECT c.relname AS name FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${c.schema} AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1`
    const names = tables.map((t) => t.name)
    if (names.length === 0) return { _tag: "Empty" } as State
    if (!names.includes("meta") || !names.includes("documents")) return yield* foreign(c, names)
    const rows = yield* c.sql<{
      readonly key: unknown
      readonly value: unknown
    }>`SELECT key, value FROM ${c.meta} WHERE key <> 'file_stamps'`.pipe(
      // Someone else's `meta` table, with other columns.
      Effect.catchIf(
        (error) => error.reason._tag === "SqlSyntaxError",
        () => Effect.fail(foreign(c, names))
      )
    )
    const values = new Map<unknown, unknown>(rows.map((row) => [row.key, row.value]))
    if (values.get("application") !== "funcpipe") return yield* foreign(c, names)
    const layout = Number(values.get("layout"))
    const generation = values.get("generation")
    const version = values.get("version")
    if (!Number.isInteger(layout) || typeof generation !== "string" || typeof version !== "string") {
      return yield* corrupt(c, "its settings table is damaged")
    }
    const text = (key: string) => {
      const value = values.get(key)
      return typeof value === "string" ? value : undefined
    }
    const token = `${generation}:${version}`
    return { _tag: "Index", layout, token, manifest: text("manifest"), roots: text("roots") } as State
  })

/** Refuses a layout this build does not read (an older one too, unless `older` allows it). */
const checkLayout = (c: PgStore, state: State, older = false): Effect.Effect<void, StoreError> => {
  if (state._tag === "Empty") return Effect.void
  if (state.layout > PG_LAYOUT) {
    return Effect.fail(new IndexTooNew({ location: c.location, found: state.layout, supported: PG_LAYOUT }))
  }
  if (state.layout < PG_LAYOUT && !older) {
    return Effect.fail(new IndexTooOld({ location: c.location, found: state.layout, supported: PG_LAYOUT }))
  }
  return Effect.void
}

const manifestOf = (
  c: PgStore,
  json: string | undefined
): Effect.Effect<Option.Option<IndexManifest>, IndexCorrupt> => {
  if (json === undefined) return Effect.succeedNone
  const decoded = decodeManifest(json)
  return Result.isSuccess(decoded)
    ? Effect.succeed(Option.some(decoded.success))
    : Effect.fail(corrupt(c, `manifest: ${decoded.failure}`))
}

const rootsOf = (c: PgStore, json: string | undefined): Effect.Effect<ReadonlyArray<string>, IndexCorrupt> => {
  if (json === undefined) return Effect.succeed([])
  const decoded = decodeRoots(json)
  return Result.isSuccess(decoded)
    ? Effect.succeed(decoded.success)
    : Effect.fail(corrupt(c, "the list of indexed paths is unreadable"))
}

const mapSqlError =
  (c: PgStore, what: string) =>
  <A, E, R>(effect: Effect.Effect<A, E | SqlError.SqlError, R>) =>
    Effect.catchIf(
      effect,
      (error): error is SqlError.SqlError => (error as { readonly _tag?: unknown })._tag === "SqlError",
      (error) => Effect.fail(storeError(c.target, what, error))
    ) as Effect.Effect<A, Exclude<E, SqlError.SqlError> | StoreError, R>

/** Runs `f` on what the schema holds in one read-only transaction that sees one committed state. */
const reading = <A, E, R>(c: PgStore, what: string, f: (state: State) => Effect.Effect<A, E, R>) =>
  c.sql
    .withTransaction(Effect.flatMap(inspect(c), f))
    .pipe(
      Effect.provideService(SqlClient.BeginTransaction, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
      mapSqlError(c, what)
    )

const readManifest = (c: PgStore) =>
  reading(c, "reading the manifest", (state) =>
    Effect.flatMap(checkLayout(c, state), () => manifestOf(c, state._tag === "Index" ? state.manifest : undefined))
  )

const readRoots = (c: PgStore) =>
  reading(c, "reading the indexed paths", (state) => rootsOf(c, state._tag === "Index" ? state.roots : undefined))

const readDocuments = (c: PgStore) =>
  reading(c, "reading documents", (state) =>
    Effect.gen(function* () {
      if (state._tag === "Empty") return []
      yield* checkLayout(c, state)
      const rows = yield* c.sql<Parameters<typeof storedDocOf>[1]>`
        SELECT doc_id AS "docId", source, title, categories, hash, chunks FROM ${c.documentsTable} ORDER BY id`
      return yield* Effect.try({
        try: () => rows.map((row) => storedDocOf(c.location, row)),
        catch: (error) => (error instanceof IndexCorrupt ? error : corrupt(c, String(error)))
      })
    })
  )

/** The files' stamps the last run recorded, read in the caller's transaction (none when they do not decode). */
const stampsIn = (c: PgStore) =>
  Effect.map(c.sql<{ readonly value: string }>`SELECT value FROM ${c.meta} WHERE key = 'file_stamps'`, (rows) =>
    decodeStamps(rows[0]?.value)
  )

const readVersion = (c: PgStore) =>
  reading(c, "checking for changes", (state) => Effect.succeed(state._tag === "Empty" ? "none" : state.token))

const readSnapshot = (c: PgStore) =>
  reading(c, "reading the index", (state) =>
    Effect.gen(function* () {
      if (state._tag === "Empty") return Option.none<Snapshot>()
      yield* checkLayout(c, state)
      const found = yield* manifestOf(c, state.manifest)
      if (Option.isNone(found)) return Option.none<Snapshot>()
      const cached = c.cached
      if (cached?.token === state.token) return Option.some(cached.snapshot)
      const loaded = yield* loadSnapshot(
        c.sql,
        c.documentsTable,
        c.location,
        found.value,
        c.sql.literal("TRUE"),
        c.graphTables
      )
      c.cached = { token: state.token, snapshot: loaded }
      return Option.some(loaded)
    })
  )

const createTables = (c: PgStore) =>
  Effect.gen(function* () {
    yield* c.sql`CREATE SCHEMA IF NOT EXISTS ${c.sql(c.schema)}`
    yield* c.sql`CREATE TABLE ${c.meta} (key text PRIMARY KEY, value text NOT NULL)`
    yield* c.sql`INSERT INTO ${c.meta} (key, value) VALUES ('application', 'funcpipe'), ('layout', ${String(PG_LAYOUT)}),
      ('generation', ${randomUUID()}), ('version', '0')`
    yield* c.sql`CREATE TABLE ${c.documentsTable} (
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
    yield* c.sql`ALTER TABLE ${c.documentsTable} ALTER COLUMN body SET STORAGE EXTERNAL,
      ALTER COLUMN vectors SET STORAGE EXTERNAL`
  })

/** What one transaction's writer keeps: the state it began from, the documents buffered, what it changed. */
interface PgWriting {
  readonly c: PgStore
  readonly state: Extract<State, { _tag: "Index" }>
  readonly readOnly: boolean
  /** False on an older layout, where only `clear` may write. */
  layoutCurrent: boolean
  manifestValue: Option.Option<IndexManifest> | undefined
  rootsValue: ReadonlyArray<string> | undefined
  /** Whether the transaction changed anything, so that the version moves on at its commit. */
  changed: boolean
  /** Rows buffered for one multi-row insert, and the bytes they hold. */
  readonly pending: Map<string, Row>
  pendingBytes: number
  /** Reads the bodies out of the packs they were prepared in. */
  readonly packs: PackReader
}

/** Runs a write, refused in a dry run and on an older layout; marks the transaction changed. */
const writing = <A, E>(p: PgWriting, what: string, effect: Effect.Effect<A, E | SqlError.SqlError>) =>
  p.readOnly
    ? Effect.fail(new StoreFailure({ location: p.c.location, reason: "a dry run writes nothing" }))
    : Effect.suspend(() => {
        if (!p.layoutCurrent) return Effect.fail(tooOld(p))
        p.changed = true
        return mapSqlError(p.c, what)(effect)
      })

/** The failure of a write to a schema of an older layout. */
const tooOld = (p: PgWriting) =>
  new IndexTooOld({ location: p.c.location, found: p.state.layout, supported: PG_LAYOUT })

/** Writes the buffered rows in one multi-row insert. */
const flush = (p: PgWriting) =>
  Effect.suspend(() => {
    if (p.pending.size === 0) return Effect.void
    const rows = [...p.pending.values()] as unknown as readonly [Row, ...Array<Row>]
    p.pending.clear()
    p.pendingBytes = 0
    const { c } = p
    return mapSqlError(
      c,
      "writing documents"
    )(
      // A document written again gets a row of its own (a new id), never changed in place: a vector graph names its
      // rows by id, and must not find other vectors there than it was built from.
      Effect.andThen(
        c.sql`DELETE FROM ${c.documentsTable} WHERE doc_id IN ${c.sql.in(rows.map((row) => row["doc_id"] as string))}`,
        c.sql`INSERT INTO ${c.documentsTable} ${c.sql.insert(rows)}`
      ).pipe(Effect.asVoid)
    )
  })

const upsertMeta = (c: PgStore, key: string, value: string) =>
  c.sql`INSERT INTO ${c.meta} (key, value) VALUES (${key}, ${value})
        ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`

/** The stored documents' ids, hashes, sources and chunk counts, after writing what is buffered. */
const storedDocs = (p: PgWriting) =>
  Effect.suspend(() => {
    if (!p.layoutCurrent) return Effect.fail(tooOld(p))
    const { c } = p
    return Effect.andThen(
      flush(p),
      mapSqlError(
        c,
        "reading documents"
      )(
        c.sql<{ readonly doc_id: string; readonly hash: string; readonly source: string; readonly chunks: number }>`
              SELECT doc_id, hash, source, chunks FROM ${c.documentsTable}`
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
  })

/** Empties the index (or, on an older layout, lays the tables out anew). */
const clear = (p: PgWriting) =>
  p.readOnly
    ? Effect.fail(new StoreFailure({ location: p.c.location, reason: "a dry run writes nothing" }))
    : Effect.suspend(() => {
        const { c } = p
        p.pending.clear()
        p.pendingBytes = 0
        p.changed = true
        p.manifestValue = Option.none()
        p.rootsValue = []
        const wasCurrent = p.layoutCurrent
        p.layoutCurrent = true
        return mapSqlError(
          c,
          "clearing"
        )(
          wasCurrent
            ? Effect.all(
                [
                  c.sql`DELETE FROM ${c.documentsTable}`,
                  dropGraphs(c.sql, c.graphTables),
                  c.sql`DELETE FROM ${c.meta} WHERE key IN ('manifest', 'roots', 'file_stamps')`,
                  c.sql`UPDATE ${c.meta} SET value = ${randomUUID()} WHERE key = 'generation'`
                ],
                { discard: true }
              )
            : Effect.andThen(
                c.sql`DROP TABLE IF EXISTS ${c.documentsTable}, ${c.meta}, ${c.graphTables.ann}`,
                createTables(c)
              )
        )
      })

/** Buffers a document's row, writing the buffer once it is full. */
const putDoc = (p: PgWriting, ...[doc, chunks, terms, vectors]: Parameters<IndexWriter["putDoc"]>) =>
  writing(
    p,
    "writing a document",
    Effect.suspend(() => {
      const row = rowOf(p.packs, doc, chunks, terms, vectors)
      p.pending.set(doc.docId, row)
      p.pendingBytes +=
        (row["body"] as Uint8Array).byteLength +
        (row["vectors"] as Uint8Array).byteLength +
        (row["term_ids"] as Uint8Array).byteLength +
        8 * chunks.length
      return p.pending.size >= FLUSH_ROWS || p.pendingBytes >= FLUSH_BYTES ? flush(p) : Effect.void
    })
  )

/**
 * The writer of one transaction (`readOnly` for a dry run, which writes nothing). Documents are buffered and written
 * in multi-row inserts; anything that reads or deletes documents writes the buffer first. On an older layout only
 * `clear` may write, and it lays the tables out anew.
 */
const makeWriter = (c: PgStore, state: Extract<State, { _tag: "Index" }>, readOnly: boolean) => {
  const p: PgWriting = {
    c,
    state,
    readOnly,
    layoutCurrent: state.layout === PG_LAYOUT,
    manifestValue: undefined,
    rootsValue: undefined,
    changed: false,
    pending: new Map(),
    pendingBytes: 0,
    packs: new PackReader()
  }
  const writer: IndexWriter = {
    manifest: Effect.suspend(() =>
      p.manifestValue !== undefined
        ? Effect.succeed(p.manifestValue)
        : Effect.map(manifestOf(c, state.manifest), (found) => (p.manifestValue = found))
    ),
    roots: Effect.suspend(() =>
      p.rootsValue !== undefined
        ? Effect.succeed(p.rootsValue)
        : Effect.map(rootsOf(c, state.roots), (found) => (p.rootsValue = found))
    ),
    storedDocs: storedDocs(p),
    clear: clear(p),
    deleteDoc: (docId) =>
      writing(
        p,
        "deleting a document",
        Effect.andThen(flush(p), c.sql`DELETE FROM ${c.documentsTable} WHERE doc_id = ${docId}`)
      ),
    putDoc: (doc, chunks, terms, vectors) => putDoc(p, doc, chunks, terms, vectors),
    putDocs: (docs, terms) =>
      Effect.forEach(docs, ({ chunks, doc, vectors }) => putDoc(p, doc, chunks, terms, vectors), { discard: true }),
    putManifest: (given) =>
      writing(
        p,
        "writing the manifest",
        Effect.suspend(() => {
          // Graphs in PostgreSQL are always walked over their stored codes (see PgGraphs.ts), and the manifest says so.
          const m =
            given.ann === undefined || given.ann.codes === "i8"
              ? given
              : new IndexManifest({ ...given, ann: { ...given.ann, codes: "i8" } })
          p.manifestValue = Option.some(m)
          return upsertMeta(c, "manifest", encodeManifest(m))
        })
      ),
    putRoots: (paths) =>
      writing(
        p,
        "writing the indexed paths",
        Effect.suspend(() => {
          p.rootsValue = paths
          return upsertMeta(c, "roots", JSON.stringify(paths))
        })
      ),
    fileStamps: mapSqlError(c, "reading the files' stamps")(stampsIn(c)),
    putFileStamps: (stamps) =>
      writing(
        p,
        "writing the files' stamps",
        Effect.suspend(() => upsertMeta(c, "file_stamps", encodeStamps(stamps)))
      )
  }
  /**
   * Writes what is buffered and, if anything changed, brings the vector graphs up to date and moves the version on;
   * called once, just before the commit.
   */
  const finish = (options: TransactionOptions) =>
    Effect.andThen(
      flush(p),
      Effect.suspend(() =>
        p.changed
          ? mapSqlError(
              c,
              "committing"
            )(
              Effect.gen(function* () {
                const manifest = p.manifestValue ?? (yield* manifestOf(c, state.manifest))
                if (Option.isSome(manifest))
                  yield* updateGraphs(c.sql, c.graphTables, c.location, manifest.value, options)
                yield* c.sql`UPDATE ${c.meta} SET value = (value::bigint + 1)::text WHERE key = 'version'`
              })
            )
          : Effect.void
      )
    )
  return { writer, finish }
}

const transaction = <A, E, R>(
  c: PgStore,
  body: (writer: IndexWriter) => Effect.Effect<A, E, R>,
  transactionOptions: TransactionOptions = {}
): Effect.Effect<A, E | StoreError, R> => {
  if (transactionOptions.readOnly === true) {
    // A dry run: what is committed now, without the lock; an older layout is read too (a rebuild's plan).
    return reading(c, "reading the index", (state) =>
      state._tag === "Empty"
        ? body(emptyWriter(c.location))
        : Effect.flatMap(checkLayout(c, state, true), () => body(makeWriter(c, state, true).writer))
    )
  }
  return Effect.uninterruptibleMask((restore) =>
    mapSqlError(
      c,
      "writing the index"
    )(
      c.sql.withTransaction(
        Effect.gen(function* () {
          // Wait a little for another writer, as the SQLite store does, then report the index busy.
          yield* c.sql`SELECT set_config('lock_timeout', ${`${c.busyMillis}ms`}, true)`
          yield* c.sql`SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext(${c.schema}))`
          yield* c.sql`SELECT set_config('lock_timeout', '0', true)`
          // Read committed: everything read from here on sees the last writer's commit, so no plan is stale.
          let state = yield* inspect(c)
          if (state._tag === "Empty") {
            yield* createTables(c)
            state = yield* inspect(c)
          }
          if (state._tag === "Empty") return yield* corrupt(c, "its tables vanished while it was being written")
          yield* checkLayout(c, state, true)
          const { finish, writer } = makeWriter(c, state, false)
          const result = yield* restore(body(writer))
          yield* finish(transactionOptions)
          return result
        })
      )
    )
  )
}

const make = (sql: PgClient.PgClient, target: PgTarget, options: PgStoreOptions) => {
  const c: PgStore = {
    sql,
    target,
    location: target.location,
    schema: target.schema,
    meta: sql(`${target.schema}.meta`),
    documentsTable: sql(`${target.schema}.documents`),
    graphTables: graphTablesOf(sql, target.schema),
    busyMillis: options.busyTimeoutMillis ?? 2000,
    cached: undefined
  }
  return IndexStore.of({
    location: c.location,
    manifest: readManifest(c),
    roots: readRoots(c),
    documents: readDocuments(c),
    snapshot: readSnapshot(c),
    version: readVersion(c),
    checkpoint: Effect.void,
    check: Effect.void,
    transaction: (body, transactionOptions) => transaction(c, body, transactionOptions)
  })
}
