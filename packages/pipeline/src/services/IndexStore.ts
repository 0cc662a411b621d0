/** Boundary service: the persistent index (manifest, documents with content hashes, chunks with vectors). */
import { Context, Effect, Exit, FileSystem, Layer, Option, Path, Ref, Result, Schema } from "effect"
import { DatabaseSync, type StatementSync } from "node:sqlite"
import { Chunk } from "@funcpipe/domain/Chunk"
import { oneLine } from "@funcpipe/domain/Decode"
import { DocId } from "@funcpipe/domain/Document"
import { FORMAT_VERSION, IndexManifest } from "@funcpipe/domain/Manifest"
import { averageOf, type LexicalIndex, lexicalIndex, type Postings } from "../stages/Bm25.ts"

/** A chunk as written: with its terms (for BM25) and its length in terms. */
export interface IndexedChunk {
  readonly chunk: Chunk
  readonly length: number
  readonly terms: ReadonlyMap<string, number>
}

/** What a query reads, from one consistent snapshot: every chunk, and the lexical data for the asked terms. */
export interface SearchData {
  readonly chunks: ReadonlyArray<Chunk>
  readonly lexical: LexicalIndex
}

/** A document as stored: where it came from, its title and categories, and the hash of its raw content. */
export class StoredDoc extends Schema.Class<StoredDoc>("pipeline/StoredDoc")({
  docId: DocId,
  source: Schema.String,
  title: Schema.String,
  categories: Schema.NullOr(Schema.String),
  hash: Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/, { message: "a hash is 64 hex digits" })),
  /** How many chunks the document has in the index. */
  chunks: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
}) {}

/** The file is not a FuncPipe index (another SQLite database, or not a database at all). */
export class NotAnIndex extends Schema.TaggedError<NotAnIndex>()("NotAnIndex", {
  location: Schema.String
}) {
  override get message(): string {
    return `${this.location} is not a FuncPipe index; pass another --index path or move the file away`
  }
}

/** The index file is damaged (truncated, overwritten) or holds values that break the index's rules. */
export class IndexCorrupt extends Schema.TaggedError<IndexCorrupt>()("IndexCorrupt", {
  location: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `the index at ${this.location} is damaged (${this.detail}); delete it and index again`
  }
}

/** The index was written by a newer FuncPipe whose layout this build does not know. */
export class IndexTooNew extends Schema.TaggedError<IndexTooNew>()("IndexTooNew", {
  location: Schema.String,
  found: Schema.Int,
  supported: Schema.Int
}) {
  override get message(): string {
    return `the index at ${this.location} has format version ${this.found}, but this FuncPipe reads up to version ` +
      `${this.supported}; upgrade FuncPipe`
  }
}

/** Another process is writing the index right now. */
export class IndexBusy extends Schema.TaggedError<IndexBusy>()("IndexBusy", {
  location: Schema.String
}) {
  override get message(): string {
    return `another FuncPipe run is writing the index at ${this.location}; try again when it has finished`
  }
}

