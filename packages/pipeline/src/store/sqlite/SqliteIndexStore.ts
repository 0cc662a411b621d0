/**
 * The index as one SQLite file laid out for search: the store's layer, its pool of read-only connections, its version
 * token and its write transactions. Documents and chunk text are rows; search data lives in immutable segments.
 */

import { randomUUID } from "node:crypto"
import { closeSync, existsSync, mkdirSync, openSync, readSync, renameSync, rmdirSync, rmSync, statSync } from "node:fs"
import { dirname } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { Effect, Exit, Layer, Option, Result, type Scope, ScopedRef } from "effect"
import { PackReader } from "../../index/BodyPack.ts"
import { folderReason, systemReason } from "../../platform/SystemReason.ts"
import { ScoringScratch } from "../../search/Scratch.ts"
import { BodyCache } from "../BodyCache.ts"
import {
  emptyWriter,
  IndexStore,
  type IndexWriter,
  readSnapshot,
  type Snapshot,
  type StoredDoc,
  type TransactionOptions
} from "../IndexStore.ts"
import { IndexCorrupt, IndexTooNew, NotAnIndex, type StoreError, StoreFailure } from "../StoreErrors.ts"
import type { Caches } from "./Caches.ts"
import {
  APPLICATION_ID,
  backgroundSync,
  closeConnection,
  identityOf,
  isCurrentLayout,
  isNewFile,
  LAYOUT,
  layoutVersion,
  openReader,
  openWriter,
  type Reader,
  type ReaderPool,
  sqlite,
  sqliteReadsAt
} from "./Connection.ts"
import { snapshotReader } from "./Snapshot.ts"
import { createTables, hasTables, manifestIn, rootsIn, SEGMENTS_ORDER, storedDocOf } from "./Tables.ts"
import { sqliteWriter } from "./Writer.ts"

/**
 * The index as one SQLite file at `file` (Node's built-in `node:sqlite`, write-ahead log on). A missing file is an
 * empty index until the first transaction creates it, with its folder. Reading opens the file read-only and checks
 * that it is a FuncPipe index of this build's format. Segment data is immutable, so it is cached across snapshots.
 */
export const layerSqlite = (file: string): Layer.Layer<IndexStore> => Layer.effect(IndexStore, makeSqliteStore(file))

/**
 * What readers cache of one build (generation) of the file: a function from a generation to its caches, keeping those
 * of the latest. Segment ids are unique within a generation and segments never change, so cached columns stay valid;
 * a snapshot keeps the caches of its own generation, so an old snapshot still open across a rebuild cannot fill the
 * new generation's caches with old data.
 */
const generationCaches = () => {
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
          bodies: new BodyCache(),
          packs: new Map(),
          packBytes: 0,
          filters: undefined,
          vectorScans: 0,
          rowVectorBytes: 0,
          rows: new Map(),
          scratch: new ScoringScratch(),
          unpacker: new PackReader()
        })

  return cachesFor
}

/**
 * A pool of idle read-only connections, reused across reads and snapshots (each read runs in its own transaction),
 * with the file they opened: a file deleted and made again is another file, which an old connection would never see.
 * Closed with the scope; a connection given back after that is closed instead of kept. Gives a function that takes a
 * pooled connection in a read transaction of its own, given back to the pool when the caller's scope closes.
 */
const readerPool = Effect.fnUntraced(function* (file: string) {
  const location = file
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

  return reader
})

/**
 * The store's version token: SQLite's data_version changes when another connection (in any process) commits to the
 * file; a file made again is another file, which the old connection would never see, so the file's identity is part
 * of the token.
 */
const versionWatcher = Effect.fnUntraced(function* (file: string) {
  const location = file
  /** The connection `version` polls, outside any transaction, with the file it opened; none until the first poll. */
  const watcher = yield* ScopedRef.make((): Reader | undefined => undefined)

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

  return version
})

