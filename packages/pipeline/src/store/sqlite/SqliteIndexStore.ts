/**
 * The index as one SQLite file laid out for search. Documents and chunk text are rows; search data lives in immutable
 * segments (chunk lengths as a typed-array blob, vectors in blocks of typed-array blobs, and
 * varint-encoded postings per term) with a bitmap of deleted chunks.
 */

import { randomUUID } from "node:crypto"
import { closeSync, existsSync, fdatasync, fstatSync, mkdirSync, openSync, statSync } from "node:fs"
import { dirname } from "node:path"
import { DatabaseSync, type StatementSync } from "node:sqlite"
import { oneLine } from "@funcpipe/domain/Decode"
import { IndexManifest } from "@funcpipe/domain/Manifest"
import { compareCodePoints, type RankKey } from "@funcpipe/domain/Ranking"
import type { Rule } from "@funcpipe/domain/Rule"
import { Effect, Layer, Option, Result, Schema, type Scope, ScopedRef } from "effect"
import { bodyIn, unpack } from "../../index/BodyPack.ts"
import { type DecodedPostings, decodePostings, encodePostings } from "../../index/Postings.ts"
import { SegmentBuilder } from "../../index/Segment.ts"
import {
  decodeRows as decodeBlock,
  decodeVectors,
  encodeVectors,
  encodingFor,
  type VectorEncoding
} from "../../index/VectorCodec.ts"
import { pathProblem, systemReason } from "../../platform/SystemReason.ts"
import type { PositionFilter, TermBlock, VectorBlock } from "../../search/Engine.ts"
import { type TableColumn, TableFilter } from "../../search/Filter.ts"
import { documentTies } from "../../search/Ranker.ts"
import {
  type ChunkRecord,
  cachedPositions,
  type DocRecord,
  emptyWriter,
  IndexBusy,
  IndexCorrupt,
  IndexStore,
  IndexTooNew,
  IndexTooOld,
  type IndexWriter,
  NotAnIndex,
  readSnapshot,
  type Snapshot,
  type StoredChunk,
  StoredDoc,
  type StoredDocument,
  type StoredEntry,
  type StoreError,
  StoreFailure,
  spanText,
  type TermTable,
  type TransactionOptions,
  view
} from "../IndexStore.ts"

/**
 * The index as one SQLite file at `file` (Node's built-in `node:sqlite`, write-ahead log on). A missing file is an
 * empty index until the first transaction creates it, with its folder. Reading opens the file read-only and checks
 * that it is a FuncPipe index of this build's format. Segment data is immutable, so it is cached across snapshots.
 */
export const layerSqlite = (file: string): Layer.Layer<IndexStore> => Layer.effect(IndexStore, makeSqliteStore(file))

/** 'FPIP': marks a SQLite file as a FuncPipe index. */
const APPLICATION_ID = 0x46504950

/**
 * The file's layout (its `user_version`), numbered apart from the manifest's format: 1 kept a row per chunk and per
 * posting, 2 immutable segments with a body per document, 3 bodies in packs (`BodyPack`), 4 chunk spans in their
 * document's row instead of a row per chunk.
 */
const LAYOUT = 4

/** A segment's vectors are at most this many bytes, so one segment's blob stays small enough to read at once. */
const MAX_SEGMENT_VECTOR_BYTES = 32 * 1024 * 1024

/** The most chunks a segment of `dimensions`-component vectors holds. */
const maxChunksOf = (dimensions: number): number =>
  Math.max(1024, Math.floor(MAX_SEGMENT_VECTOR_BYTES / (8 * dimensions)))
/** How much decoded postings a store keeps for warm queries. */
const POSTINGS_CACHE_BYTES = 64 * 1024 * 1024
/** More small segments than this (each under 1/8 of a full one) are merged at the end of a run. */
const MAX_SMALL_SEGMENTS = 4
/** How much decompressed document text a generation's caches keep, in UTF-16 units (about 16 MB). */
const BODY_CACHE_CHARS = 8 * 1024 * 1024
/** How many decompressed body packs a generation's caches keep (a pack is about 64 KB unless one document is more). */
const PACK_CACHE_ENTRIES = 8
/**
 * A run flushes its segment once it holds this much and is no longer small (1/8 of a full one, so the segments a run
 * cuts are never merged as small ones at its end), or once it holds `SEGMENT_LIMIT_BYTES` whatever its size: this
 * bounds the writer's memory. Writing a segment holds the writer for a while, during which the preparing threads only
 * work through the batches already sent to them: at 48 MB they ran out and waited (a 210 MB run: about 5 % slower, and
 * 40 MB more peak memory, than at 24 MB).
 */
const SEGMENT_BUDGET_BYTES = 24 * 1024 * 1024
const SEGMENT_LIMIT_BYTES = 48 * 1024 * 1024

const decodeManifestJson = (json: string): Result.Result<IndexManifest, string> =>
  Result.mapError(Schema.decodeUnknownResult(Schema.fromJsonString(IndexManifest))(json), (error) =>
    oneLine(error.message)
  )

/**
 * The manifest JSON last decoded, with what it decoded to. Every query reads the manifest, and decoding it through the
 * schema each time took ~50 µs of a warm query of ~0.5 ms; the stored text rarely changes, so the same text is
 * decoded once.
 */
let lastManifest: { readonly json: string; readonly decoded: Result.Result<IndexManifest, string> } | undefined
const decodeManifest = (json: string): Result.Result<IndexManifest, string> => {
  if (lastManifest?.json !== json) lastManifest = { json, decoded: decodeManifestJson(json) }
  return lastManifest.decoded
}

const encodeManifest = Schema.encodeSync(Schema.fromJsonString(IndexManifest))

/** SQLite's extended result code in what node:sqlite threw, or `undefined` for anything that is not SQLite's error. */
const sqliteExtendedCode = (error: unknown): number | undefined =>
  typeof error === "object" && error !== null && "errcode" in error && typeof error.errcode === "number"
    ? error.errcode
    : undefined

/** SQLite's primary result code in what node:sqlite threw, or `undefined` for anything that is not SQLite's error. */
const sqliteCode = (error: unknown): number | undefined => {
  const code = sqliteExtendedCode(error)
  return code === undefined ? undefined : code & 0xff
}

/**
 * The store's error for what SQLite (or the system under it) threw while the store was `what` (say "opening"), with
 * the original kept as its cause.
 */
const sqliteError = (location: string, what: string, error: unknown): StoreError => {
  const cause = error
  switch (sqliteCode(error)) {
    case 5: // SQLITE_BUSY
    case 6: // SQLITE_LOCKED
      return new IndexBusy({ location, cause })
    case 11: // SQLITE_CORRUPT
      return new IndexCorrupt({ location, detail: `SQLite reports the file is malformed while ${what}`, cause })
    case 26: // SQLITE_NOTADB
      return new NotAnIndex({ location, cause })
    case 13: // SQLITE_FULL
      return new StoreFailure({ location, reason: "no space left on device; nothing was changed", cause })
    case 3: // SQLITE_PERM
    case 8: // SQLITE_READONLY
    case 23: // SQLITE_AUTH
      return new StoreFailure({ location, reason: "permission denied (the file or its folder is read-only)", cause })
    case 10: // SQLITE_IOERR
    case 14: // SQLITE_CANTOPEN
      // SQLite does not say why; the path usually does (a directory, a missing folder, a file in the way).
      return new StoreFailure({
        location,
        reason:
          pathProblem(location) ??
          (sqliteCode(error) === 14 ? "the file cannot be opened" : "the disk reported an input/output error"),
        cause
      })
    default:
      return new StoreFailure({
        location,
        reason: `${what}: ${error instanceof Error ? error.message : String(error)}`,
        cause
      })
  }
}

/**
 * Runs `f`, synchronous calls into SQLite (or the file system) that throw only what those throw, failing with the
 * store's error for it (`sqliteError`). The store's own failures are raised outside, in Effect code.
 */
const sqlite = <A>(location: string, what: string, f: () => A): Effect.Effect<A, StoreError> =>
  Effect.try({ try: f, catch: (error) => sqliteError(location, what, error) })