/** The index could not be read or written for a reason outside FuncPipe (disk full, permissions, …). */
export class StoreFailure extends Schema.TaggedError<StoreFailure>()("StoreFailure", {
  location: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot use the index at ${this.location}: ${this.reason}`
  }
}

export type StoreError = NotAnIndex | IndexCorrupt | IndexTooNew | IndexBusy | StoreFailure

/** Changes made inside one `transaction`; none is visible to readers until the transaction commits. */
export interface IndexWriter {
  /** Removes every document, chunk and setting. */
  readonly clear: Effect.Effect<void, StoreError>
  /** Removes a document and its chunks. */
  readonly deleteDoc: (docId: string) => Effect.Effect<void, StoreError>
  /** Stores a document and its chunks, replacing any earlier version and its chunks. */
  readonly putDoc: (doc: StoredDoc, chunks: ReadonlyArray<IndexedChunk>) => Effect.Effect<void, StoreError>
  /** Stores the manifest. */
  readonly putManifest: (manifest: IndexManifest) => Effect.Effect<void, StoreError>
  /** Stores the paths the index mirrors. */
  readonly putRoots: (roots: ReadonlyArray<string>) => Effect.Effect<void, StoreError>
}

export class IndexStore extends Context.Service<IndexStore, {
  /** Where the index lives, for messages. */
  readonly location: string
  /** The manifest; `None` when nothing has been indexed there yet. */
  readonly manifest: Effect.Effect<Option.Option<IndexManifest>, StoreError>
  /** The paths the last index run read. */
  readonly roots: Effect.Effect<ReadonlyArray<string>, StoreError>
  /** Every stored document. */
  readonly documents: Effect.Effect<ReadonlyArray<StoredDoc>, StoreError>
  /**
   * Every stored chunk with its vector (labelled with the manifest's model, decoded through the domain schema), with
   * each chunk's length and the postings of `terms`, all read from one snapshot.
   */
  readonly searchData: (terms: ReadonlyArray<string>) => Effect.Effect<SearchData, StoreError>
  /**
   * Runs `body` as one atomic change: if it succeeds everything it wrote becomes visible at once; if it fails, is
   * interrupted, or the process dies, nothing of it does. Readers see the old state or the new, never a mix.
   */
  readonly transaction: <A, E, R>(
    body: (writer: IndexWriter) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | StoreError, R>
}>()("pipeline/IndexStore") {
  /** An index held in memory, for tests and one-off runs. It follows the same contract as the SQLite file. */
  static readonly layerMemory = Layer.effect(
    IndexStore,
    Effect.gen(function*() {
      interface State {
        readonly manifest: Option.Option<IndexManifest>
        readonly roots: ReadonlyArray<string>
        readonly docs: ReadonlyMap<string, { readonly doc: StoredDoc; readonly chunks: ReadonlyArray<IndexedChunk> }>
      }
      const state = yield* Ref.make<State>({ manifest: Option.none(), roots: [], docs: new Map() })
      return IndexStore.of({
        location: "memory",
        manifest: Effect.map(Ref.get(state), (s) => s.manifest),
        roots: Effect.map(Ref.get(state), (s) => s.roots),
        documents: Effect.map(Ref.get(state), (s) => [...s.docs.values()].map((d) => d.doc)),
        searchData: () =>
          Effect.map(Ref.get(state), (s) => {
            const indexed = [...s.docs.values()].flatMap((d) => d.chunks)
            return { chunks: indexed.map((c) => c.chunk), lexical: lexicalIndex(indexed) }
          }),
        transaction: (body) =>
          Effect.gen(function*() {
            const before = yield* Ref.get(state)
            let manifest = before.manifest
            let roots = before.roots
            const docs = new Map(before.docs)
            const writer: IndexWriter = {
              clear: Effect.sync(() => {
                docs.clear()
                manifest = Option.none()
                roots = []
              }),
              deleteDoc: (docId) => Effect.sync(() => void docs.delete(docId)),
              putDoc: (doc, chunks) => Effect.sync(() => void docs.set(doc.docId, { doc, chunks })),
              putManifest: (m) => Effect.sync(() => void (manifest = Option.some(m))),
              putRoots: (r) => Effect.sync(() => void (roots = [...r]))
            }
            const result = yield* body(writer)
            yield* Ref.set(state, { manifest, roots, docs })
            return result
          })
      })
    })
  )

  /**
   * The index as one SQLite file at `file` (Node's built-in `node:sqlite`, write-ahead log on). A missing file is an
   * empty index until the first transaction creates it, with its folder. Opening checks that the file is a FuncPipe
   * index of a format this build reads.
   */
  static readonly layerSqlite = (file: string) =>
    Layer.effect(
      IndexStore,
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const location = file
        const exists = yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false))
        let db: DatabaseSync | undefined = exists ? yield* open(location) : undefined
        yield* Effect.addFinalizer(() => Effect.sync(() => db?.isOpen && db.close()))

        const run = <A>(what: string, f: (db: DatabaseSync) => A): Effect.Effect<A, StoreError> =>
          Effect.try({ try: () => f(db!), catch: (error) => storeError(location, what, error) })

        const hasTables = (d: DatabaseSync) =>
          (d.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'meta'").get() as { n: number }).n > 0

        // Every read looks at `db` when it runs: the first transaction may create the file after this layer is built.
        const readMeta = (key: string): Effect.Effect<Option.Option<string>, StoreError> =>
          Effect.suspend(() => db === undefined
            ? Effect.succeed(Option.none())
            : run(`reading ${key}`, (d) => {
              if (!hasTables(d)) return Option.none()
              const row = d.prepare("SELECT value FROM meta WHERE key = ?").get(key) as { value: string } | undefined
              return Option.fromNullishOr(row?.value)
            }))

        const corrupt = (detail: string) => new IndexCorrupt({ location, detail })

        const manifest = Effect.flatMap(readMeta("manifest"), (json) =>
          Option.isNone(json)
            ? Effect.succeed(Option.none<IndexManifest>())
            : Effect.map(
              Effect.fromResult(Result.mapError(decodeManifest(json.value), (detail) => corrupt(`manifest: ${detail}`))),
              Option.some
            ))

        const roots = Effect.flatMap(readMeta("roots"), (json) => {
          if (Option.isNone(json)) return Effect.succeed<ReadonlyArray<string>>([])
          const parsed = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Array(Schema.String)))(json.value)
          return Result.isSuccess(parsed) ? Effect.succeed(parsed.success) : Effect.fail(corrupt("the list of indexed paths is unreadable"))
        })

        const documents = Effect.suspend(() => db === undefined ? Effect.succeed([]) : Effect.flatMap(
          run("reading documents", (d) =>
            hasTables(d) ? d.prepare("SELECT doc_id, source, title, categories, hash, chunks FROM documents ORDER BY rowid").all() : []),
          (rows) =>
            Effect.forEach(rows, (row) => {
              const r = row as Record<string, unknown>
              const decoded = Schema.decodeUnknownResult(StoredDoc)({
                docId: r["doc_id"],
                source: r["source"],
                title: r["title"],
                categories: r["categories"],
                hash: r["hash"],
                chunks: r["chunks"]
              })
              return Result.isSuccess(decoded)
                ? Effect.succeed(decoded.success)
                : Effect.fail(corrupt(`document ${JSON.stringify(r["doc_id"])}: ${oneLine(decoded.failure.message)}`))
            })
        ))

        const searchData = (terms: ReadonlyArray<string>) =>
          Effect.gen(function*() {
            const m = yield* manifest
            if (Option.isNone(m) || db === undefined) return { chunks: [], lexical: lexicalIndex([]) }
            const { dimensions, model } = m.value
            // One read transaction: in WAL mode it sees one snapshot, even if a writer commits meanwhile.
            const read = yield* run("reading chunks", (d) => {
              d.exec("BEGIN")
              try {
                const rows = d.prepare("SELECT id, doc_id, start, \"end\", text, vector, length FROM chunks ORDER BY id").all()
                const byTerm = d.prepare("SELECT chunk, tf FROM postings WHERE term = ?")
                const postingRows = [...new Set(terms)].map((term) => [term, byTerm.all(term)] as const)
                return { rows, postingRows }
              } finally {
                d.exec("COMMIT")
              }
            })
            const chunks: Array<Chunk> = []
            const lengths = new Uint32Array(read.rows.length)
            const positionOf = new Map<number, number>()
            let total = 0
            for (const row of read.rows) {
              const r = row as Record<string, unknown>
              const blob = r["vector"]
              if (!(blob instanceof Uint8Array) || blob.byteLength !== dimensions * 8) {
                return yield* corrupt(`a chunk of ${JSON.stringify(r["doc_id"])} has a vector of the wrong size`)
              }
              const vector = Array.from(new Float64Array(blob.slice().buffer))
              const decoded = Schema.decodeUnknownResult(Chunk)({
                docId: r["doc_id"], start: r["start"], end: r["end"], text: r["text"], embedding: { vector, model }
              })
              if (Result.isFailure(decoded)) {
                return yield* corrupt(`a chunk of ${JSON.stringify(r["doc_id"])}: ${oneLine(decoded.failure.message)}`)
              }
              const length = r["length"]
              if (typeof length !== "number" || !Number.isInteger(length) || length < 0) {
                return yield* corrupt(`a chunk of ${JSON.stringify(r["doc_id"])} has no valid length`)
              }
              positionOf.set(Number(r["id"]), chunks.length)
              lengths[chunks.length] = length
              total += length
              chunks.push(decoded.success)
            }
            const postings = new Map<string, Postings>()
            for (const [term, rows] of read.postingRows) {
              const positions = new Uint32Array(rows.length)
              const tfs = new Uint32Array(rows.length)
              for (let i = 0; i < rows.length; i++) {
                const r = rows[i] as { chunk: number; tf: number }
                const position = positionOf.get(r.chunk)
                if (position === undefined || !(r.tf >= 1)) return yield* corrupt(`the postings of ${JSON.stringify(term)} are damaged`)
                positions[i] = position
                tfs[i] = r.tf
              }
              postings.set(term, { positions, tfs })
            }
            return { chunks, lexical: { lengths, averageLength: averageOf(lengths, total), postings } }
          })

        const transaction = <A, E, R>(body: (writer: IndexWriter) => Effect.Effect<A, E, R>) =>
          Effect.uninterruptibleMask((restore) =>
            Effect.gen(function*() {
              if (db === undefined) {
                yield* fs.makeDirectory(path.dirname(file), { recursive: true }).pipe(
                  Effect.mapError((error) => new StoreFailure({ location, reason: error.message }))
                )
                db = yield* open(location)
              }
              yield* run("starting a write", (d) => d.exec("BEGIN IMMEDIATE"))
              const exit = yield* Effect.exit(
                Effect.flatMap(run("creating the tables", createTables), () => restore(body(sqliteWriter(location, db!))))
              )
              if (Exit.isSuccess(exit)) {
                yield* run("committing", (d) => d.exec("COMMIT")).pipe(
                  Effect.tapError(() => Effect.sync(() => db!.isTransaction && db!.exec("ROLLBACK")))
                )
                return exit.value
              }
              if (db.isTransaction) db.exec("ROLLBACK")
              return yield* exit
            })
          )

        return IndexStore.of({ location, manifest, roots, documents, searchData, transaction })
      })
    )
}

/** 'FPIP': marks a SQLite file as a FuncPipe index. */
const APPLICATION_ID = 0x46504950

const decodeManifest = (json: string): Result.Result<IndexManifest, string> =>
  Result.mapError(
    Schema.decodeUnknownResult(Schema.fromJsonString(IndexManifest))(json),
    (error) => oneLine(error.message)
  )

const encodeManifest = Schema.encodeSync(Schema.fromJsonString(IndexManifest))

const sqliteCode = (error: unknown): number | undefined =>
  typeof error === "object" && error !== null && "errcode" in error && typeof error.errcode === "number"
    ? error.errcode & 0xff
    : undefined

const storeError = (location: string, what: string, error: unknown): StoreError => {
  switch (sqliteCode(error)) {
    case 5: // SQLITE_BUSY
    case 6: // SQLITE_LOCKED
      return new IndexBusy({ location })
    case 11: // SQLITE_CORRUPT
      return new IndexCorrupt({ location, detail: `SQLite reports the file is malformed while ${what}` })
    case 26: // SQLITE_NOTADB
      return new NotAnIndex({ location })
    default:
      return new StoreFailure({ location, reason: `${what}: ${error instanceof Error ? error.message : String(error)}` })
  }
}

/** Opens an existing or new file and checks that it is a FuncPipe index this build can read. */
const open = (location: string): Effect.Effect<DatabaseSync, StoreError> =>
  Effect.try({
    try: () => {
      const db = new DatabaseSync(location)
      try {
        db.exec("PRAGMA busy_timeout = 2000")
        const tables = (db.prepare("SELECT count(*) AS n FROM sqlite_master").get() as { n: number }).n
        const appId = (db.prepare("PRAGMA application_id").get() as { application_id: number }).application_id
        const version = (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version
        if (tables > 0 && appId !== APPLICATION_ID) throw new NotAnIndex({ location })
        if (version > FORMAT_VERSION) throw new IndexTooNew({ location, found: version, supported: FORMAT_VERSION })
        db.exec("PRAGMA journal_mode = WAL")
        db.exec("PRAGMA foreign_keys = ON")
        return db
      } catch (error) {
        db.close()
        throw error
      }
    },
    catch: (error) =>
      error instanceof NotAnIndex || error instanceof IndexTooNew ? error : storeError(location, "opening", error)
  })

const createTables = (db: DatabaseSync): void => {
  db.exec(`
    PRAGMA application_id = ${APPLICATION_ID};
    PRAGMA user_version = ${FORMAT_VERSION};
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS documents (
      doc_id TEXT PRIMARY KEY,
      source TEXT NOT NULL,
      title TEXT NOT NULL,
      categories TEXT,
      hash TEXT NOT NULL,
      chunks INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS chunks (
      id INTEGER PRIMARY KEY,
      doc_id TEXT NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
      start INTEGER NOT NULL,
      "end" INTEGER NOT NULL,
      text TEXT NOT NULL,
      vector BLOB NOT NULL,
      length INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks (doc_id);
    CREATE TABLE IF NOT EXISTS postings (
      term TEXT NOT NULL,
      chunk INTEGER NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
      tf INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS postings_by_term ON postings (term);
    CREATE INDEX IF NOT EXISTS postings_by_chunk ON postings (chunk);
  `)
}

const sqliteWriter = (location: string, db: DatabaseSync): IndexWriter => {
  const statements = new Map<string, StatementSync>()
  const prepared = (sql: string) => {
    let statement = statements.get(sql)
    if (statement === undefined) statements.set(sql, statement = db.prepare(sql))
    return statement
  }
  const run = (what: string, f: () => void): Effect.Effect<void, StoreError> =>
    Effect.try({ try: f, catch: (error) => storeError(location, what, error) })
  const putMeta = (key: string, value: string) =>
    run(`writing ${key}`, () => prepared("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)").run(key, value))
  return {
    clear: run("clearing", () => db.exec("DELETE FROM postings; DELETE FROM chunks; DELETE FROM documents; DELETE FROM meta;")),
    deleteDoc: (docId) => run("deleting a document", () => prepared("DELETE FROM documents WHERE doc_id = ?").run(docId)),
    putDoc: (doc, chunks) =>
      run("writing a document", () => {
        prepared("DELETE FROM documents WHERE doc_id = ?").run(doc.docId)
        prepared("INSERT INTO documents (doc_id, source, title, categories, hash, chunks) VALUES (?, ?, ?, ?, ?, ?)")
          .run(doc.docId, doc.source, doc.title, doc.categories, doc.hash, doc.chunks)
        const insert = prepared("INSERT INTO chunks (doc_id, start, \"end\", text, vector, length) VALUES (?, ?, ?, ?, ?, ?)")
        const posting = prepared("INSERT INTO postings (term, chunk, tf) VALUES (?, ?, ?)")
        for (const { chunk: c, length, terms } of chunks) {
          const vector = new Uint8Array(Float64Array.from(c.embedding.vector).buffer)
          const id = insert.run(c.docId, c.start, c.end, c.text, vector, length).lastInsertRowid
          for (const [term, tf] of terms) posting.run(term, id, tf)
        }
      }),
    putManifest: (manifest) => putMeta("manifest", encodeManifest(manifest)),
    putRoots: (roots) => putMeta("roots", JSON.stringify(roots))
  }
}
