/** Connections to an index file: opening them read-only or for writing, checking the file's layout, SQLite's errors as the store's, and the statements and blobs of the read path. */

import { closeSync, fdatasync, fstatSync, openSync, statSync } from "node:fs"
import { DatabaseSync, type StatementSync } from "node:sqlite"
import { Effect } from "effect"
import { openReason } from "../../platform/SystemReason.ts"
import {
  IndexBusy,
  IndexCorrupt,
  IndexTooNew,
  IndexTooOld,
  NotAnIndex,
  type StoreError,
  StoreFailure
} from "../StoreErrors.ts"

/** 'FPIP': marks a SQLite file as a FuncPipe index. */
export const APPLICATION_ID = 0x46504950

/**
 * The file's layout (its `user_version`), numbered apart from the manifest's format: 1 kept a row per chunk and per
 * posting, 2 immutable segments with a body per document, 3 bodies in packs (`BodyPack`), 4 chunk spans in their
 * document's row instead of a row per chunk, 5 the same with its graphs paged (`ann_rows`, decision 0092). A file is
 * 5 while its index names graphs (`planGraphs`): an older FuncPipe, which cannot read paged graphs, refuses it as
 * newer, and keeps reading and writing any other.
 */
export const LAYOUT = 5

/** The layout of a file without paged graphs: this build reads and writes it as it is (`isCurrentLayout`). */
export const BASE_LAYOUT = 4

/** Whether this build reads and writes a file of layout `version` as it is. */
export const isCurrentLayout = (version: number) => version === BASE_LAYOUT || version === LAYOUT

/** SQLite's extended result code in what node:sqlite threw, or `undefined` for anything that is not SQLite's error. */
export const sqliteExtendedCode = (error: unknown): number | undefined =>
  typeof error === "object" && error !== null && "errcode" in error && typeof error.errcode === "number"
    ? error.errcode
    : undefined

/** SQLite's primary result code in what node:sqlite threw, or `undefined` for anything that is not SQLite's error. */
export const sqliteCode = (error: unknown): number | undefined => {
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
          openReason(location) ??
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
export const sqlite = <A>(location: string, what: string, f: () => A): Effect.Effect<A, StoreError> =>
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
export const layoutVersion = Effect.fnUntraced(function* (
  location: string,
  what: string,
  db: DatabaseSync,
  olderLayout: boolean
) {
  const { appId, tables, version } = yield* sqlite(location, what, () => fileMarks(db))
  if (tables > 0 && appId !== APPLICATION_ID) return yield* new NotAnIndex({ location })
  if (version > LAYOUT) return yield* new IndexTooNew({ location, found: version, supported: LAYOUT })
  if (version > 0 && version < BASE_LAYOUT && !olderLayout) {
    return yield* new IndexTooOld({ location, found: version, supported: LAYOUT })
  }
  return tables === 0 ? 0 : version
})

/** Closes a connection, rolling back what it left uncommitted. */
export const closeConnection = (db: DatabaseSync) =>
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
export const openReader = (
  location: string,
  what: string,
  olderLayout = false
): Effect.Effect<DatabaseSync, StoreError> =>
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
export const openWriter = (location: string, creating: boolean): Effect.Effect<DatabaseSync, StoreError> =>
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
export const isNewFile = (file: string): boolean =>
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
export const backgroundSync = (file: string) => {
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
export const release = (blob: Uint8Array): void => {
  if (blob.byteOffset === 0 && blob.byteLength === blob.buffer.byteLength) (blob.buffer as ArrayBuffer).transfer(0)
}

/**
 * The statements of the read path, prepared once per connection: a warm query runs a dozen small statements, and
 * compiling them again for every query cost about as much as running them.
 */
export const statements = new WeakMap<DatabaseSync, Map<string, StatementSync>>()
export const statement = (db: DatabaseSync, sql: string): StatementSync => {
  let known = statements.get(db)
  if (known === undefined) statements.set(db, (known = new Map()))
  let prepared = known.get(sql)
  if (prepared === undefined) known.set(sql, (prepared = db.prepare(sql)))
  return prepared
}

/** A read-only connection and the file it opened (see `identityOf`). */
export interface Reader {
  readonly db: DatabaseSync
  readonly identity: string
}

/** Idle read-only connections, and whether their store has closed (after which none is kept). */
export interface ReaderPool {
  readonly idle: Array<Reader>
  closed: boolean
}

/** The file at `path` as the system knows it (device and inode), or "" when there is none. */
export const identityOf = (path: string): string => {
  const info = statSync(path, { throwIfNoEntry: false })
  return info === undefined ? "" : `${info.dev}:${info.ino}`
}

/**
 * Wraps `f` so that what SQLite throws while it runs becomes the store's errors, as the `Snapshot` contract asks (the
 * store's own errors pass as they are): one try per call of a snapshot function, none per row read. One argument at
 * most, passed on as it is, so that the call costs no more than `f`'s own (`keyOf` runs per compared chunk).
 */
export const sqliteReadsAt =
  (location: string) =>
  <I, A>(f: (input: I) => A) =>
  (input: I): A => {
    try {
      return f(input)
    } catch (error) {
      throw sqliteCode(error) === undefined ? error : sqliteError(location, "reading", error)
    }
  }