/** What tells a FuncPipe index of a layout this build reads from anything else. */
const fileMarks = (db: DatabaseSync) => ({
  tables: (db.prepare("SELECT count(*) AS n FROM sqlite_master").get() as { n: number }).n,
  appId: (db.prepare("PRAGMA application_id").get() as { application_id: number }).application_id,
  version: (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version
})

/**
 * The file's layout version, or 0 for an empty file; fails for another program's database, a newer layout and, unless
 * `olderLayout` allows it, an older one.
 */
const layoutVersion = Effect.fnUntraced(function* (
  location: string,
  what: string,
  db: DatabaseSync,
  olderLayout: boolean
) {
  const { appId, tables, version } = yield* sqlite(location, what, () => fileMarks(db))
  if (tables > 0 && appId !== APPLICATION_ID) return yield* new NotAnIndex({ location })
  if (version > LAYOUT) return yield* new IndexTooNew({ location, found: version, supported: LAYOUT })
  if (version > 0 && version < LAYOUT && !olderLayout) {
    return yield* new IndexTooOld({ location, found: version, supported: LAYOUT })
  }
  return tables === 0 ? 0 : version
})

/** Closes a connection, rolling back what it left uncommitted. */
const closeConnection = (db: DatabaseSync) =>
  Effect.sync(() => {
    if (!db.isOpen) return
    try {
      if (db.isTransaction) db.exec("ROLLBACK")
    } catch {
      // Closing rolls it back all the same.
    }
    db.close()
  })

/** SQLite's extended result code for a read-only connection that finds a rollback journal left by a stopped write. */
const SQLITE_READONLY_ROLLBACK = 776

/** A read-only connection that has read the schema (the first read is where SQLite reports most problems). */
const openReadOnly = (location: string): DatabaseSync => {
  const db = new DatabaseSync(location, { readOnly: true, timeout: 2000 })
  try {
    db.prepare("SELECT count(*) FROM sqlite_master").get()
    return db
  } catch (error) {
    db.close()
    throw error
  }
}

/**
 * A new read-only connection to the file, or an immutable one where SQLite may not make its shared-memory file. A
 * file whose first write was stopped midway (see `isNewFile`) has a rollback journal that only a connection that may
 * write can play back: one is opened for that, as SQLite would for any writer, and the file is then read as it was
 * before that write.
 */
const connectReadOnly = (location: string): DatabaseSync => {
  try {
    return openReadOnly(location)
  } catch (error) {
    if (sqliteExtendedCode(error) === SQLITE_READONLY_ROLLBACK) {
      const writer = new DatabaseSync(location, { timeout: 2000 })
      try {
        writer.prepare("SELECT count(*) FROM sqlite_master").get()
      } finally {
        writer.close()
      }
      return openReadOnly(location)
    }
    const code = sqliteCode(error)
    if (code !== 8 && code !== 14) throw error // SQLITE_READONLY, SQLITE_CANTOPEN
    return new DatabaseSync(`file:${encodeURI(location).replace(/\?/g, "%3f").replace(/#/g, "%23")}?immutable=1`, {
      readOnly: true
    })
  }
}

/**
 * Opens the file read-only, for its caller to close. In a folder this process may not write (where SQLite cannot make
 * its shared-memory file) the file is opened as immutable, which is right for an index nobody is writing. An older
 * layout is refused with `IndexTooOld` unless `olderLayout` allows it (a dry run reads only its manifest).
 */
const openReader = (location: string, what: string, olderLayout = false): Effect.Effect<DatabaseSync, StoreError> =>
  Effect.flatMap(
    sqlite(location, what, () => connectReadOnly(location)),
    (db) =>
      layoutVersion(location, what, db, olderLayout).pipe(
        Effect.as(db),
        Effect.onError(() => closeConnection(db))
      )
  )

/**
 * Opens the file for writing (SQLite makes it when missing), for its caller to close, with the write-ahead log on
 * unless `creating` (see `isNewFile`); fails for a file that is not a FuncPipe index of a layout this build knows.
 */
const openWriter = (location: string, creating: boolean): Effect.Effect<DatabaseSync, StoreError> =>
  Effect.flatMap(
    sqlite(location, "opening", () => new DatabaseSync(location, { timeout: 2000 })),
    (db) =>
      layoutVersion(location, "opening", db, true).pipe(
        Effect.andThen(
          creating ? Effect.void : sqlite(location, "opening", () => db.exec("PRAGMA journal_mode = WAL"))
        ),
        Effect.as(db),
        Effect.onError(() => closeConnection(db))
      )
  )

/**
 * Whether the index file is yet to be made: neither it nor a write-ahead log holds anything. The first transaction
 * on such a file goes through SQLite's rollback journal rather than the log. A rollback journal keeps no copy of
 * pages past the file's old end (undoing their writes cuts the file back), so every page of a new file is written
 * once, where the log would take it and then copy it into the file: a 210 MB build wrote 180 MB instead of 360 MB
 * and took 0.6 s less system time. The commit is atomic all the same, and the log is turned on right after it.
 */
const isNewFile = (file: string): boolean =>
  (statSync(file, { throwIfNoEntry: false })?.size ?? 0) === 0 &&
  (statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0) === 0

/**
 * Syncs a new index file in the background while it is written, so that its commit finds little left to sync. Each
 * page of a new file goes straight into it (see `isNewFile`), and a run of a few seconds ends before the kernel writes
 * them back on its own: for a 210 MB corpus, the commit synced 185 MB in 0.26 s at the very end of the run, with the
 * preparing thread already done. `sync` (called once a segment is written) starts a sync on a thread of Node's pool
 * unless one is running; a failed one is ignored, since the commit syncs the file all the same and reports what fails
 * then. The descriptors are the store's own (one per file made at this path), kept until the store closes, after its
 * connections: closing a descriptor drops every lock the process holds on the file, its other connections' included.
 */
const backgroundSync = (file: string) => {
  const descriptors: Array<number> = []
  let running: Promise<void> | undefined
  return {
    sync: (): void => {
      if (running !== undefined) return
      let fd: number | undefined
      try {
        const inode = statSync(file).ino
        fd = descriptors.find((d) => fstatSync(d).ino === inode)
        if (fd === undefined) descriptors.push((fd = openSync(file, "r")))
      } catch {
        return
      }
      const descriptor = fd
      running = new Promise((resolve) => fdatasync(descriptor, () => resolve()))
      void running.then(() => void (running = undefined))
    },
    close: Effect.promise(async () => {
      await running
      for (const fd of descriptors.splice(0)) closeSync(fd)
    })
  }
}

/**
 * Gives the memory of a blob read from SQLite back at once, by detaching its buffer (`transfer(0)`), so that the next
 * blob of its size is read into the same memory. The binding returns every blob in a fresh buffer, and on machines
 * where the first touch of memory is slow (the benchmark's VM: about 4 ms per MB) reading a cold scan's 14 MB of vector
 * blocks took 66–87 ms, against 10–12 ms with each block's memory given back. The blob must not be used afterwards.
 */
const release = (blob: Uint8Array): void => {
  if (blob.byteOffset === 0 && blob.byteLength === blob.buffer.byteLength) (blob.buffer as ArrayBuffer).transfer(0)
}

/**
 * The statements of the read path, prepared once per connection: a warm query runs a dozen small statements, and
 * compiling them again for every query cost about as much as running them.
 */
const statements = new WeakMap<DatabaseSync, Map<string, StatementSync>>()
const statement = (db: DatabaseSync, sql: string): StatementSync => {
  let known = statements.get(db)
  if (known === undefined) statements.set(db, (known = new Map()))
  let prepared = known.get(sql)
  if (prepared === undefined) known.set(sql, (prepared = db.prepare(sql)))
  return prepared
}

const hasTables = (db: DatabaseSync) =>
  (statement(db, "SELECT count(*) AS n FROM sqlite_master WHERE name = 'meta'").get() as { n: number }).n > 0

/** A value of the `meta` table, or `undefined` (also for a file with no tables yet). */
const readMetaIn = (db: DatabaseSync, key: string): string | undefined => {
  if (!hasTables(db)) return undefined
  const row = statement(db, "SELECT value FROM meta WHERE key = ?").get(key) as { value: string } | undefined
  return row?.value
}

/** The stored manifest, `None` before the first run; one that does not decode is `IndexCorrupt`. */
const manifestIn = Effect.fnUntraced(function* (location: string, what: string, db: DatabaseSync) {
  const json = yield* sqlite(location, what, () => readMetaIn(db, "manifest"))
  if (json === undefined) return Option.none<IndexManifest>()
  const decoded = decodeManifest(json)
  if (Result.isFailure(decoded)) return yield* new IndexCorrupt({ location, detail: `manifest: ${decoded.failure}` })
  return Option.some(decoded.success)
})

const decodeRoots = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Array(Schema.String)))

/** The paths the last run read, as stored in `db` (none before the first run). */
const rootsIn = Effect.fnUntraced(function* (location: string, what: string, db: DatabaseSync) {
  const json = yield* sqlite(location, what, () => readMetaIn(db, "roots"))
  if (json === undefined) return []
  const parsed = decodeRoots(json)
  if (Result.isFailure(parsed)) {
    return yield* new IndexCorrupt({ location, detail: "the list of indexed paths is unreadable" })
  }
  return parsed.success
})

const decodeStoredDoc = Schema.decodeUnknownResult(StoredDoc)

/** A `documents` row decoded as a `StoredDoc`, or why it breaks the rules. */
const storedDocOf = (row: Record<string, unknown>): Result.Result<StoredDoc, string> =>
  Result.mapError(
    decodeStoredDoc({
      docId: row["doc_id"],
      source: row["source"],
      title: row["title"],
      categories: row["categories"],
      hash: row["hash"],
      chunks: row["chunks"]
    }),
    (error) => `document ${JSON.stringify(row["doc_id"])}: ${oneLine(error.message)}`
  )

/**
 * The segment columns every snapshot reads, in `base` order. A segment's row holds its chunk lengths, a blob of 4 bytes
 * per chunk spread over overflow pages, and SQLite reaches the columns after it only by reading those pages: reading
 * the rows of ten segments of 442k chunks took ~12 ms of every query. The index answers without reading the rows.
 * Files made before it existed get it at their next write.
 */
const SEGMENTS_ORDER =
  "CREATE INDEX IF NOT EXISTS segments_order ON segments (base, count, live, live_length, version, block_rows)"

const createTables = (db: DatabaseSync): void => {
  db.exec(`
    PRAGMA application_id = ${APPLICATION_ID};
    PRAGMA user_version = ${LAYOUT};
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta (key, value) VALUES ('generation', '${randomUUID()}');
    CREATE TABLE documents (
      id INTEGER PRIMARY KEY,
      doc_id TEXT NOT NULL UNIQUE,
      source TEXT NOT NULL,
      title TEXT NOT NULL,
      categories TEXT,
      hash TEXT NOT NULL,
      first INTEGER NOT NULL,
      chunks INTEGER NOT NULL,
      spans BLOB NOT NULL,
      pack INTEGER,
      body_start INTEGER,
      body_end INTEGER
    );
    CREATE INDEX documents_first ON documents (first);
    CREATE TABLE packs (id INTEGER PRIMARY KEY AUTOINCREMENT, data BLOB NOT NULL);
    CREATE TABLE segments (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      base INTEGER NOT NULL,
      count INTEGER NOT NULL,
      live INTEGER NOT NULL,
      live_length INTEGER NOT NULL,
      version INTEGER NOT NULL,
      lengths BLOB NOT NULL,
      block_rows INTEGER NOT NULL,
      deleted BLOB
    );
    CREATE TABLE vectors (id INTEGER PRIMARY KEY, data BLOB NOT NULL);
    CREATE TABLE postings (
      segment INTEGER NOT NULL,
      term TEXT NOT NULL,
      df INTEGER NOT NULL,
      data BLOB NOT NULL,
      PRIMARY KEY (segment, term)
    ) WITHOUT ROWID;
    ${SEGMENTS_ORDER};
  `)
}

const dropTables = (db: DatabaseSync): void => {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all()
  for (const row of tables) db.exec(`DROP TABLE IF EXISTS "${String((row as { name: string }).name)}"`)
}

/**
 * A document's chunk spans as its row stores them: `[start, end]` code-point offsets, chunk after chunk, as 32-bit
 * integers; `undefined` unless the blob holds exactly `chunks` of them.
 */
