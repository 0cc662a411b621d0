/** Boundary service: reads documents from files, directories, CSV and JSONL as a stream of per-record results. */

import { closeSync, open, openSync, read, readSync, statSync } from "node:fs"
import type { RawDoc } from "@funcpipe/domain/Document"
import { compareCodePoints } from "@funcpipe/domain/Ranking"
import {
  Array as Arr,
  Cause,
  Context,
  Effect,
  FileSystem,
  Layer,
  Path,
  PlatformError,
  Result,
  Schema,
  Stream
} from "effect"
import { systemReason } from "../platform/SystemReason.ts"
import { BadRecord } from "./BadRecord.ts"
import {
  BINARY_FILE,
  type ByteReader,
  formatBytes,
  type LineResult,
  MAX_RECORD_BYTES,
  NOT_UTF8,
  sniffBinary
} from "./ByteReader.ts"
import { csvReader } from "./Csv.ts"
import { fileDoc, loadYaml, needsYaml, rootLabels } from "./FileDoc.ts"
import { jsonlReader } from "./Jsonl.ts"

/** A path named for indexing does not exist. */
export class SourceMissing extends Schema.TaggedError<SourceMissing>()("SourceMissing", {
  path: Schema.String
}) {
  override get message(): string {
    return `nothing at ${this.path}: check the path`
  }
}