/** Folds the write-ahead log into the file when no writer is at work; a failure waits for the next chance. */
const checkpointOf = (file: string) => {
  const location = file
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

  return checkpoint
}

/** The store's write (or dry-run) transactions on `file`; `background` syncs a new file while it is written. */
const transactionOf = (file: string, background: ReturnType<typeof backgroundSync>) => {
  const location = file
  /** Makes the file's folder if need be; the first folder it made (to remove again if the first run fails). */
  const makeFolder = Effect.try({
    try: () => mkdirSync(dirname(file), { recursive: true }),
    catch: (error) =>
      new StoreFailure({
        location,
        reason: `cannot create its folder: ${folderReason(error, location)}`,
        cause: error
      })
  })

  const transaction = Effect.fn("IndexStore.transaction")(function* <A, E, R>(
    body: (writer: IndexWriter) => Effect.Effect<A, E, R>,
    options: TransactionOptions = {}
  ) {
    const readOnly = options.readOnly === true
    if (options.replace === true && !readOnly && !isNewFile(file)) return yield* replaceFile(file, body, options)
    // Nothing but `body` may be interrupted: a commit, once started, finishes; the connection is always closed.
    return yield* Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        if (readOnly && !existsSync(file)) return yield* restore(body(emptyWriter(location)))
        const madeFolder = readOnly ? undefined : yield* makeFolder
        const creating = !readOnly && isNewFile(file)
        // Set once this run has made the tables of a new file under its lock: then, and only then, a failure removes
        // the file (no other run has written to it).
        let madeTables = false
        const made = Effect.acquireUseRelease(
          // A dry run may look at an older layout: a `--rebuild` plan needs only its manifest.
          readOnly ? openReader(location, "opening", true) : openWriter(location, creating),
          (db) =>
            Effect.gen(function* () {
              const opened = statSync(file, { throwIfNoEntry: false })?.ino
              yield* sqlite(location, "starting a write", () => db.exec(readOnly ? "BEGIN" : "BEGIN IMMEDIATE"))
              // While this run waited for the lock, another may have removed the file (its failed first run) or put a
              // rebuilt one in its place: writing to the old one would be lost.
              if (!readOnly && statSync(file, { throwIfNoEntry: false })?.ino !== opened) {
                return yield* new StoreFailure({
                  location,
                  reason: "another run removed or replaced the index file while this one waited for it; run it again"
                })
              }
              const version = yield* layoutVersion(location, "opening", db, true)
              if (version === 0 && !readOnly) {
                yield* sqlite(location, "creating the tables", () => createTables(db))
                madeTables = creating
              }
              if (isCurrentLayout(version) && !readOnly)
                yield* sqlite(location, "opening", () => db.exec(SEGMENTS_ORDER))
              const writer = sqliteWriter(
                location,
                db,
                version === 0 || isCurrentLayout(version),
                creating ? background.sync : undefined,
                options.graphs,
                options.graphBuilder
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
        // A first run that fails (a full disk, a bad input, Ctrl-C) leaves nothing behind: no file, no journal, no
        // folder it made; the message's "nothing was changed" stays true.
        return yield* creating
          ? Effect.onExit(made, (exit) =>
              Exit.isFailure(exit) && madeTables ? Effect.sync(() => removeNewFile(file, madeFolder)) : Effect.void
            )
          : made
      })
    )
  })

  return transaction
}

/**
 * Whose the file at `file` is, from its 100-byte header alone (a damaged index may not open): `ours` (FuncPipe's mark),
 * `foreign` (another program's SQLite database, or not SQLite at all), `newer` (a FuncPipe layout this build does not
 * know), or `blank` (SQLite without a mark: an empty database).
 */
const ownerOf = (file: string): "ours" | "foreign" | "newer" | "blank" => {
  const header = Buffer.alloc(100)
  const fd = openSync(file, "r")
  try {
    readSync(fd, header, 0, 100, 0)
  } finally {
    closeSync(fd)
  }
  if (header.toString("latin1", 0, 16) !== "SQLite format 3\u0000") return "foreign"
  const appId = header.readUInt32BE(68)
  if (appId === 0) return "blank"
  if (appId !== APPLICATION_ID) return "foreign"
  return header.readUInt32BE(60) > LAYOUT ? "newer" : "ours"
}

/**
 * Builds the index anew in a file beside `file` with `body`, and once it is committed and closed puts it in `file`'s
 * place (the old file's log goes first, so that it cannot be applied to the new one). Only a FuncPipe index is
 * replaced: another program's file is refused as `NotAnIndex`, a newer FuncPipe's as `IndexTooNew`. The old file's
 * write lock is held while the new one is built, so no other run writes to it meanwhile (where damage keeps it from
 * opening, it is replaced all the same); a failure leaves the old file as it was and nothing beside it. Readers that
 * hold the old file keep reading it until they next open the index.
 */
const replaceFile = <A, E, R>(
  file: string,
  body: (writer: IndexWriter) => Effect.Effect<A, E, R>,
  options: TransactionOptions
): Effect.Effect<A, E | StoreError, R> =>
  Effect.gen(function* () {
    const owner = yield* sqlite(file, "opening", () => ownerOf(file))
    if (owner === "foreign") return yield* new NotAnIndex({ location: file })
    if (owner === "newer") return yield* new IndexTooNew({ location: file, found: LAYOUT + 1, supported: LAYOUT })
    const fresh = `${file}.rebuilding-${process.pid}-${randomUUID().slice(0, 8)}`
    return yield* Effect.acquireUseRelease(
      holdWriteLock(file),
      (held) =>
        Effect.gen(function* () {
          // A SQLite file without FuncPipe's mark is replaced only when it holds nothing (no table at all).
          if (owner === "blank" && (held === undefined || anyTable(held)))
            return yield* new NotAnIndex({ location: file })
          const built = yield* Effect.acquireUseRelease(
            Effect.sync(() => backgroundSync(fresh)),
            (background): Effect.Effect<A, E | StoreError, R> =>
              transactionOf(fresh, background)(body, {
                ...(options.graphs === undefined ? {} : { graphs: options.graphs }),
                ...(options.graphBuilder === undefined ? {} : { graphBuilder: options.graphBuilder })
              }),
            (background) => background.close
          )
          // The lock is let go just before the swap: closing the old connection may remove the old file's log, which
          // after the swap would be the new file's.
          if (held !== undefined) yield* closeConnection(held)
          yield* Effect.try({
            try: () => {
              for (const suffix of ["-wal", "-shm", "-journal"]) rmSync(`${file}${suffix}`, { force: true })
              renameSync(fresh, file)
            },
            catch: (error) =>
              new StoreFailure({
                location: file,
                reason: `cannot put the rebuilt index in place: ${systemReason(error)}`,
                cause: error
              })
          })
          return built
        }),
      (held) => (held === undefined ? Effect.void : closeConnection(held))
    ).pipe(Effect.onError(() => Effect.sync(() => removeNewFile(fresh, undefined))))
  })

/** Whether a database holds any table. */
const anyTable = (db: DatabaseSync): boolean =>
  (db.prepare("SELECT count(*) AS n FROM sqlite_master").get() as { n: number }).n > 0

/**
 * The old file's write lock, held by a connection in an immediate transaction; `IndexBusy` when another run writes, and
 * `undefined` when damage keeps the file from opening (it is replaced without the lock then).
 */
const holdWriteLock = (file: string): Effect.Effect<DatabaseSync | undefined, StoreError> =>
  Effect.gen(function* () {
    const opened = yield* Effect.result(
      sqlite(file, "opening", () => {
        const db = new DatabaseSync(file, { timeout: 2000 })
        try {
          db.exec("BEGIN IMMEDIATE")
          return db
        } catch (error) {
          db.close()
          throw error
        }
      })
    )
    if (opened._tag === "Success") return opened.success
    return opened.failure._tag === "IndexBusy" ? yield* Effect.fail(opened.failure) : undefined
  })

/** Removes a file a failed first run made, with its journal and logs, and the folders made for it (if empty). */
const removeNewFile = (file: string, madeFolder: string | undefined): void => {
  for (const suffix of ["", "-journal", "-wal", "-shm"]) rmSync(`${file}${suffix}`, { force: true })
  if (madeFolder === undefined) return
  for (let folder = dirname(file); folder.length >= madeFolder.length; folder = dirname(folder)) {
    try {
      rmdirSync(folder)
    } catch {
      return
    }
    if (folder === madeFolder) return
  }
}

/**
 * The SQLite store over `file` (see `layerSqlite`). Its read-only connections live in a pool that the scope closes;
 * each read and each transaction holds its connection as a resource of its own.
 */
export const makeSqliteStore = Effect.fnUntraced(function* (file: string) {
  const location = file
  const corrupt = (detail: string) => new IndexCorrupt({ location, detail })
  const cachesFor = generationCaches()
  // Acquired before the connections below, so it is released after them (see `backgroundSync`).
  const background = yield* Effect.acquireRelease(
    Effect.sync(() => backgroundSync(file)),
    (sync) => sync.close
  )

  const reader = yield* readerPool(file)
  const version = yield* versionWatcher(file)
  const checkpoint = checkpointOf(file)
  const transaction = transactionOf(file, background)

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

  const snapshotOf = snapshotReader(location, cachesFor)

  const snapshot: Effect.Effect<Option.Option<Snapshot>, StoreError, Scope.Scope> = Effect.gen(function* () {
    if (!existsSync(file)) return Option.none()
    const db = yield* reader("opening")
    const found = yield* manifestIn(location, "reading", db)
    if (Option.isNone(found)) return Option.none()
    // The snapshot's columns are read by synchronous code that throws what it finds damaged; this is its boundary.
    return Option.some(
      yield* readSnapshot(
        location,
        sqliteReadsAt(location)<void, Snapshot>(() => snapshotOf(db, found.value))
      )
    )
  }).pipe(Effect.withSpan("IndexStore.snapshot"))

  const check = reading("checking the file", (db) => sqlite(location, "checking the file", () => damageIn(db))).pipe(
    Effect.flatMap((found) =>
      Option.isSome(found) && found.value !== undefined ? Effect.fail(corrupt(found.value)) : Effect.void
    ),
    Effect.withSpan("IndexStore.check")
  )

  return IndexStore.of({
    location,
    manifest,
    roots,
    documents,
    snapshot,
    version,
    checkpoint,
    check,
    transaction
  })
})

/**
 * The damage SQLite's quick check finds in the file, naming the tables it is in (each table is checked alone once
 * the whole file fails), or `undefined` for none.
 */
const damageIn = (db: DatabaseSync): string | undefined => {
  const problems = (table?: string): Array<string> =>
    (
      db.prepare(table === undefined ? "PRAGMA quick_check" : `PRAGMA quick_check("${table}")`).all() as Array<
        Record<string, unknown>
      >
    )
      .map((row) => String(Object.values(row)[0]))
      .filter((line) => line !== "ok")
  // Damage bad enough makes the check itself fail: that is a finding too, and the tables say where.
  let whole: Array<string>
  try {
    whole = problems()
  } catch (error) {
    whole = [error instanceof Error ? error.message : String(error)]
  }
  if (whole.length === 0) return undefined
  const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>)
    .map((row) => row.name)
    .filter((name) => {
      try {
        return problems(name).length > 0
      } catch {
        return true
      }
    })
  const where = tables.length === 0 ? "the file" : `the ${tables.join(", ")} table${tables.length === 1 ? "" : "s"}`
  return `SQLite's check finds damage in ${where}: ${whole[0]}`
}