const spansIn = (blob: unknown, chunks: number): Uint32Array | undefined =>
  blob instanceof Uint8Array && blob.byteLength === 8 * chunks
    ? view(blob, 4, (buffer, offset, length) => new Uint32Array(buffer, offset, length))
    : undefined

/** A segment's row without its blobs. */
interface SegmentRow {
  readonly id: number
  readonly base: number
  readonly count: number
  readonly live: number
  readonly liveLength: number
  readonly version: number
  /** Rows per vector block. */
  readonly blockRows: number
}

/** A segment's immutable columns, decoded once (vector blocks only when a query needs them) and cached by segment id. */
interface SegmentColumns {
  /** Its chunks' lengths, once a query has needed them: a stretch of the last snapshot lengths that held them. */
  lengths: Uint32Array | undefined
  readonly blocks: Map<number, { readonly vectors: Float64Array; readonly magnitudes: Float64Array }>
}

/**
 * Vectors are stored in blocks of about 512 KiB: a vector query reads every block, a result reads the one block that
 * holds its row. Block `b` of segment `s` is row `s · 2^20 + b` of the `vectors` table.
 */
const VECTOR_BLOCK_BYTES = 512 * 1024
const blockRowsFor = (dimensions: number) => Math.max(1, Math.floor(VECTOR_BLOCK_BYTES / (8 * dimensions)))
const BLOCKS_PER_SEGMENT = 2 ** 20
/** How many rows block `block` of a segment of `count` chunks holds (the last block may hold fewer). */
const rowsInBlock = (blockRows: number, count: number, block: number) => Math.min(blockRows, count - block * blockRows)

/** Whether bit `i` of a deleted-chunks bitmap is set (chunk `i` of its segment is deleted). */
const isDeleted = (bits: Uint8Array, i: number): boolean => (bits[i >> 3]! & (1 << (i & 7))) !== 0

/** A reader's caches for one generation of the file (see `makeSqliteStore`). */
interface Caches {
  readonly generation: string
  readonly columns: Map<number, SegmentColumns>
  readonly deleted: Map<number, { readonly version: number; readonly bits: Uint8Array | undefined }>
  /** The concatenated deletions, and lengths once a query has read them, for one set of segment versions. */
  layout:
    | { readonly signature: string; lengths: Uint32Array | undefined; readonly deleted: Uint8Array | undefined }
    | undefined
  /**
   * Decoded postings by segment and term (`null`: the segment lacks the term), least recently used first, up to
   * `POSTINGS_CACHE_BYTES`: a warm query for frequent terms skips reading and decoding them.
   */
  readonly postings: Map<string, DecodedPostings | null>
  postingBytes: number
  /**
   * The documents as query filters read them, for one layout (the same segments and deletions mean the same documents
   * at the same positions), with the positions of recently used rules by their JSON form, least recently used first.
   */
  filters:
    | { readonly signature: string; readonly table: TableFilter; readonly results: Map<string, PositionFilter> }
    | undefined
  /**
   * Chunk rows as results and ties read them, by segment id and ordinal (segment ids are never reused within a
   * generation, and a segment's chunks never change), up to `ROW_CACHE_ENTRIES`: a server answering similar queries
   * reads each row once instead of once per query.
   */
  readonly rows: Map<number, ChunkRow>
  /**
   * Decompressed bodies by segment id and document row, oldest first, up to `BODY_CACHE_CHARS`. A document's chunks
   * live in one segment and a new version of it goes to a new segment, so within a segment a document row always
   * names the same text. Results of successive queries often share documents, and inflating a body costs more than
   * scoring a query's postings.
   */
  readonly bodies: Map<string, string>
  bodyChars: number
  /** Bytes of vectors kept with `rows`. */
  rowVectorBytes: number
  /** Vector scans made in this generation (see `vectorBlocks`). */
  vectorScans: number
  /** Decompressed packs by id (never reused: AUTOINCREMENT), oldest first, up to `PACK_CACHE_ENTRIES`. */
  readonly packs: Map<number, Uint8Array>
}

/** A chunk's row: its document's id, title and row number, and its span. */
interface ChunkRow {
  readonly docId: string
  readonly title: string
  readonly doc: number
  readonly start: number
  readonly end: number
  /** The chunk's vector, once a result has read it. */
  vector?: Float64Array
}

/** How many chunk rows a generation's cache keeps (about 100 bytes each); it starts over when full. */
const ROW_CACHE_ENTRIES = 100_000
/** How many bytes of results' vectors those rows keep at most (vectors of 384 dimensions are 3 KB each). */
const ROW_VECTOR_BYTES = 8 * 1024 * 1024

/** A read-only connection and the file it opened (see `identityOf`). */
interface Reader {
  readonly db: DatabaseSync
  readonly identity: string
}

/** Idle read-only connections, and whether their store has closed (after which none is kept). */
interface ReaderPool {
  readonly idle: Array<Reader>
  closed: boolean
}

/** The file at `path` as the system knows it (device and inode), or "" when there is none. */
const identityOf = (path: string): string => {
  const info = statSync(path, { throwIfNoEntry: false })
  return info === undefined ? "" : `${info.dev}:${info.ino}`
}

/**
 * The SQLite store over `file` (see `layerSqlite`). Its read-only connections live in a pool that the scope closes;
 * each read and each transaction holds its connection as a resource of its own.
 */