/** A path exists but cannot be read (permissions, a device, a broken link). */
export class SourceUnreadable extends Schema.TaggedError<SourceUnreadable>()("SourceUnreadable", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot read ${this.path}: ${this.reason}`
  }
}

/** A file named for indexing is of a kind FuncPipe does not read. */
export class UnsupportedSource extends Schema.TaggedError<UnsupportedSource>()("UnsupportedSource", {
  path: Schema.String
}) {
  override get message(): string {
    return `${this.path} is not a kind of file FuncPipe reads: give .md or .txt files, a .csv, a .jsonl, or a directory`
  }
}

/** A directory named for indexing holds no file FuncPipe reads. */
export class NoDocuments extends Schema.TaggedError<NoDocuments>()("NoDocuments", {
  path: Schema.String
}) {
  override get message(): string {
    return `${this.path} holds no .md, .txt, .csv or .jsonl files to index`
  }
}

/** What stops reading altogether (as opposed to a `BadRecord`, which skips one record). */
export type SourceError = SourceMissing | SourceUnreadable | UnsupportedSource | NoDocuments

/** A document with the file it was read from and the line it starts on (0 for a text file, which is one document). */
export interface SourcedDoc {
  readonly source: string
  readonly line: number
  readonly doc: RawDoc
}

/** One record read: a document with its file, or the reason this record was skipped. */
export type SourceRecord = Result.Result<SourcedDoc, BadRecord>

const TEXT_FILE = /\.(md|markdown|txt)$/i
const CSV_FILE = /\.csv$/i
const JSONL_FILE = /\.(jsonl|ndjson)$/i
const READABLE_FILE = /\.(md|markdown|txt|csv|jsonl|ndjson)$/i

/** The largest `.md` or `.txt` file read (each is one document, read whole); a larger one is a `BadRecord`. */
export const MAX_TEXT_FILE_BYTES = 64 * 1024 * 1024

/** Bytes read from a CSV or JSONL file at a time. */
export const READ_CHUNK_BYTES = 64 * 1024

/** How `DocumentSource.layerWith` reads; every field has a default suited to real files (tests use tiny ones). */
export interface ReadOptions {
  /** Bytes read from a CSV or JSONL file at a time (default `READ_CHUNK_BYTES`). */
  readonly chunkBytes?: number
  /** The largest text file read (default `MAX_TEXT_FILE_BYTES`). */
  readonly maxTextFileBytes?: number
  /** The largest JSONL line or CSV record read (default `MAX_RECORD_BYTES`). */
  readonly maxRecordBytes?: number
}

/** The incremental parser for a CSV or JSONL file, by its name; `undefined` for a text file or another kind. */
const readerFor = (name: string, source: string, maxRecordBytes: number): ByteReader | undefined =>
  CSV_FILE.test(name)
    ? sniffBinary(csvReader(source, maxRecordBytes), source)
    : JSONL_FILE.test(name)
      ? sniffBinary(jsonlReader(source, maxRecordBytes), source)
      : undefined

/** Decodes a whole text file strictly; a leading byte order mark is dropped. */
const decodeUtf8 = (bytes: Uint8Array): Result.Result<string, string> => {
  if (bytes.includes(0)) return Result.fail(BINARY_FILE)
  try {
    return Result.succeed(new TextDecoder("utf-8", { fatal: true }).decode(bytes))
  } catch {
    return Result.fail(NOT_UTF8)
  }
}

/** Why a path could not be read, in plain words ("it is a directory", "permission denied"). */
const describe = (error: PlatformError.PlatformError): string => systemReason(error)

/** A file to read: where it is, and its doc id (a text file) or source name (a CSV or JSONL file). */
interface SourceFile {
  readonly file: string
  readonly shown: string
}

/** What listing the paths finds: a file to read, or an entry skipped with its reason (a loop, an unreadable folder). */
type Found = (SourceFile & { readonly _tag: "File" }) | { readonly _tag: "Skip"; readonly record: BadRecord }

export class DocumentSource extends Context.Service<
  DocumentSource,
  {
    /**
     * Reads every path in order. A `.md` or `.txt` file is one document; a `.csv` or `.jsonl` file yields one record
     * per row or line, with the doc ids it holds. A directory is walked for all of these (sorted, hidden entries and
     * `node_modules` left out), and a text file's doc id is its path relative to the directory with `/`; a text file
     * named directly gets its file name as doc id. A bad record is a
     * `BadRecord` value in the stream and reading goes on; a missing, unreadable or unsupported path, or a directory
     * with nothing to index, ends the stream with a `SourceError`.
     *
     * CSV and JSONL files are read in chunks as the stream is pulled, so memory does not grow with the file; records
     * come in chunks of a few hundred. A file whose first 8000 bytes hold a NUL byte is binary (or UTF-16) and is one
     * `BadRecord` (line 0). In JSONL, a line that is not UTF-8, holds a NUL byte or is longer than 64 MiB is a
     * `BadRecord` for that line; in CSV, such bytes (or a record over 64 MiB, usually an unclosed quote) end the file
     * with one `BadRecord` naming the line, after the rows before it. A text file over `MAX_TEXT_FILE_BYTES` is a
     * `BadRecord`.
     */
    readonly read: (paths: ReadonlyArray<string>) => Stream.Stream<SourceRecord, SourceError>
    /**
     * The total size in bytes of the files `read` would read under `paths` (found the same way, without reading
     * them), for progress reports; it fails as `read` would for a missing, unreadable or unsupported path.
     */
    readonly size: (paths: ReadonlyArray<string>) => Effect.Effect<number, SourceError>
  }
>()("pipeline/DocumentSource") {
  /** Reads through the platform `FileSystem` and `Path`, with `options` in place of the defaults. */
  static readonly layerWith = (options: ReadOptions) =>
    Layer.effect(
      DocumentSource,
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const chunkBytes = options.chunkBytes ?? READ_CHUNK_BYTES
        const maxTextFileBytes = options.maxTextFileBytes ?? MAX_TEXT_FILE_BYTES
        const maxRecordBytes = options.maxRecordBytes ?? MAX_RECORD_BYTES

        const failFor = (target: string) => (error: PlatformError.PlatformError) =>
          Effect.fail<SourceMissing | SourceUnreadable>(
            error.reason._tag === "NotFound"
              ? new SourceMissing({ path: target })
              : new SourceUnreadable({ path: target, reason: describe(error) })
          )

        const unreadable =
          (shown: string) =>
          (error: PlatformError.PlatformError): SourceRecord =>
            Result.fail(new BadRecord({ source: shown, line: 0, reason: describe(error) }))

        const readText = Effect.fn("DocumentSource.readText")(function* (file: string, shown: string) {
          const bad = (reason: string) => new BadRecord({ source: shown, line: 0, reason })
          const info = yield* fs.stat(file).pipe(Effect.result)
          if (Result.isFailure(info)) return Result.fail(bad(describe(info.failure)))
          if (Number(info.success.size) > maxTextFileBytes) {
            const limit = formatBytes(maxTextFileBytes)
            return Result.fail(bad(`larger than ${limit}, skipped; split it or convert it to JSONL to index it`))
          }
          const bytes = yield* fs.readFile(file).pipe(Effect.result)
          if (Result.isFailure(bytes)) return Result.fail(bad(describe(bytes.failure)))
          return Result.mapError(decodeUtf8(bytes.success), bad)
        })

        /** What a failed file operation of Node's becomes: the platform's error, whose cause gives the reason. */
        const fileError = (method: string, file: string, cause: unknown): PlatformError.PlatformError =>
          PlatformError.systemError({ _tag: "Unknown", module: "FileSystem", method, pathOrDescriptor: file, cause })

        /**
         * A file operation of Node's, done synchronously: reading a file piece by piece through the platform's
         * asynchronous `read` (a trip to libuv's thread pool per piece) cost the parsing thread about three times as
         * much (a 210 MB file: 0.54 s against 0.17 s of that thread's time), and it is the thread that writes the index.
         * Only for regular files: opening or reading a named pipe waits for its writer, which would stop the thread.
         */
        const fileSync = <A>(method: string, file: string, f: () => A): Effect.Effect<A, PlatformError.PlatformError> =>
          Effect.try({ try: f, catch: (cause) => fileError(method, file, cause) })

        /** A file operation of Node's on its thread pool, for what is not a regular file (a named pipe, a device). */
        const fileAsync = <A>(
          method: string,
          file: string,
          f: (done: (error: NodeJS.ErrnoException | null, value: A) => void) => void
        ): Effect.Effect<A, PlatformError.PlatformError> =>
          Effect.callback((resume) =>
            f((error, value) =>
              resume(error === null ? Effect.succeed(value) : Effect.fail(fileError(method, file, error)))
            )
          )

        /**
         * A turn of Node's event loop, taken by a file's reader at least every `TURN_MILLIS` ms. Reads that do not wait
         * leave the loop unvisited for as long as the rest of the program keeps up with the file, and with it Ctrl-C
         * (a signal is delivered by the loop): an interrupted run of small documents went on to the end of the file.
         */
        const TURN_MILLIS = 20
        const turn = Effect.callback<void>((resume) => {
          const handle = setImmediate(() => resume(Effect.void))
          return Effect.sync(() => clearImmediate(handle))
        })

        /** The records of a CSV or JSONL file, parsed chunk by chunk as the stream is pulled. */
        const streamFile = (file: string, shown: string, reader: ByteReader): Stream.Stream<SourceRecord> =>
          Stream.unwrap(
            Effect.gen(function* () {
              // One buffer for the whole file: readers copy what they keep, and fresh buffers would cost page faults.
              const buffer = new Uint8Array(chunkBytes)
              // Synchronously from a regular file; from anything else (a named pipe) on the thread pool, in order.
              const regular = statSync(file, { throwIfNoEntry: false })?.isFile() === true
              const fd = yield* Effect.acquireRelease(
                regular
                  ? fileSync("open", file, () => openSync(file, "r"))
                  : fileAsync<number>("open", file, (done) => open(file, "r", done)),
                (fd) => Effect.sync(() => closeSync(fd))
              )
              /** Reads the next piece into `buffer`. */
              const next = regular
                ? fileSync("read", file, () => readSync(fd, buffer, 0, buffer.length, null))
                : fileAsync<number>("read", file, (done) => read(fd, buffer, 0, buffer.length, null, done))
              let ended = false
              const toRecord = (result: LineResult): SourceRecord =>
                Result.map(result, ({ doc, line }) => ({ source: file, line, doc }))
              let turned = performance.now()
              const pull = Effect.gen(function* () {
                while (!ended && !reader.done()) {
                  if (performance.now() - turned >= TURN_MILLIS) {
                    yield* turn
                    turned = performance.now()
                  }
                  const count = yield* next
                  if (count === 0) ended = true
                  const results = count === 0 ? reader.end() : reader.push(buffer.subarray(0, count))
                  if (Arr.isReadonlyArrayNonEmpty(results)) return Arr.map(results, toRecord)
                }
                return yield* Cause.done()
              })
              return Stream.fromPull(Effect.succeed(pull))
            })
          ).pipe(Stream.catchTag("PlatformError", (error) => Stream.make(unreadable(shown)(error))))

        /** The records of one file. */
        const readFile = ({ file, shown }: SourceFile): Stream.Stream<SourceRecord> => {
          const reader = readerFor(file, shown, maxRecordBytes)
          if (reader !== undefined) return streamFile(file, shown, reader)
          return Stream.fromEffect(
            Effect.flatMap(readText(file, shown), (text) => {
              if (Result.isFailure(text)) return Effect.succeed(Result.fail(text.failure))
              const body = text.success
              return Effect.map(needsYaml(shown, body) ? loadYaml : Effect.void, () =>
                Result.map(fileDoc(shown, body), (doc) => ({ source: file, line: 0, doc }))
              )
            })
          )
        }

        /**
         * The files under a directory, sorted, with their shown paths (`prefix` before each). A link back to a
         * folder being walked (a loop), a second name of a folder already walked, an unreadable folder below the
         * root and a broken link to a readable kind of file are listed as skips; the root itself must be readable.
         */
        const walk = Effect.fn("DocumentSource.walk")(function* (
          root: string,
          prefix: string,
          walked: Map<string, string>
        ) {
          const found: Array<Found> = []
          const skip = (shown: string, reason: string) =>
            found.push({ _tag: "Skip", record: new BadRecord({ source: shown, line: 0, reason }) })
          const visit = (
            relative: string,
            ancestors: ReadonlyArray<string>
          ): Effect.Effect<void, SourceMissing | SourceUnreadable> =>
            Effect.gen(function* () {
              const dir = relative === "" ? root : path.join(root, relative)
              const shownDir = relative === "" ? (prefix === "" ? root : prefix.slice(0, -1)) : prefix + relative
              const real = yield* fs.realPath(dir).pipe(Effect.orElseSucceed(() => dir))
              const before = walked.get(real)
              if (before !== undefined) {
                return void skip(
                  shownDir,
                  ancestors.includes(real)
                    ? `a link back to the folder ${before} it is in (a loop), not followed`
                    : `the same folder as ${before} (a link), read once`
                )
              }
              walked.set(real, shownDir)
              const listed = yield* fs.readDirectoryEntries(dir).pipe(Effect.result)
              if (Result.isFailure(listed)) {
                if (relative === "") return yield* failFor(dir)(listed.failure)
                return void skip(shownDir, `${describe(listed.failure)}, so the folder was skipped`)
              }
              const names = listed.success
                .map((e) => e.name)
                .filter((n) => !n.startsWith(".") && n !== "node_modules")
                .sort(compareCodePoints)
              for (const name of names) {
                const child = relative === "" ? name : `${relative}/${name}`
                const info = yield* fs.stat(path.join(root, child)).pipe(Effect.result)
                if (Result.isFailure(info)) {
                  const reason =
                    info.failure.reason._tag === "NotFound"
                      ? "a link to a file that does not exist, skipped"
                      : `${describe(info.failure)}, skipped`
                  if (READABLE_FILE.test(name)) skip(prefix + child, reason)
                } else if (info.success.type === "Directory") {
                  yield* visit(child, [...ancestors, real])
                } else if (info.success.type === "File" && READABLE_FILE.test(name)) {
                  found.push({ _tag: "File", file: path.join(root, child), shown: prefix + child })
                }
              }
            })
          yield* visit("", [])
          return found
        })

        /** The files under one path, in reading order; `label` (with several paths) goes before their shown names. */
        const filesOf = Effect.fn("DocumentSource.filesOf")(function* (
          target: string,
          label: string | undefined,
          walked: Map<string, string>
        ) {
          const info = yield* fs.stat(target).pipe(Effect.catchTag("PlatformError", failFor(target)))
          if (info.type === "Directory") {
            const found = yield* walk(target, label === undefined ? "" : `${label}/`, walked)
            if (found.length === 0) return yield* new NoDocuments({ path: target })
            return found
          }
          const name = path.basename(target)
          if (!READABLE_FILE.test(name)) return yield* new UnsupportedSource({ path: target })
          return [{ _tag: "File", file: target, shown: TEXT_FILE.test(name) ? (label ?? name) : target }] as const
        })

        /**
         * Every file under `paths`, each once (by its real path: a file named twice, or reached through a link, is
         * read the first time and listed as a skip after), with the skips of the walk in their places.
         */
        const listAll = (paths: ReadonlyArray<string>): Stream.Stream<Found, SourceError> =>
          Stream.unwrap(
            Effect.sync(() => {
              // A path named twice is read once; with several paths, each one's files are named under its label.
              const targets = [...new Map(paths.map((p) => [path.resolve(p), p])).entries()]
              const labels = rootLabels(
                targets.map(([resolved]) => resolved.split(path.sep).filter((part) => part !== ""))
              )
              const walked = new Map<string, string>()
              const files = new Map<string, string>()
              return Stream.fromIterable(targets.map(([, target], i) => [target, labels[i]] as const)).pipe(
                Stream.flatMap(([target, label]) =>
                  Stream.unwrap(Effect.map(filesOf(target, label, walked), Stream.fromIterable))
                ),
                Stream.mapEffect((found) => {
                  if (found._tag === "Skip") return Effect.succeed(found)
                  return Effect.map(
                    fs.realPath(found.file).pipe(Effect.orElseSucceed(() => found.file)),
                    (real): Found => {
                      const first = files.get(real)
                      if (first === undefined) {
                        files.set(real, found.shown)
                        return found
                      }
                      const reason =
                        first === found.shown ? "named twice, read once" : `the same file as ${first}, read once`
                      return { _tag: "Skip", record: new BadRecord({ source: found.shown, line: 0, reason }) }
                    }
                  )
                })
              )
            })
          )

        const size = (paths: ReadonlyArray<string>) =>
          listAll(paths).pipe(
            Stream.mapEffect((found) =>
              found._tag === "Skip"
                ? Effect.succeed(0)
                : // An unreadable file counts nothing: it is read as one BadRecord.
                  Effect.map(fs.stat(found.file).pipe(Effect.result), (info) =>
                    Result.isSuccess(info) ? Number(info.success.size) : 0
                  )
            ),
            Stream.runFold(
              () => 0,
              (total, bytes) => total + bytes
            ),
            Effect.withSpan("DocumentSource.size")
          )

        return DocumentSource.of({
          read: (paths) =>
            listAll(paths).pipe(
              Stream.flatMap((found) =>
                found._tag === "Skip" ? Stream.make(Result.fail(found.record)) : readFile(found)
              )
            ),
          size
        })
      })
    )

  /** Reads through the platform `FileSystem` and `Path`. */
  static readonly layer = DocumentSource.layerWith({})
}
