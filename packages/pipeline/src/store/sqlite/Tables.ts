/** The tables of an index file: their schema, the `meta` values (manifest, paths), document rows, and the layout of segments and vector blocks. */

import { randomUUID } from "node:crypto"
import type { DatabaseSync } from "node:sqlite"
import { oneLine } from "@funcpipe/domain/Decode"
import { decodeManifestJson, IndexManifest } from "@funcpipe/domain/Manifest"
import { Effect, Option, Result, Schema } from "effect"
import { type RecordedStamp, sameStamp, stampRowOf, storedShown } from "../../base/Stamps.ts"
import { StoredDoc, view } from "../IndexStore.ts"
import { IndexCorrupt } from "../StoreErrors.ts"
import { APPLICATION_ID, BASE_LAYOUT, sqlite, statement } from "./Connection.ts"

/** A segment's vectors are at most this many bytes, so one segment's blob stays small enough to read at once. */
const MAX_SEGMENT_VECTOR_BYTES = 32 * 1024 * 1024

/** The most chunks a segment of `dimensions`-component vectors holds. */
export const maxChunksOf = (dimensions: number): number =>
  Math.max(1024, Math.floor(MAX_SEGMENT_VECTOR_BYTES / (8 * dimensions)))
/** How much decoded postings a store keeps for warm queries. */
export const POSTINGS_CACHE_BYTES = 64 * 1024 * 1024
/** More small segments than this (each under 1/8 of a full one) are merged at the end of a run. */
export const MAX_SMALL_SEGMENTS = 4
/** Whether a segment of `count` chunks is small (under 1/8 of a full one): the kind a run's end may merge. */
export const isSmallSegment = (count: number, dimensions: number): boolean => count * 8 < maxChunksOf(dimensions)
/**
 * How many bytes of decompressed body packs a generation's caches keep (a pack is about 64 KB unless one document is
 * more). A query's results fall in packs all over the index, and each pack holds about thirty documents: with only the
 * last 8 packs kept, a server answering varied queries decompressed a 64 KB pack for nearly every result it showed.
 * A CLI query keeps its few.
 */
export const PACK_CACHE_BYTES = 16 * 1024 * 1024
/**
 * A run flushes its segment once it holds this much and is no longer small (1/8 of a full one, so the segments a run
 * cuts are never merged as small ones at its end), or once it holds `SEGMENT_LIMIT_BYTES` whatever its size: this
 * bounds the writer's memory. Writing a segment holds the writer for a while, during which the preparing threads only
 * work through the batches already sent to them: at 48 MB they ran out and waited (a 210 MB run: about 5 % slower, and
 * 40 MB more peak memory, than at 24 MB).
 */
export const SEGMENT_BUDGET_BYTES = 24 * 1024 * 1024
export const SEGMENT_LIMIT_BYTES = 48 * 1024 * 1024

/**
 * The manifest JSON last decoded, with what it decoded to. Every query reads the manifest, and decoding it through the
 * schema each time took ~50 µs of a warm query of ~0.5 ms; the stored text rarely changes, so the same text is
 * decoded once.
 */
let lastManifest: { readonly json: string; readonly decoded: Result.Result<IndexManifest, string> } | undefined
export const decodeManifest = (json: string): Result.Result<IndexManifest, string> => {
  if (lastManifest?.json !== json) lastManifest = { json, decoded: decodeManifestJson(json) }
  return lastManifest.decoded
}

export const encodeManifest = Schema.encodeSync(Schema.fromJsonString(IndexManifest))

export const hasTables = (db: DatabaseSync) =>
  (statement(db, "SELECT count(*) AS n FROM sqlite_master WHERE name = 'meta'").get() as { n: number }).n > 0

/** A value of the `meta` table, or `undefined` (also for a file with no tables yet). */
export const readMetaIn = (db: DatabaseSync, key: string): string | undefined => {
  if (!hasTables(db)) return undefined
  const row = statement(db, "SELECT value FROM meta WHERE key = ?").get(key) as { value: string } | undefined
  return row?.value
}

/** The stored manifest, `None` before the first run; one that does not decode is `IndexCorrupt`. */
export const manifestIn = Effect.fnUntraced(function* (location: string, what: string, db: DatabaseSync) {
  const json = yield* sqlite(location, what, () => readMetaIn(db, "manifest"))
  if (json === undefined) return Option.none<IndexManifest>()
  const decoded = decodeManifest(json)
  if (Result.isFailure(decoded)) return yield* new IndexCorrupt({ location, detail: `manifest: ${decoded.failure}` })
  return Option.some(decoded.success)
})

/**
 * The files' stamps, one row per file (see `base/Stamps.ts`): made by the first run that records any, so an index made
 * before has none (and an older FuncPipe ignores the table). Times are milliseconds with their fraction, as `stat`
 * gives them; the inode as a double too.
 */
export const FILE_STAMPS_TABLE = `CREATE TABLE IF NOT EXISTS file_stamps (
  file TEXT PRIMARY KEY,
  shown TEXT NOT NULL,
  size INTEGER NOT NULL,
  mtime REAL NOT NULL,
  ctime REAL NOT NULL,
  ino REAL NOT NULL,
  docs INTEGER NOT NULL
) WITHOUT ROWID`

/** Whether the file has the stamps' table. */
const hasStamps = (db: DatabaseSync): boolean =>
  (statement(db, "SELECT count(*) AS n FROM sqlite_master WHERE name = 'file_stamps'").get() as { n: number }).n > 0