export const makeSqliteStore = Effect.fnUntraced(function* (file: string) {
  const location = file
  const corrupt = (detail: string) => new IndexCorrupt({ location, detail })
  /**
   * What readers cache of one build (generation) of the file. Segment ids are unique within a generation and
   * segments never change, so cached columns stay valid; a snapshot keeps the caches of its own generation, so an
   * old snapshot still open across a rebuild cannot fill the new generation's caches with old data.
   */
  let current: Caches | undefined
  const cachesFor = (generation: string): Caches =>
    current?.generation === generation
      ? current
      : (current = {
          generation,
          columns: new Map(),
          deleted: new Map(),
          layout: undefined,
          postings: new Map(),
          postingBytes: 0,
          bodies: new Map(),
          bodyChars: 0,
          packs: new Map(),
          filters: undefined,
          vectorScans: 0,
          rowVectorBytes: 0,
          rows: new Map()
        })
  const cachePostings = (caches: Caches, key: string, decoded: DecodedPostings | null) => {
    caches.postings.set(key, decoded)
    caches.postingBytes += 64 + (decoded === null ? 0 : decoded.ordinals.byteLength * 2)
    for (const [old, value] of caches.postings) {
      if (caches.postingBytes <= POSTINGS_CACHE_BYTES) break
      caches.postings.delete(old)
      caches.postingBytes -= 64 + (value === null ? 0 : value.ordinals.byteLength * 2)
    }
  }

  // Acquired before the connections below, so it is released after them (see `backgroundSync`).
  const background = yield* Effect.acquireRelease(
    Effect.sync(() => backgroundSync(file)),
    (sync) => sync.close
  )

  /**
   * Idle read-only connections, reused across reads and snapshots (each read runs in its own transaction), with the
   * file they opened: a file deleted and made again is another file, which an old connection would never see. Closed
   * with the store's scope; a connection given back after that is closed instead of kept.
   */
  const pool = yield* Effect.acquireRelease(
    Effect.sync((): ReaderPool => ({ idle: [], closed: false })),
    (pool) =>
      Effect.sync(() => {
        pool.closed = true
        for (const { db } of pool.idle.splice(0)) if (db.isOpen) db.close()
      })
  )
  /** An idle connection to the file `identity` names, closing those to files that are gone. */
  const idleReader = (identity: string): Reader | undefined => {
    for (let next = pool.idle.pop(); next !== undefined; next = pool.idle.pop()) {
      if (next.identity === identity) return next
      next.db.close()
    }
    return undefined
  }
  const takeReader = (what: string) =>
    Effect.gen(function* () {
      const identity = yield* sqlite(location, what, () => identityOf(file))
      const reader = idleReader(identity) ?? { db: yield* openReader(location, what), identity }
      yield* sqlite(location, what, () => reader.db.exec("BEGIN")).pipe(
        Effect.onError(() => closeConnection(reader.db))
      )
      return reader
    })
  const giveBack = (reader: Reader) =>
    Effect.sync(() => {
      const { db } = reader
      if (!db.isOpen) return
      try {
        if (db.isTransaction) db.exec("COMMIT")
      } catch {
        db.close()
        return
      }
      if (pool.closed) db.close()
      else pool.idle.push(reader)
    })
  /** A pooled read-only connection in a read transaction of its own, given back to the pool when the scope closes. */
  const reader = (what: string): Effect.Effect<DatabaseSync, StoreError, Scope.Scope> =>
    Effect.map(Effect.acquireRelease(takeReader(what), giveBack), ({ db }) => db)

  /** The connection `version` polls, outside any transaction, with the file it opened; none until the first poll. */
  const watcher = yield* ScopedRef.make((): Reader | undefined => undefined)

  // SQLite's data_version changes when another connection (in any process) commits to the file; a file made again
  // is another file, which the old connection would never see, so the file's identity is part of the token.
  const version = Effect.gen(function* () {
    const what = "checking for changes"
    const identity = yield* sqlite(location, what, () => identityOf(file))
    if (identity === "") return "none"
    if ((yield* ScopedRef.get(watcher))?.identity !== identity) {
      // The old connection closes first, so a file that cannot be opened now leaves none behind.
      yield* ScopedRef.set(watcher, Effect.succeed(undefined))
      yield* ScopedRef.set(
        watcher,
        Effect.acquireRelease(
          Effect.map(openReader(location, what), (db): Reader | undefined => ({ db, identity })),
          (reader) => (reader === undefined ? Effect.void : closeConnection(reader.db))
        )
      )
    }
    const { db } = (yield* ScopedRef.get(watcher))!
    const row = yield* sqlite(location, what, () => db.prepare("PRAGMA data_version").get() as { data_version: number })
    return `${identity}:${row.data_version}`
  }).pipe(Effect.withSpan("IndexStore.version"))

  const checkpoint = Effect.scoped(
    Effect.gen(function* () {
      const what = "checkpointing"
      if ((yield* sqlite(location, what, () => identityOf(file))) === "") return
      const db = yield* Effect.acquireRelease(
        sqlite(location, what, () => new DatabaseSync(location, { timeout: 0 })),
        closeConnection
      )
      yield* sqlite(location, what, () => db.exec("PRAGMA busy_timeout = 0; PRAGMA wal_checkpoint(PASSIVE)"))
    })
  ).pipe(
    // A read-only file or folder, or a writer at work: the next chance will do.
    Effect.ignore,
    Effect.withSpan("IndexStore.checkpoint")
  )

  /** Runs `read` in a read transaction of a pooled read-only connection; `None` when the file does not exist. */
  const reading = <A>(what: string, read: (db: DatabaseSync) => Effect.Effect<A, StoreError>) =>
    Effect.scoped(
      Effect.gen(function* () {
        if (!existsSync(file)) return Option.none<A>()
        return Option.some(yield* read(yield* reader(what)))
      })
    )

  const manifest = reading("reading the manifest", (db) => manifestIn(location, "reading the manifest", db)).pipe(
    Effect.map(Option.flatten),
    Effect.withSpan("IndexStore.manifest")
  )

  const roots = reading("reading the indexed paths", (db) => rootsIn(location, "reading the indexed paths", db)).pipe(
    Effect.map(Option.getOrElse((): ReadonlyArray<string> => [])),
    Effect.withSpan("IndexStore.roots")
  )

  const documents = reading("reading documents", (db) =>
    Effect.gen(function* () {
      const rows = yield* sqlite(location, "reading documents", () =>
        hasTables(db) ? db.prepare("SELECT doc_id, source, title, categories, hash, chunks FROM documents").all() : []
      )
      const docs: Array<StoredDoc> = []
      for (const row of rows) {
        const decoded = storedDocOf(row as Record<string, unknown>)
        if (Result.isFailure(decoded)) return yield* corrupt(decoded.failure)
        docs.push(decoded.success)
      }
      return docs
    })
  ).pipe(Effect.map(Option.getOrElse((): ReadonlyArray<StoredDoc> => [])), Effect.withSpan("IndexStore.documents"))

  const segmentRows = (db: DatabaseSync): Array<SegmentRow> =>
    statement(db, "SELECT id, base, count, live, live_length, version, block_rows FROM segments ORDER BY base")
      .all()
      .map((row) => {
        const r = row as Record<string, unknown>
        const [id, base, count, live, liveLength, version, blockRows] = [
          r["id"],
          r["base"],
          r["count"],
          r["live"],
          r["live_length"],
          r["version"],
          r["block_rows"]
        ]
        if (
          typeof id !== "number" ||
          typeof base !== "number" ||
          typeof count !== "number" ||
          typeof live !== "number" ||
          typeof liveLength !== "number" ||
          typeof version !== "number" ||
          typeof blockRows !== "number" ||
          count < 1 ||
          live < 0 ||
          live > count ||
          blockRows < 1
        )
          throw corrupt(`segment ${String(id)} has invalid counts`)
        return { id, base, count, live, liveLength, version, blockRows }
      })

  const columnsOf = (caches: Caches, segment: SegmentRow): SegmentColumns => {
    let columns = caches.columns.get(segment.id)
    if (columns === undefined) caches.columns.set(segment.id, (columns = { lengths: undefined, blocks: new Map() }))
    return columns
  }

  /**
   * Puts a segment's chunk lengths into `target` (its stretch of a snapshot's lengths), from the segment's cached copy
   * or else from its row; the stretch is then the cached copy. A row's blob is given back as soon as it is copied, so
   * the next segment's is read into the same memory: on a cold query, reading 442k chunks' lengths touched 3.4 MB of
   * fresh memory for 1.7 MB of lengths.
   */
  const lengthsInto = (caches: Caches, db: DatabaseSync, segment: SegmentRow, target: Uint32Array): void => {
    const columns = columnsOf(caches, segment)
    if (columns.lengths !== undefined) target.set(columns.lengths)
    else {
      const row = statement(db, "SELECT lengths FROM segments WHERE id = ?").get(segment.id) as
        | { lengths: unknown }
        | undefined
      const lengths = row?.lengths
      if (!(lengths instanceof Uint8Array) || lengths.byteLength !== segment.count * 4) {
        throw corrupt(`segment ${segment.id} has chunk lengths of the wrong size`)
      }
      new Uint8Array(target.buffer, target.byteOffset, target.byteLength).set(lengths)
      release(lengths)
    }
    columns.lengths = target
  }

  /** Block `block` of a segment as stored: its encoded vectors, with their size checked. */
  const storedBlock = (db: DatabaseSync, segment: SegmentRow, dimensions: number, block: number) => {
    const rows = rowsInBlock(segment.blockRows, segment.count, block)
    const data = (
      statement(db, "SELECT data FROM vectors WHERE id = ?").get(segment.id * BLOCKS_PER_SEGMENT + block) as
        | { data: unknown }
        | undefined
    )?.data
    const encoding = data instanceof Uint8Array ? encodingFor(data.byteLength, rows * dimensions) : undefined
    if (encoding === undefined) throw corrupt(`segment ${segment.id} has a vector block of the wrong size`)
    return { rows, encoding, data: data as Uint8Array }
  }

  /**
   * A stored block decoded into `vectors`, with each row's magnitude (`sqrt(Σ x·x)`, summed left to right, as the
   * segment was built and as the engine's reference computes it) into `magnitudes`: the same bits as storing them.
   */
  const decodeRows = (
    segment: SegmentRow,
    stored: ReturnType<typeof storedBlock>,
    dimensions: number,
    vectors: Float64Array,
    magnitudes: Float64Array
  ): { readonly vectors: Float64Array; readonly magnitudes: Float64Array } => {
    const decoded = decodeBlock(stored.data, stored.encoding, stored.rows, dimensions, vectors, magnitudes)
    if (decoded === "not finite") throw corrupt(`segment ${segment.id} has a vector that is not finite`)
    // Finite components whose squares overflow: no model makes them, so the block is damaged.
    if (decoded === "too long") throw corrupt(`segment ${segment.id} has a vector too long to score`)
    return { vectors, magnitudes }
  }

  /** Block `block` of a segment's vectors (decoded to float64) and magnitudes, read and checked once, then kept. */
  const vectorBlock = (
    db: DatabaseSync,
    segment: SegmentRow,
    dimensions: number,
    columns: SegmentColumns,
    block: number
  ) => {
    const cached = columns.blocks.get(block)
    if (cached !== undefined) return cached
    const stored = storedBlock(db, segment, dimensions, block)
    const loaded = decodeRows(
      segment,
      stored,
      dimensions,
      new Float64Array(stored.rows * dimensions),
      new Float64Array(stored.rows)
    )
    columns.blocks.set(block, loaded)
    return loaded
  }

  const deletedOf = (caches: Caches, db: DatabaseSync, segment: SegmentRow): Uint8Array | undefined => {
    if (segment.live === segment.count) return undefined
    const cached = caches.deleted.get(segment.id)
    if (cached !== undefined && cached.version === segment.version) return cached.bits
    const row = statement(db, "SELECT deleted FROM segments WHERE id = ?").get(segment.id) as
      | { deleted: unknown }
      | undefined
    const bits = row?.deleted
    if (!(bits instanceof Uint8Array) || bits.byteLength !== Math.ceil(segment.count / 8)) {
      throw corrupt(`segment ${segment.id} has a damaged list of deleted chunks`)
    }
    let live = 0
    for (let i = 0; i < segment.count; i++) if (!isDeleted(bits, i)) live++
    if (live !== segment.live) throw corrupt(`segment ${segment.id} counts ${segment.live} live chunks but has ${live}`)
    caches.deleted.set(segment.id, { version: segment.version, bits })
    return bits
  }

  /**
   * `f`, with what SQLite throws while it runs turned into the store's errors, as the `Snapshot` contract asks (the
   * store's own errors pass as they are): one try per call of a snapshot function, none per row read. One argument
   * at most, passed on as it is, so that the call costs no more than `f`'s own (`keyOf` runs per compared chunk).
   */
  const sqliteReads =
    <I, A>(f: (input: I) => A) =>
    (input: I): A => {
      try {
        return f(input)
      } catch (error) {
        throw sqliteCode(error) === undefined ? error : sqliteError(location, "reading", error)
      }
    }
  /** Reads the text of a `keyOf` key, when a comparison first needs it. */
  const keyText = sqliteReads((read: () => string) => read())

  /** Builds the snapshot's view over the segments of one read transaction on `db`. */
  const snapshotOf = (db: DatabaseSync, manifestValue: IndexManifest): Snapshot => {
    // Segment ids are unique within one build of the file; a rebuild (here or by another process) starts a new
    // generation whose ids may repeat, so the caches start afresh.
    const caches = cachesFor(readMetaIn(db, "generation") ?? "")
    const dimensions = manifestValue.dimensions
    const segments = segmentRows(db)
    const offsets: Array<number> = []
    let positions = 0
    let liveChunks = 0
    let liveLength = 0
    for (const segment of segments) {
      offsets.push(positions)
      positions += segment.count
      liveChunks += segment.live
      liveLength += segment.liveLength
    }
    // The concatenated lengths and deletions depend only on the segments and their versions: reuse them while those
    // stay the same, so a warm query does not copy them again.
    const signature = segments.map((g) => `${g.id}.${g.version}`).join(" ")
    if (caches.layout?.signature !== signature) {
      let deleted: Uint8Array | undefined
      segments.forEach((segment, s) => {
        const bits = deletedOf(caches, db, segment)
        if (bits === undefined) return
        deleted ??= new Uint8Array(positions)
        for (let i = 0; i < segment.count; i++) if (isDeleted(bits, i)) deleted[offsets[s]! + i] = 1
      })
      caches.layout = { signature, lengths: undefined, deleted }
      // Segments merged away or deleted since are no longer needed.
      const listed = new Set(segments.map((g) => g.id))
      for (const id of caches.columns.keys()) if (!listed.has(id)) caches.columns.delete(id)
      for (const id of caches.deleted.keys()) if (!listed.has(id)) caches.deleted.delete(id)
    }
    const layout = caches.layout
    const { deleted } = layout
    // The lengths are read when a query first needs them: BM25 does, a vector query does not (1.7 MB at 442k chunks).
    const lengths = sqliteReads((): Uint32Array => {
      if (layout.lengths === undefined) {
        const all = new Uint32Array(positions)
        segments.forEach((segment, s) => {
          lengthsInto(caches, db, segment, all.subarray(offsets[s]!, offsets[s]! + segment.count))
        })
        layout.lengths = all
      }
      return layout.lengths
    })

    const segmentAt = (position: number): number => {
      let lo = 0
      let hi = segments.length - 1
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1
        if (offsets[mid]! <= position) lo = mid
        else hi = mid - 1
      }
      if (segments.length === 0 || position < 0 || position >= positions)
        throw corrupt(`no chunk at position ${position}`)
      return lo
    }

    const postingsStatement = statement(db, "SELECT df, data FROM postings WHERE segment = ? AND term = ?")
    const postings = (term: string): ReadonlyArray<TermBlock> => {
      const blocks: Array<TermBlock> = []
      segments.forEach((segment, s) => {
        const key = `${segment.id} ${term}`
        let decoded = caches.postings.get(key)
        if (decoded === undefined) {
          const row = postingsStatement.get(segment.id, term) as { df: unknown; data: unknown } | undefined
          decoded =
            row === undefined
              ? null
              : typeof row.df === "number" && row.data instanceof Uint8Array
                ? (decodePostings(row.data, row.df, segment.count) ?? undefined)
                : undefined
          if (decoded === undefined) throw corrupt(`the postings of ${JSON.stringify(term)} are damaged`)
          cachePostings(caches, key, decoded)
        } else {
          // Most recently used last, so eviction takes the least recently used first.
          caches.postings.delete(key)
          caches.postings.set(key, decoded)
        }
        if (decoded !== null) blocks.push({ offset: offsets[s]!, ordinals: decoded.ordinals, tfs: decoded.tfs })
      })
      return blocks
    }

    let blocks: ReadonlyArray<VectorBlock> | undefined
    /**
     * The first scan in a generation reads each block and passes it on as stored (16-bit blocks, which the scan
     * decodes row by row) or decoded into one buffer, keeping nothing: a command that asks once (the CLI) would
     * otherwise keep every vector as float64, and on the benchmark machine touching fresh memory costs ~4 ms per MB
     * (56 MB at 442k chunks). Later scans are those of a long-lived reader (a server), which keeps the decoded blocks.
     */
    const vectorBlocks = (): Iterable<VectorBlock> => {
      if (blocks !== undefined) return blocks
      if (caches.vectorScans++ === 0) return streamedBlocks()
      return (blocks = segments.flatMap((segment, s) => {
        const columns = columnsOf(caches, segment)
        return Array.from({ length: Math.ceil(segment.count / segment.blockRows) }, (_, b) => {
          const { magnitudes, vectors } = vectorBlock(db, segment, dimensions, columns, b)
          return { offset: offsets[s]! + b * segment.blockRows, count: magnitudes.length, vectors, magnitudes }
        })
      }))
    }
    const readStored = sqliteReads((at: { segment: SegmentRow; block: number }) =>
      storedBlock(db, at.segment, dimensions, at.block)
    )
    function* streamedBlocks(): Generator<VectorBlock> {
      let buffer = new Float64Array(0)
      let norms = new Float64Array(0)
      for (let s = 0; s < segments.length; s++) {
        const segment = segments[s]!
        for (let b = 0; b * segment.blockRows < segment.count; b++) {
          const stored = readStored({ segment, block: b })
          const offset = offsets[s]! + b * segment.blockRows
          if (stored.encoding === "u16") {
            // As stored: the scan decodes each row as it scores it. A blob's bytes start at an even offset.
            const data = stored.data.byteOffset % 2 === 0 ? stored.data : stored.data.slice()
            yield {
              offset,
              count: stored.rows,
              codes: new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2)
            }
            release(stored.data)
            continue
          }
          if (norms.length < stored.rows) {
            buffer = new Float64Array(segment.blockRows * dimensions)
            norms = new Float64Array(segment.blockRows)
          }
          const { magnitudes, vectors } = decodeRows(
            segment,
            stored,
            dimensions,
            buffer.subarray(0, stored.rows * dimensions),
            norms.subarray(0, stored.rows)
          )
          release(stored.data)
          yield { offset, count: stored.rows, vectors, magnitudes }
        }
      }
    }

    const chunkStatement = statement(
      db,
      "SELECT id, doc_id, title, first, chunks, spans FROM documents WHERE first <= ? AND chunks > 0 " +
        "ORDER BY first DESC LIMIT 1"
    )
    const placeStatement = statement(db, "SELECT pack, body_start, body_end FROM documents WHERE id = ?")
    const packStatement = statement(db, "SELECT data FROM packs WHERE id = ?")
    /** A pack, decompressed; the last few are kept, as a result's neighbours in the index share its pack. */
    const unpacked = (id: number, doc: number): Uint8Array => {
      let bytes = caches.packs.get(id)
      if (bytes !== undefined) return bytes
      const blob = (packStatement.get(id) as { data: unknown } | undefined)?.data
      if (!(blob instanceof Uint8Array)) throw corrupt(`the text of document ${doc} is missing`)
      bytes = unpack(blob)
      if (bytes === undefined) throw corrupt(`the text of document ${doc} does not decompress`)
      caches.packs.set(id, bytes)
      if (caches.packs.size > PACK_CACHE_ENTRIES) caches.packs.delete(caches.packs.keys().next().value!)
      return bytes
    }
    const bodyOf = (segment: number, doc: number): string => {
      const key = `${segment}:${doc}`
      let body = caches.bodies.get(key)
      if (body !== undefined) return body
      const place = placeStatement.get(doc) as { pack: unknown; body_start: unknown; body_end: unknown } | undefined
      if (typeof place?.pack !== "number") throw corrupt(`the text of document ${doc} is missing`)
      body = bodyIn(unpacked(place.pack, doc), place.body_start as number, place.body_end as number)
      if (body === undefined) throw corrupt(`the text of document ${doc} is not where its row says`)
      caches.bodies.set(key, body)
      caches.bodyChars += body.length
      for (const [old, text] of caches.bodies) {
        if (caches.bodyChars <= BODY_CACHE_CHARS) break
        caches.bodies.delete(old)
        caches.bodyChars -= text.length
      }
      return body
    }
    const rowAt = (position: number) => {
      const s = segmentAt(position)
      // A number, not a string: no allocation per lookup (a segment holds far fewer than 2^32 chunks).
      const key = segments[s]!.id * 2 ** 32 + position - offsets[s]!
      const cached = caches.rows.get(key)
      if (cached !== undefined) {
        const { doc, docId, end, start, title } = cached
        return { s, docId, title, start, end, text: () => spanText(bodyOf(segments[s]!.id, doc), start, end) }
      }
      const id = segments[s]!.base + position - offsets[s]!
      // The document holding the chunk: the one whose chunks start last at or before it.
      const row = chunkStatement.get(id) as Record<string, unknown> | undefined
      const docId = row?.["doc_id"]
      const title = row?.["title"]
      const doc = row?.["id"]
      const first = row?.["first"]
      const chunks = row?.["chunks"]
      const spans = typeof chunks === "number" ? spansIn(row?.["spans"], chunks) : undefined
      if (
        typeof docId !== "string" ||
        typeof title !== "string" ||
        typeof doc !== "number" ||
        typeof first !== "number" ||
        spans === undefined ||
        id - first >= spans.length / 2
      ) {
        throw corrupt(`chunk ${id} is missing or unreadable`)
      }
      const start = spans[2 * (id - first)]!
      const end = spans[2 * (id - first) + 1]!
      if (caches.rows.size >= ROW_CACHE_ENTRIES) {
        caches.rows.clear()
        caches.rowVectorBytes = 0
      }
      caches.rows.set(key, { docId, title, doc, start, end })
      return { s, docId, title, start, end, text: () => spanText(bodyOf(segments[s]!.id, doc), start, end) }
    }
    const keyOf = (position: number): RankKey => {
      const { docId, end, start, text } = rowAt(position)
      // Doc id, start and end already tell chunks apart; the text is only read if a comparison ever gets to it.
      let cached: string | undefined
      return {
        score: 0,
        docId,
        start,
        end,
        get text() {
          return (cached ??= keyText(text))
        }
      }
    }
    /**
     * A result's vector, when its block is not kept: SQLite cuts the row's bytes out of the block, so a query reads a
     * few bytes per result rather than a 128–512 KB block into fresh memory each time.
     */
    const lengthStatement = statement(db, "SELECT length(data) AS n FROM vectors WHERE id = ?")
    const rowStatement = statement(db, "SELECT substr(data, ?, ?) AS row FROM vectors WHERE id = ?")
    /**
     * The last block two rows in a row were read from, as stored: a reader going through positions in order (a copy
     * of the index) reads each block once instead of once per row.
     */
    let lastBlock: { readonly id: number; readonly stored: ReturnType<typeof storedBlock> } | undefined
    let lastRowBlock = -1
    const storedRow = (segment: SegmentRow, block: number, at: number): Float64Array => {
      const id = segment.id * BLOCKS_PER_SEGMENT + block
      if (lastBlock?.id !== id && lastRowBlock === id) {
        lastBlock = { id, stored: storedBlock(db, segment, dimensions, block) }
      }
      lastRowBlock = id
      // The row's components: within the kept block, or cut out of the stored one.
      let bytes: Uint8Array
      let encoding: VectorEncoding
      let from = 0
      if (lastBlock?.id === id) {
        ;({ data: bytes, encoding } = lastBlock.stored)
        from = at
      } else {
        const rows = rowsInBlock(segment.blockRows, segment.count, block)
        const length = (lengthStatement.get(id) as { n: unknown } | undefined)?.n
        const found = typeof length === "number" ? encodingFor(length, rows * dimensions) : undefined
        if (found === undefined) throw corrupt(`segment ${segment.id} has a vector block of the wrong size`)
        const size = (length as number) / (rows * dimensions)
        const row = (rowStatement.get(at * size + 1, dimensions * size, id) as { row: unknown } | undefined)?.row
        if (!(row instanceof Uint8Array) || row.byteLength !== dimensions * size) {
          throw corrupt(`segment ${segment.id} has a vector block of the wrong size`)
        }
        bytes = row
        encoding = found
      }
      const out = new Float64Array(dimensions)
      if (!decodeVectors(bytes, encoding, from, from + dimensions, out)) {
        throw corrupt(`segment ${segment.id} has a vector that is not finite`)
      }
      return out
    }

    const chunkAt = (position: number): StoredChunk => {
      const { docId, end, s, start, text: textOf, title } = rowAt(position)
      const text = textOf()
      const row = position - offsets[s]!
      const segment = segments[s]!
      const block = Math.floor(row / segment.blockRows)
      const at = (row % segment.blockRows) * dimensions
      const cached = columnsOf(caches, segment).blocks.get(block)
      let vector = cached?.vectors.subarray(at, at + dimensions)
      if (vector === undefined) {
        // Kept with the chunk's row (rowAt has just cached it), so a result read again costs no statement.
        const kept = caches.rows.get(segment.id * 2 ** 32 + row)
        vector = kept?.vector ?? storedRow(segment, block, at)
        if (kept !== undefined && kept.vector === undefined && caches.rowVectorBytes < ROW_VECTOR_BYTES) {
          kept.vector = vector
          caches.rowVectorBytes += vector.byteLength
        }
      }
      return { docId, title, start, end, text, vector: Array.from(vector) }
    }

    const documentStatement = statement(
      db,
      "SELECT id, doc_id, source, title, categories, hash, first, chunks, spans FROM documents WHERE doc_id = ?"
    )
    const document = (docId: string): StoredDocument | undefined => {
      const row = documentStatement.get(docId) as Record<string, unknown> | undefined
      if (row === undefined) return undefined
      const decoded = storedDocOf(row)
      if (Result.isFailure(decoded)) throw corrupt(decoded.failure)
      const id = row["id"] as number
      const count = decoded.success.chunks
      const spans = spansIn(row["spans"], count)
      if (spans === undefined) throw corrupt(`the chunks of ${JSON.stringify(docId)} are not in the index`)
      const first = row["first"] as number
      const segment = segments.find((g) => first >= g.base && first < g.base + g.count)
      if (count > 0 && segment === undefined)
        throw corrupt(`the chunks of ${JSON.stringify(docId)} are not in the index`)
      const body = count === 0 ? "" : bodyOf(segment!.id, id)
      return {
        doc: decoded.success,
        chunks: Array.from({ length: count }, (_, c) => {
          const start = spans[2 * c]!
          const end = spans[2 * c + 1]!
          return { start, end, text: spanText(body, start, end) }
        })
      }
    }

    let docs: { readonly docOf: Int32Array; readonly count: number; readonly order: Int32Array } | undefined
    const documentsOf = () => {
      if (docs !== undefined) return docs
      const docOf = new Int32Array(positions).fill(-1)
      const ids: Array<string> = []
      for (const row of db.prepare("SELECT doc_id, first, chunks FROM documents WHERE chunks > 0").iterate()) {
        const { chunks, doc_id, first } = row as { doc_id: string; first: number; chunks: number }
        const s = segments.findIndex((g) => first >= g.base && first < g.base + g.count)
        if (s < 0 || first + chunks > segments[s]!.base + segments[s]!.count)
          throw corrupt("a document's chunks are not in the index")
        const from = offsets[s]! + first - segments[s]!.base
        docOf.fill(ids.length, from, from + chunks)
        ids.push(doc_id)
      }
      const byId = ids.map((_, i) => i).sort((a, b) => compareCodePoints(ids[a]!, ids[b]!))
      const order = new Int32Array(ids.length)
      byId.forEach((doc, rank) => {
        order[doc] = rank
      })
      return (docs = { docOf, count: ids.length, order })
    }

    // The documents with chunks, in id order, as query filters read them: their positions now, a column when a rule
    // first needs it (read in this snapshot's transaction, which sees the documents the table was made from).
    const DOCUMENTS_WITH_CHUNKS = "FROM documents WHERE chunks > 0 ORDER BY id"
    const tableFilter = (): TableFilter => {
      if (caches.filters?.signature === signature) return caches.filters.table
      const statement = db.prepare(`SELECT first, chunks ${DOCUMENTS_WITH_CHUNKS}`)
      statement.setReturnArrays(true)
      const rows = statement.all() as unknown as Array<Array<unknown>>
      const first = new Int32Array(rows.length)
      const chunks = new Int32Array(rows.length)
      rows.forEach(([at, count], doc) => {
        if (typeof at !== "number" || typeof count !== "number") throw corrupt("a document's chunks are unreadable")
        const s = segments.findIndex((g) => at >= g.base && at < g.base + g.count)
        if (s < 0 || at + count > segments[s]!.base + segments[s]!.count) {
          throw corrupt("a document's chunks are not in the index")
        }
        first[doc] = offsets[s]! + at - segments[s]!.base
        chunks[doc] = count
      })
      const table = new TableFilter({ first, chunks, positions })
      caches.filters = { signature, table, results: new Map() }
      return table
    }
    const readColumn = (column: TableColumn): ReadonlyArray<string | null> => {
      const statement = db.prepare(`SELECT ${column} ${DOCUMENTS_WITH_CHUNKS}`)
      statement.setReturnArrays(true)
      return (statement.all() as unknown as Array<Array<unknown>>).map(([value]) => {
        if (typeof value === "string" || (value === null && column === "categories")) return value
        throw corrupt(`a document's ${column} is unreadable`)
      })
    }
    const filter = (rule: Rule): PositionFilter => {
      const table = tableFilter()
      return cachedPositions(caches.filters!.results, rule, (r) => table.positions(r, readColumn))
    }

    return {
      manifest: manifestValue,
      // The layout is made anew whenever a segment is added, changed or removed, and a rebuild starts new caches.
      stateKey: layout,
      dimensions,
      positions,
      liveChunks,
      averageLength: liveChunks === 0 ? 0 : liveLength / liveChunks,
      get lengths() {
        return lengths(undefined)
      },
      deleted,
      postings: sqliteReads(postings),
      vectorBlocks: sqliteReads<void, Iterable<VectorBlock>>(vectorBlocks),
      keyOf: sqliteReads(keyOf),
      chunkAt: sqliteReads(chunkAt),
      document: sqliteReads(document),
      documents: sqliteReads<void, ReturnType<typeof documentsOf>>(documentsOf),
      tieOrder: () => (docs === undefined ? undefined : documentTies(docs)),
      filter: sqliteReads(filter)
    }
  }

  const snapshot: Effect.Effect<Option.Option<Snapshot>, StoreError, Scope.Scope> = Effect.gen(function* () {
    if (!existsSync(file)) return Option.none()
    const db = yield* reader("opening")
    const found = yield* manifestIn(location, "reading", db)
    if (Option.isNone(found)) return Option.none()
    // The snapshot's columns are read by synchronous code that throws what it finds damaged; this is its boundary.
    return Option.some(
      yield* readSnapshot(
        location,
        sqliteReads<void, Snapshot>(() => snapshotOf(db, found.value))
      )
    )
  }).pipe(Effect.withSpan("IndexStore.snapshot"))

  const makeFolder = Effect.try({
    try: () => mkdirSync(dirname(file), { recursive: true }),
    catch: (error) =>
      new StoreFailure({
        location,
        reason: `cannot create its folder: ${pathProblem(location) ?? systemReason(error)}`,
        cause: error
      })
  })

  const transaction = Effect.fn("IndexStore.transaction")(function* <A, E, R>(
    body: (writer: IndexWriter) => Effect.Effect<A, E, R>,
    options: TransactionOptions = {}
  ) {
    const readOnly = options.readOnly === true
    // Nothing but `body` may be interrupted: a commit, once started, finishes; the connection is always closed.
    return yield* Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        if (readOnly && !existsSync(file)) return yield* restore(body(emptyWriter(location)))
        if (!readOnly) yield* makeFolder
        const creating = !readOnly && isNewFile(file)
        return yield* Effect.acquireUseRelease(
          // A dry run may look at an older layout: a `--rebuild` plan needs only its manifest.
          readOnly ? openReader(location, "opening", true) : openWriter(location, creating),
          (db) =>
            Effect.gen(function* () {
              yield* sqlite(location, "starting a write", () => db.exec(readOnly ? "BEGIN" : "BEGIN IMMEDIATE"))
              const version = yield* layoutVersion(location, "opening", db, true)
              if (version === 0 && !readOnly) yield* sqlite(location, "creating the tables", () => createTables(db))
              if (version === LAYOUT && !readOnly) yield* sqlite(location, "opening", () => db.exec(SEGMENTS_ORDER))
              const writer = sqliteWriter(
                location,
                db,
                version === 0 || version === LAYOUT,
                creating ? background.sync : undefined
              )
              // A dry run over a file with no tables yet (say, left by a failed first run) sees an empty index.
              const value = yield* restore(body(readOnly && version === 0 ? emptyWriter(location) : writer.writer))
              if (readOnly) return value
              yield* writer.finish
              yield* sqlite(location, "committing", () => db.exec("COMMIT"))
              // A new file turns the write-ahead log on; another file's log is folded into it, so the file alone is
              // the index (and the log stays small). Neither waits for readers: while one reads, the file stays as
              // it is until the next write (which turns the log on when it opens the file).
              yield* Effect.ignore(
                sqlite(location, "checkpointing", () =>
                  db.exec(
                    creating
                      ? "PRAGMA busy_timeout = 0; PRAGMA journal_mode = WAL"
                      : "PRAGMA busy_timeout = 0; PRAGMA wal_checkpoint(TRUNCATE)"
                  )
                )
              )
              return value
            }),
          // Rolls back what a failed, interrupted or read-only transaction left uncommitted.
          closeConnection
        )
      })
    )
  })

  return IndexStore.of({ location, manifest, roots, documents, snapshot, version, checkpoint, transaction })
})

/**
 * Writes inside one SQLite transaction: document and chunk rows as they come, search data into a segment that is
 * flushed whenever it reaches the memory budget, and deletions as tombstones applied by `finish`. `current` is false
 * for a file of an older layout, which only `clear` may touch; `segmentWritten` is called after each segment is written
 * (see `backgroundSync`). The synchronous steps report damage they find by returning it (an `IndexCorrupt`, or
 * `undefined` when all is well); the effects around them fail with it.
 */
const sqliteWriter = (location: string, db: DatabaseSync, current: boolean, segmentWritten?: () => void) => {
  let layoutCurrent = current
  const corrupt = (detail: string) => new IndexCorrupt({ location, detail })
  /** Calls into SQLite (see `sqlite`) while writing. */
  const sql = <A>(what: string, f: () => A) => sqlite(location, what, f)
  /** The failure of a write to a file of an older layout (which only `clear` may touch). */
  const tooOld = (what: string) =>
    Effect.flatMap(
      sql(what, () => (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version),
      (found) => Effect.fail(new IndexTooOld({ location, found, supported: LAYOUT }))
    )
  /**
   * Runs `f`, a write that returns the damage it finds, failing with that damage (or with `IndexTooOld` on a file of
   * an older layout). Plain effects rather than a generator or a span of their own: documents are written by the
   * thousand, inside the transaction's span, and a span per document cost about 5 % of indexing time.
   */
  const write = (what: string, f: () => IndexCorrupt | undefined): Effect.Effect<void, StoreError> =>
    Effect.suspend(() =>
      layoutCurrent
        ? Effect.flatMap(sql(what, f), (damage) => (damage === undefined ? Effect.void : Effect.fail(damage)))
        : tooOld(what)
    )

  let manifestValue: Option.Option<IndexManifest> | undefined
  let pending: SegmentBuilder | undefined
  /** True while the index holds no document from before this transaction, so nothing can need replacing. */
  let fresh: boolean | undefined
  const statements = new Map<string, StatementSync>()
  const prepared = (sql: string): StatementSync => {
    let statement = statements.get(sql)
    if (statement === undefined) statements.set(sql, (statement = db.prepare(sql)))
    return statement
  }
  /** The pack last written, and its row: the documents of a pack come one after another. */
  let lastPack: { readonly bytes: Uint8Array; readonly id: number } | undefined
  /** True once a document was removed: a pack may have lost its last document. */
  let packsFreed = false
  const packIdOf = (pack: Uint8Array): number => {
    if (lastPack?.bytes !== pack) {
      const id = Number(prepared("INSERT INTO packs (data) VALUES (?)").run(pack).lastInsertRowid)
      lastPack = { bytes: pack, id }
    }
    return lastPack.id
  }
  /** Deletes the packs no document points into. */
  const dropFreedPacks = () => {
    if (!packsFreed) return
    db.exec("DELETE FROM packs WHERE id NOT IN (SELECT pack FROM documents WHERE pack IS NOT NULL)")
    packsFreed = false
  }
  /** Deleted chunk ranges per segment id: [first ordinal, count] pairs. */
  const tombstones = new Map<number, Array<number>>()

  const nextBase = (): number => {
    const row = db.prepare("SELECT max(base + count) AS next FROM segments").get() as { next: number | null }
    return row.next ?? 0
  }

  /**
   * Writes a new segment's row and vector blocks (`count` chunks' lengths and `dimensions` components each, none
   * deleted; magnitudes are computed again when blocks are read) and returns its id; the caller writes its postings.
   */
  const insertSegment = (
    base: number,
    count: number,
    totalLength: number,
    dimensions: number,
    columns: { readonly lengths: Uint32Array; readonly vectors: Float64Array }
  ): number => {
    const blockRows = blockRowsFor(dimensions)
    const id = Number(
      prepared(
        "INSERT INTO segments (base, count, live, live_length, version, block_rows, lengths, deleted) VALUES (?, ?, ?, ?, 0, ?, ?, NULL)"
      ).run(
        base,
        count,
        count,
        totalLength,
        blockRows,
        new Uint8Array(columns.lengths.buffer, columns.lengths.byteOffset, columns.lengths.byteLength)
      ).lastInsertRowid
    )
    for (let b = 0; b * blockRows < count; b++) {
      const from = b * blockRows
      const to = Math.min(from + blockRows, count)
      prepared("INSERT INTO vectors (id, data) VALUES (?, ?)").run(
        id * BLOCKS_PER_SEGMENT + b,
        encodeVectors(columns.vectors.subarray(from * dimensions, to * dimensions))
      )
    }
    return id
  }

  /** Removes a segment: its row, vector blocks and postings. */
  const dropSegment = (id: number) => {
    prepared("DELETE FROM postings WHERE segment = ?").run(id)
    prepared("DELETE FROM vectors WHERE id >= ? AND id < ?").run(id * BLOCKS_PER_SEGMENT, (id + 1) * BLOCKS_PER_SEGMENT)
    prepared("DELETE FROM segments WHERE id = ?").run(id)
  }

  /** Writes a term's postings in a segment: `count` of them, encoded (see `encodePostings`). */
  const insertPostings = (segment: number, term: string, count: number, bytes: Uint8Array) =>
    prepared("INSERT INTO postings (segment, term, df, data) VALUES (?, ?, ?, ?)").run(segment, term, count, bytes)

  const flush = () => {
    if (pending === undefined || pending.count === 0) return
    const segment = pending
    const id = insertSegment(segment.base, segment.count, segment.totalLength, segment.dimensions, segment.columns())
    for (const [term, count, bytes] of segment.encodedPostings()) insertPostings(id, term, count, bytes)
    pending = new SegmentBuilder(segment.base + segment.count, segment.dimensions, segment)
    segmentWritten?.()
  }

  /**
   * Maps a vocabulary's term numbers to the pending segment's. The batches of one preparing thread share one growing
   * vocabulary, so a mapping is kept per vocabulary while the segment stays, and a term's text is looked up once per
   * segment rather than once per batch.
   */
  let mappings = new WeakMap<ReadonlyArray<string>, Int32Array>()
  let mappedSegment: SegmentBuilder | undefined
  const termNumbers = (terms: TermTable, segment: SegmentBuilder) => {
    if (mappedSegment !== segment) {
      mappings = new WeakMap()
      mappedSegment = segment
    }
    const { vocabulary } = terms
    let known = mappings.get(vocabulary)
    if (known === undefined || known.length < vocabulary.length) {
      const grown = new Int32Array(Math.max(vocabulary.length, 2 * (known?.length ?? 0))).fill(-1)
      if (known !== undefined) grown.set(known)
      mappings.set(vocabulary, (known = grown))
    }
    const numbers = known
    return (id: number): number => {
      let n = numbers[id]!
      if (n < 0) numbers[id] = n = segment.termId(vocabulary[id]!)
      return n
    }
  }

  /** Removes a document's rows and marks its chunks deleted; returns the damage found, if any. */
  const removeChunks = (docId: string, always = false): IndexCorrupt | undefined => {
    fresh ??= db.prepare("SELECT count(*) AS n FROM documents").get()!["n"] === 0
    if (fresh && !always) return undefined
    const row = prepared("SELECT id, first, chunks FROM documents WHERE doc_id = ?").get(docId) as
      | { id: number; first: number; chunks: number }
      | undefined
    if (row === undefined) return undefined
    // Chunks written earlier in this transaction are still in memory: flush them so they can be deleted like others.
    if (pending !== undefined && row.chunks > 0 && row.first >= pending.base) flush()
    if (row.chunks > 0) {
      const segment = db
        .prepare("SELECT id, base, count FROM segments WHERE base <= ? ORDER BY base DESC LIMIT 1")
        .get(row.first) as { id: number; base: number; count: number } | undefined
      if (segment === undefined || row.first + row.chunks > segment.base + segment.count) {
        return corrupt(`the chunks of ${JSON.stringify(docId)} are not in the index`)
      }
      const ranges = tombstones.get(segment.id) ?? []
      ranges.push(row.first - segment.base, row.chunks)
      tombstones.set(segment.id, ranges)
    }
    prepared("DELETE FROM documents WHERE id = ?").run(row.id)
    packsFreed = true
    return undefined
  }

  /** Marks the chunks of removed documents deleted, dropping segments left empty; returns the damage found, if any. */
  const applyTombstones = (): IndexCorrupt | undefined => {
    for (const [id, ranges] of tombstones) {
      const row = db.prepare("SELECT count, live, live_length, deleted, lengths FROM segments WHERE id = ?").get(id) as
        | { count: number; live: number; live_length: number; deleted: Uint8Array | null; lengths: Uint8Array }
        | undefined
      if (row === undefined) return corrupt(`segment ${id} is missing`)
      const bits = row.deleted === null ? new Uint8Array(Math.ceil(row.count / 8)) : Uint8Array.from(row.deleted)
      const lengths = view(row.lengths, 4, (b, o, n) => new Uint32Array(b, o, n))
      let live = row.live
      let liveLength = row.live_length
      for (let r = 0; r < ranges.length; r += 2) {
        for (let i = ranges[r]!; i < ranges[r]! + ranges[r + 1]!; i++) {
          if (isDeleted(bits, i)) continue
          bits[i >> 3] = bits[i >> 3]! | (1 << (i & 7))
          live--
          liveLength -= lengths[i]!
        }
      }
      if (live === 0) {
        dropSegment(id)
      } else {
        db.prepare(
          "UPDATE segments SET live = ?, live_length = ?, deleted = ?, version = version + 1 WHERE id = ?"
        ).run(live, liveLength, bits, id)
      }
    }
    tombstones.clear()
    return undefined
  }

  /**
   * Merges segments, as Lucene's tiered policy does in spirit: a segment more than half deleted, or more small
   * segments than `MAX_SMALL_SEGMENTS`, makes the sparse and small ones (up to one segment's size of live chunks)
   * merge into one new segment holding only their live chunks, so deleted chunks stop costing space and time and
   * queries do not slow down as updates pile up. The documents' chunks get new ids, in the same order. Returns the
   * damage found, if any.
   */
  const mergeSegments = (): IndexCorrupt | undefined => {
    const manifest = manifestValue ?? Option.none()
    if (Option.isNone(manifest)) return undefined
    const { dimensions } = manifest.value
    const maxChunks = maxChunksOf(dimensions)
    const all = db.prepare("SELECT id, base, count, live, block_rows FROM segments ORDER BY base").all() as Array<{
      id: number
      base: number
      count: number
      live: number
      block_rows: number
    }>
    const sparse = (g: (typeof all)[number]) => g.live * 2 < g.count
    const small = (g: (typeof all)[number]) => g.count * 8 < maxChunks
    if (!all.some(sparse) && all.filter(small).length <= MAX_SMALL_SEGMENTS) return undefined
    const picked: typeof all = []
    let live = 0
    for (const g of all) {
      if (!(sparse(g) || small(g)) || live + g.live > maxChunks) continue
      picked.push(g)
      live += g.live
    }
    if (picked.length < 2 && !picked.some(sparse)) return undefined

    // One scan of the documents finds the live documents of every picked segment, in chunk order.
    const docsOf = new Map<number, Array<{ id: number; first: number; chunks: number }>>(picked.map((g) => [g.id, []]))
    for (const row of db.prepare("SELECT id, first, chunks FROM documents WHERE chunks > 0").iterate()) {
      const doc = row as { id: number; first: number; chunks: number }
      const g = picked.find((g) => doc.first >= g.base && doc.first < g.base + g.count)
      if (g !== undefined) docsOf.get(g.id)!.push(doc)
    }
    const base = nextBase()
    const lengths = new Uint32Array(live)
    const vectors = new Float64Array(live * dimensions)
    const newOrdinals = new Map<number, Int32Array>()
    let next = 0
    let totalLength = 0
    for (const g of picked) {
      const row = db.prepare("SELECT lengths, deleted FROM segments WHERE id = ?").get(g.id) as {
        lengths: Uint8Array
        deleted: Uint8Array | null
      }
      const oldLengths = view(row.lengths, 4, (b, o, n) => new Uint32Array(b, o, n))
      const map = new Int32Array(g.count).fill(-1)
      const docs = docsOf.get(g.id)!.sort((a, b) => a.first - b.first)
      for (const doc of docs) {
        const first = base + next
        for (let c = 0; c < doc.chunks; c++) {
          const ordinal = doc.first - g.base + c
          if (row.deleted !== null && isDeleted(row.deleted, ordinal)) {
            return corrupt(`a live document has a deleted chunk in segment ${g.id}`)
          }
          map[ordinal] = next
          lengths[next] = oldLengths[ordinal]!
          totalLength += oldLengths[ordinal]!
          next++
        }
        prepared("UPDATE documents SET first = ? WHERE id = ?").run(first, doc.id)
      }
      for (let b = 0; b * g.block_rows < g.count; b++) {
        const block = db.prepare("SELECT data FROM vectors WHERE id = ?").get(g.id * BLOCKS_PER_SEGMENT + b) as
          | { data: Uint8Array }
          | undefined
        if (block === undefined) return corrupt(`segment ${g.id} is missing a vector block`)
        const rows = rowsInBlock(g.block_rows, g.count, b)
        const encoding = encodingFor(block.data.byteLength, rows * dimensions)
        const v = new Float64Array(rows * dimensions)
        if (encoding === undefined || !decodeVectors(block.data, encoding, 0, v.length, v)) {
          return corrupt(`segment ${g.id} has a damaged vector block`)
        }
        for (let r = 0; r < rows; r++) {
          const to = map[b * g.block_rows + r]!
          if (to < 0) continue
          vectors.set(v.subarray(r * dimensions, (r + 1) * dimensions), to * dimensions)
        }
      }
      newOrdinals.set(g.id, map)
    }
    if (next !== live) return corrupt("the live chunk counts of the merged segments disagree with their documents")

    const id = insertSegment(base, live, totalLength, dimensions, { lengths, vectors })
    // Each term's postings: the source segments' in base order, remapped, so new ordinals stay increasing.
    const parts = new Map<string, Array<readonly [segment: number, df: number, data: Uint8Array]>>()
    for (const g of picked) {
      for (const row of db.prepare("SELECT term, df, data FROM postings WHERE segment = ?").iterate(g.id)) {
        const { data, df, term } = row as { term: string; df: number; data: Uint8Array }
        let list = parts.get(term)
        if (list === undefined) parts.set(term, (list = []))
        list.push([g.id, df, data])
      }
    }
    for (const term of [...parts.keys()].sort()) {
      const pairs: Array<number> = []
      for (const [segment, df, data] of parts.get(term)!) {
        const map = newOrdinals.get(segment)!
        const decoded = decodePostings(data, df, map.length)
        if (decoded === undefined) return corrupt(`the postings of ${JSON.stringify(term)} are damaged`)
        for (let i = 0; i < decoded.ordinals.length; i++) {
          const to = map[decoded.ordinals[i]!]!
          if (to >= 0) pairs.push(to, decoded.tfs[i]!)
        }
      }
      if (pairs.length > 0) insertPostings(id, term, pairs.length / 2, encodePostings(pairs))
    }
    for (const g of picked) dropSegment(g.id)
    return undefined
  }

  /** Stores a document and its chunks, replacing an earlier version; returns the damage found, if any. */
  const writeDoc = (
    doc: DocRecord,
    chunks: ReadonlyArray<ChunkRecord>,
    terms: TermTable,
    vectors: Float64Array
  ): IndexCorrupt | undefined => {
    const damage = removeChunks(doc.docId)
    if (damage !== undefined) return damage
    const insertDoc = prepared(
      "INSERT INTO documents (doc_id, source, title, categories, hash, first, chunks, spans, pack, body_start, " +
        "body_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (doc_id) DO NOTHING"
    )
    // A document without chunks has no text to show: its body is not stored.
    const pack = chunks.length === 0 ? null : packIdOf(doc.body.pack)
    const spans = new Uint32Array(2 * chunks.length)
    chunks.forEach((chunk, i) => {
      spans[2 * i] = chunk.start
      spans[2 * i + 1] = chunk.end
    })
    const insertRow = () => {
      if (chunks.length > 0) {
        const d = vectors.length / chunks.length
        // Room for 16,384 chunks, then 65,536 (see `grow`). Room for a whole segment at once (262,144 chunks at 16
        // dimensions, 35 MB) cost a process that indexes again and again a 35 MB memset at each run, as the allocator
        // hands out freed memory then, not fresh pages: the conformance tests took 9.8 s, now 7.1 s, and the IndexStore
        // tests 6.0 s, now 4.1 s. A 210 MB run copies its first segment's arrays once (4 interleaved pairs: alike).
        pending ??= new SegmentBuilder(nextBase(), d, undefined, Math.min(maxChunksOf(d), 1 << 14))
      }
      const first = chunks.length === 0 ? 0 : pending!.base + pending!.count
      return insertDoc.run(
        doc.docId,
        doc.source,
        doc.title,
        doc.categories,
        doc.hash,
        first,
        chunks.length,
        new Uint8Array(spans.buffer),
        pack,
        pack === null ? null : doc.body.from,
        pack === null ? null : doc.body.to
      )
    }
    let inserted = insertRow()
    // In a fresh index the lookup is skipped; a document written twice in one transaction is replaced all the same.
    if (inserted.changes === 0) {
      const damage = removeChunks(doc.docId, true)
      if (damage !== undefined) return damage
      inserted = insertRow()
    }
    if (chunks.length === 0) return undefined
    const segment = pending!
    const d = segment.dimensions
    const numberOf = termNumbers(terms, segment)
    chunks.forEach((chunk, i) => {
      segment.add(terms.ids, chunk.from, chunk.to, numberOf, vectors, i * d)
    })
    const maxChunks = maxChunksOf(d)
    const full = segment.count >= maxChunks || segment.byteLength >= SEGMENT_LIMIT_BYTES
    if (full || (segment.byteLength >= SEGMENT_BUDGET_BYTES && segment.count * 8 >= maxChunks)) flush()
    return undefined
  }

  const writer: IndexWriter = {
    manifest: Effect.suspend(() =>
      manifestValue !== undefined
        ? Effect.succeed(manifestValue)
        : Effect.map(manifestIn(location, "reading the manifest", db), (found) => (manifestValue = found))
    ).pipe(Effect.withSpan("IndexWriter.manifest")),
    // The meta table is the same in every layout, so an older file's paths are read too (for a rebuild's plan).
    roots: rootsIn(location, "reading the indexed paths", db).pipe(Effect.withSpan("IndexWriter.roots")),
    storedDocs: Effect.gen(function* () {
      if (!layoutCurrent) return yield* tooOld("reading documents")
      return yield* sql("reading documents", () => {
        const stored = new Map<string, StoredEntry>()
        for (const row of db.prepare("SELECT doc_id, hash, source, chunks FROM documents").iterate()) {
          const r = row as { doc_id: string; hash: string; source: string; chunks: number }
          stored.set(r.doc_id, { docId: r.doc_id, hash: r.hash, source: r.source, chunks: r.chunks })
        }
        return stored
      })
    }).pipe(Effect.withSpan("IndexWriter.storedDocs")),
    clear: sql("clearing", () => {
      dropTables(db)
      createTables(db)
      layoutCurrent = true
      pending = undefined
      lastPack = undefined
      packsFreed = false
      tombstones.clear()
      manifestValue = Option.none()
      fresh = true
      statements.clear()
    }).pipe(Effect.withSpan("IndexWriter.clear")),
    deleteDoc: (docId) =>
      write("deleting a document", () => {
        fresh = false
        return removeChunks(docId)
      }),
    putDoc: (doc, chunks, terms, vectors) => write("writing a document", () => writeDoc(doc, chunks, terms, vectors)),
    putDocs: (docs, terms) =>
      write("writing documents", () => {
        for (const { chunks, doc, vectors } of docs) {
          const damage = writeDoc(doc, chunks, terms, vectors)
          if (damage !== undefined) return damage
        }
        return undefined
      }),
    putManifest: Effect.fn("IndexWriter.putManifest")(function* (m: IndexManifest) {
      if (!layoutCurrent) return yield* tooOld("writing the manifest")
      yield* sql("writing the manifest", () => {
        db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('manifest', ?)").run(encodeManifest(m))
        manifestValue = Option.some(m)
      })
    }),
    putRoots: Effect.fn("IndexWriter.putRoots")(function* (roots: ReadonlyArray<string>) {
      if (!layoutCurrent) return yield* tooOld("writing the indexed paths")
      yield* sql("writing the indexed paths", () =>
        db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('roots', ?)").run(JSON.stringify(roots))
      )
    })
  }

  return {
    writer,
    /** Flushes the last segment, applies the deletions and merges segments; run once, just before the commit. */
    finish: Effect.gen(function* () {
      if (!layoutCurrent) return
      const damage = yield* sql("writing the index", () => {
        flush()
        dropFreedPacks()
        return applyTombstones() ?? mergeSegments()
      })
      if (damage !== undefined) return yield* damage
    })
  }
}