/**
 * The stamps in the table (none before a run records any), or `undefined` when a row is not what a run writes. Read
 * as arrays: 38k rows as objects cost a run over unchanged small files a tenth of its time.
 */
const stampRows = (db: DatabaseSync): ReadonlyMap<string, RecordedStamp> | undefined => {
  const stamps = new Map<string, RecordedStamp>()
  if (!hasStamps(db)) return stamps
  const rows = db.prepare("SELECT file, shown, size, mtime, ctime, ino, docs FROM file_stamps")
  rows.setReturnArrays(true)
  for (const row of rows.all() as ReadonlyArray<unknown>) {
    const entry = stampRowOf(row)
    if (entry === undefined) return undefined
    stamps.set(entry[0], entry[1])
  }
  return stamps
}

/**
 * The files' stamps the last run recorded; damaged ones give none, which costs the next run a full read and nothing
 * else.
 */
export const fileStampsIn = (location: string, db: DatabaseSync) =>
  sqlite(location, "reading the files' stamps", (): ReadonlyMap<string, RecordedStamp> => stampRows(db) ?? new Map())

/** Records `stamps` in place of those recorded: rows of files gone are deleted, new and changed ones written. */
export const putFileStampsIn = (db: DatabaseSync, stamps: ReadonlyMap<string, RecordedStamp>): void => {
  db.exec(FILE_STAMPS_TABLE)
  let before = stampRows(db)
  if (before === undefined) {
    // Damaged rows go, all of them: the stamps are written anew.
    db.exec("DELETE FROM file_stamps")
    before = new Map()
  }
  const remove = db.prepare("DELETE FROM file_stamps WHERE file = ?")
  for (const file of before.keys()) if (!stamps.has(file)) remove.run(file)
  const put = db.prepare(
    "INSERT OR REPLACE INTO file_stamps (file, shown, size, mtime, ctime, ino, docs) VALUES (?, ?, ?, ?, ?, ?, ?)"
  )
  for (const [file, s] of stamps) {
    const old = before.get(file)
    if (old !== undefined && old.docs === s.docs && sameStamp(old, s)) continue
    put.run(file, storedShown(s), s.size, s.mtimeMs, s.ctimeMs, s.ino, s.docs)
  }
}

export const decodeRoots = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Array(Schema.String)))

/** The paths the last run read, as stored in `db` (none before the first run). */
export const rootsIn = Effect.fnUntraced(function* (location: string, what: string, db: DatabaseSync) {
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
export const storedDocOf = (row: Record<string, unknown>): Result.Result<StoredDoc, string> =>
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
export const SEGMENTS_ORDER =
  "CREATE INDEX IF NOT EXISTS segments_order ON segments (base, count, live, live_length, version, block_rows)"

export const createTables = (db: DatabaseSync): void => {
  db.exec(`
    PRAGMA application_id = ${APPLICATION_ID};
    PRAGMA user_version = ${BASE_LAYOUT};
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

export const dropTables = (db: DatabaseSync): void => {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all()
  for (const row of tables) db.exec(`DROP TABLE IF EXISTS "${String((row as { name: string }).name)}"`)
}

/**
 * A document's chunk spans as its row stores them: `[start, end]` code-point offsets, chunk after chunk, as 32-bit
 * integers; `undefined` unless the blob holds exactly `chunks` of them.
 */
export const spansIn = (blob: unknown, chunks: number): Uint32Array | undefined =>
  blob instanceof Uint8Array && blob.byteLength === 8 * chunks
    ? view(blob, 4, (buffer, offset, length) => new Uint32Array(buffer, offset, length))
    : undefined

/** A segment's row without its blobs. */
export interface SegmentRow {
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
export interface SegmentColumns {
  /** Its chunks' lengths, once a query has needed them: a stretch of the last snapshot lengths that held them. */
  lengths: Uint32Array | undefined
  readonly blocks: Map<number, KeptBlock>
  /**
   * Room for its float32 rows in a scan kernel's memory, made by the first float32 block kept (`null`: none could be
   * had): blocks kept there lie one after another, and a scan reads them in place. Pages no block was written to take
   * no memory.
   */
  held?: Float32Array | null
}

/** A vector block kept for later scans: decoded to float64 with its magnitudes, or its float32 components as stored. */
export type KeptBlock =
  | { readonly vectors: Float64Array; readonly magnitudes: Float64Array; readonly floats?: undefined }
  | { readonly floats: Float32Array; readonly vectors?: undefined; readonly magnitudes?: undefined }

/**
 * Vectors are stored in blocks of about 512 KiB: a vector query reads every block, a result reads the one block that
 * holds its row. Block `b` of segment `s` is row `s · 2^20 + b` of the `vectors` table.
 */
const VECTOR_BLOCK_BYTES = 512 * 1024
export const blockRowsFor = (dimensions: number) => Math.max(1, Math.floor(VECTOR_BLOCK_BYTES / (8 * dimensions)))
export const BLOCKS_PER_SEGMENT = 2 ** 20
/** How many rows block `block` of a segment of `count` chunks holds (the last block may hold fewer). */
export const rowsInBlock = (blockRows: number, count: number, block: number) =>
  Math.min(blockRows, count - block * blockRows)

/** Whether bit `i` of a deleted-chunks bitmap is set (chunk `i` of its segment is deleted). */
export const isDeleted = (bits: Uint8Array, i: number): boolean => (bits[i >> 3]! & (1 << (i & 7))) !== 0
