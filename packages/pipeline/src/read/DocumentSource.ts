/** Boundary service: reads documents from files, directories, CSV and JSONL as a stream of per-record results. */

import { closeSync, open, openSync, read, readFileSync, readSync, statSync } from "node:fs"
import type { RawDoc } from "@funcpipe/domain/Document"
import { Array as Arr, Cause, Context, Effect, FileSystem, Layer, Path, PlatformError, Result, Stream } from "effect"
import type { FileStamp } from "../base/Stamps.ts"
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
import { convertedDoc, fileDoc, loadYaml, needsYaml } from "./FileDoc.ts"
import { type KnownFile, stampOf, UnreadFile } from "./FileStamp.ts"
import { type Found, type ListFolder, listFiles, listFolder, listRoots, type SourceFile } from "./Folder.ts"
import {
  CONVERTED_FILE,
  CONVERTER_VERSION,
  convertFile,
  MAX_CONVERT_SECONDS,
  MAX_CONVERTED_FILE_BYTES
} from "./Formats.ts"
import { jsonlReader } from "./Jsonl.ts"
import type { SourceError } from "./SourceErrors.ts"

/** A document with the file it was read from and the line it starts on (0 for a text file, which is one document). */
export interface SourcedDoc {
  readonly source: string
  readonly line: number
  readonly doc: RawDoc
  /** The file's stamp, taken before it was read (a regular file only). */
  readonly stamp?: FileStamp | undefined
}

/**
 * One record read: a document with its file, the reason this record was skipped, or a file left unread because the
 * caller's index already holds it (see `KnownFile`).
 */
export type SourceRecord = Result.Result<SourcedDoc, BadRecord | UnreadFile>

const CSV_FILE = /\.csv$/i
const JSONL_FILE = /\.(jsonl|ndjson)$/i

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
  /** The largest PDF, HTML, Word or EPUB file read (default `MAX_CONVERTED_FILE_BYTES`). */
  readonly maxConvertedFileBytes?: number
  /** How long reading one such file may take, in seconds (default `MAX_CONVERT_SECONDS`). */
  readonly convertSeconds?: number
  /** The converters' version the stamps record (default `CONVERTER_VERSION`); a test stands in for an upgrade. */
  readonly converterVersion?: number
  /** The largest JSONL line or CSV record read (default `MAX_RECORD_BYTES`). */
  readonly maxRecordBytes?: number
  /** How a folder is listed (default: Node's `readdirSync` with types); a test makes it fail to see a skip. */
  readonly listFolder?: ListFolder
}

/** The read options with their defaults filled in, passed to each step that reads. */
type Limits = Required<ReadOptions>

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

/** A file that could not be read, as the one record it gives. */
const unreadable =
  (shown: string) =>
  (error: PlatformError.PlatformError): SourceRecord =>
    Result.fail(new BadRecord({ source: shown, line: 0, reason: describe(error) }))

/**
 * The bytes of a file read whole (a text file, or one read through a converter), or why it is skipped (too large,
 * unreadable). A regular file (one with a stamp) is read synchronously, as a CSV or JSONL file is: a folder of small
 * files is mostly the cost per file, and a trip to the thread pool and back was most of it.
 */
const readWhole = Effect.fnUntraced(function* (
  fs: FileSystem.FileSystem,
  file: string,
  shown: string,
  stamp: FileStamp | undefined,
  maxBytes: number,
  advice: string
) {
  const bad = (reason: string) => new BadRecord({ source: shown, line: 0, reason })
  const tooLarge = () => Result.fail(bad(`larger than ${formatBytes(maxBytes)}, skipped; ${advice}`))
  if (stamp !== undefined) {
    if (stamp.size > maxBytes) return tooLarge()
    const bytes = yield* fileSync("readFile", file, () => readKnownSize(file, stamp.size)).pipe(Effect.result)
    return Result.mapError(bytes, (error) => bad(describe(error)))
  }
  const info = yield* fs.stat(file).pipe(Effect.result)
  if (Result.isFailure(info)) return Result.fail(bad(describe(info.failure)))
  if (Number(info.success.size) > maxBytes) return tooLarge()
  const bytes = yield* fs.readFile(file).pipe(Effect.result)
  return Result.mapError(bytes, (error) => bad(describe(error)))
})

/** The text of a `.md` or `.txt` file, or why it is skipped (too large, unreadable, not UTF-8). */
const readText = (
  fs: FileSystem.FileSystem,
  file: string,
  shown: string,
  stamp: FileStamp | undefined,
  maxTextFileBytes: number
) =>
  Effect.map(
    readWhole(fs, file, shown, stamp, maxTextFileBytes, "split it or convert it to JSONL to index it"),
    (bytes) =>
      Result.flatMap(bytes, (b) =>
        Result.mapError(decodeUtf8(b), (reason) => new BadRecord({ source: shown, line: 0, reason }))
      )
  )

/**
 * A regular file's bytes, its size known from its stamp: opened, read once (a byte more than the size, to see whether
 * it grew) and closed, without the `fstat` and the growing buffer of `readFileSync` (a fifth of the time per small
 * file). A file that grew or shrank since it was stamped is read again whole.
 */
const readKnownSize = (file: string, size: number): Uint8Array => {
  const fd = openSync(file, "r")
  try {
    const bytes = Buffer.allocUnsafe(size + 1)
    const read = readSync(fd, bytes, 0, size + 1, 0)
    return read === size ? bytes.subarray(0, size) : readFileSync(file)
  } finally {
    closeSync(fd)
  }
}

/** What a failed file operation of Node's becomes: the platform's error, whose cause gives the reason. */
const fileError = (method: string, file: string, cause: unknown): PlatformError.PlatformError =>
  PlatformError.systemError({ _tag: "Unknown", module: "FileSystem", method, pathOrDescriptor: file, cause })

/**
 * A file operation of Node's, done synchronously: reading a file piece by piece through the platform's
 * asynchronous `read` (a trip to libuv's thread pool per piece) costs the parsing thread about three times as
 * much, and it is the thread that writes the index (docs/decisions/0028-writer-reads-synchronously-and-syncs-early.md).
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
    f((error, value) => resume(error === null ? Effect.succeed(value) : Effect.fail(fileError(method, file, error))))
  )

/**
 * A turn of Node's event loop, taken by a file's reader at least every `TURN_MILLIS` ms. Reads that do not wait
 * leave the loop unvisited for as long as the rest of the program keeps up with the file, and with it Ctrl-C
 * (a signal is delivered by the loop): without the turns, an interrupted run of small documents would go on to the
 * end of the file.
 */
const TURN_MILLIS = 20
const turn = Effect.callback<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** Opens a file for reading, closed when the stream reading it ends; synchronously when it is a regular file. */
const openFile = (file: string, regular: boolean) =>
  Effect.acquireRelease(
    regular
      ? fileSync("open", file, () => openSync(file, "r"))
      : fileAsync<number>("open", file, (done) => open(file, "r", done)),
    (fd) => Effect.sync(() => closeSync(fd))
  )

/** Reads the next piece of the open file into `buffer`, giving its length (0 at the end of the file). */
const readPiece = (file: string, regular: boolean, fd: number, buffer: Uint8Array) =>
  regular
    ? fileSync("read", file, () => readSync(fd, buffer, 0, buffer.length, null))
    : fileAsync<number>("read", file, (done) => read(fd, buffer, 0, buffer.length, null, done))

/**
 * The pull of a file's stream: reads pieces with `next` and parses them until they give records (a turn of the event
 * loop taken on the way when one is due), and ends the stream once the file or its parser is done.
 */
const pullRecords = (
  file: string,
  stamp: FileStamp | undefined,
  reader: ByteReader,
  buffer: Uint8Array,
  next: Effect.Effect<number, PlatformError.PlatformError>
) => {
  let ended = false
  const toRecord = (result: LineResult): SourceRecord =>
    Result.map(result, ({ doc, line }) => ({ source: file, line, doc, stamp }))
  let turned = performance.now()
  return Effect.gen(function* () {
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
}

/** The records of a CSV or JSONL file, parsed chunk by chunk as the stream is pulled. */
const streamFile = (
  file: string,
  shown: string,
  stamp: FileStamp | undefined,
  reader: ByteReader,
  chunkBytes: number
): Stream.Stream<SourceRecord> =>
  Stream.unwrap(
    Effect.gen(function* () {
      // One buffer for the whole file: readers copy what they keep, and fresh buffers would cost page faults.
      const buffer = new Uint8Array(chunkBytes)
      // Synchronously from a regular file; from anything else (a named pipe) on the thread pool, in order.
      const regular = stamp !== undefined || statSync(file, { throwIfNoEntry: false })?.isFile() === true
      const fd = yield* openFile(file, regular)
      return Stream.fromPull(
        Effect.succeed(pullRecords(file, stamp, reader, buffer, readPiece(file, regular, fd, buffer)))
      )
    })
  ).pipe(Stream.catchTag("PlatformError", (error) => Stream.make(unreadable(shown)(error))))

/** The one document of a `.md` or `.txt` file, the YAML parser loaded first when its front matter needs it. */
const streamText = (
  fs: FileSystem.FileSystem,
  file: string,
  shown: string,
  stamp: FileStamp | undefined,
  maxTextFileBytes: number
) =>
  Stream.fromEffect(
    Effect.flatMap(readText(fs, file, shown, stamp, maxTextFileBytes), (text): Effect.Effect<SourceRecord> => {
      if (Result.isFailure(text)) return Effect.succeed(Result.fail(text.failure))
      const body = text.success
      const toRecord = () => Result.map(fileDoc(shown, body), (doc) => ({ source: file, line: 0, doc, stamp }))
      return needsYaml(shown, body) ? Effect.map(loadYaml, toRecord) : Effect.sync(toRecord)
    })
  )

/**
 * The one document of an HTML, Word or EPUB file, converted to Markdown (`convertFile`, which loads its converter on
 * first use); a file that cannot be converted, or that has no text, is one skip naming the reason.
 */
const streamConverted = (
  fs: FileSystem.FileSystem,
  file: string,
  shown: string,
  stamp: FileStamp | undefined,
  limits: Limits
) =>
  Stream.fromEffect(
    Effect.gen(function* (): Effect.fn.Return<SourceRecord> {
      const advice = "index --max-file-mb raises the limit"
      const bytes = yield* readWhole(fs, file, shown, stamp, limits.maxConvertedFileBytes, advice)
      if (Result.isFailure(bytes)) return Result.fail(bytes.failure)
      const page = yield* convertFile(file, bytes.success, limits.convertSeconds)
      if (Result.isFailure(page)) return Result.fail(new BadRecord({ source: shown, line: 0, reason: page.failure }))
      return Result.map(convertedDoc(shown, page.success), (doc) => ({ source: file, line: 0, doc, stamp }))
    })
  )

/** The records of one file, by its kind. */
const readFile = (
  fs: FileSystem.FileSystem,
  limits: Limits,
  { file, shown }: SourceFile,
  stamp: FileStamp | undefined
): Stream.Stream<SourceRecord> => {
  const reader = readerFor(file, shown, limits.maxRecordBytes)
  if (reader !== undefined) return streamFile(file, shown, stamp, reader, limits.chunkBytes)
  if (CONVERTED_FILE.test(file)) return streamConverted(fs, file, shown, stamp, limits)
  return streamText(fs, file, shown, stamp, limits.maxTextFileBytes)
}

/** What a path's list of files comes to: a run of records that need no reading (skips, files left unread), or a file to read. */
type Piece =
  | { readonly _tag: "Records"; readonly records: ReadonlyArray<SourceRecord> }
  | { readonly _tag: "Read"; readonly file: SourceFile; readonly stamp: FileStamp | undefined }

/** Records that need no reading go through the stream together, up to this many: one step per file was most of a run over a tree of unchanged small files. */
const RECORDS_AT_ONCE = 4096

/**
 * The pieces of a path's list of files, each file stamped just before it is yielded (with `reader`, the converters'
 * version, for a file a converter reads); a file `known` says the index holds is one `UnreadFile` record.
 */
function* piecesOf(found: ReadonlyArray<Found>, known: KnownFile | undefined, reader: number): Generator<Piece> {
  let records: Array<SourceRecord> = []
  for (const f of found) {
    if (f._tag === "Skip") records.push(Result.fail(f.record))
    else {
      const stamp = stampOf(f.file, f.shown, CONVERTED_FILE.test(f.file) ? reader : undefined)
      if (stamp !== undefined && known?.(f.file, stamp) === true)
        records.push(Result.fail(new UnreadFile(f.file, stamp)))
      else {
        if (records.length > 0) yield { _tag: "Records", records }
        records = []
        yield { _tag: "Read", file: f, stamp }
      }
    }
    if (records.length >= RECORDS_AT_ONCE) {
      yield { _tag: "Records", records }
      records = []
    }
  }
  if (records.length > 0) yield { _tag: "Records", records }
}

/** The records of every file under `paths`, the walk's skips among them in their places. */
const readAll = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  limits: Limits,
  paths: ReadonlyArray<string>,
  labels: Readonly<Record<string, string>> | undefined,
  known: KnownFile | undefined
): Stream.Stream<SourceRecord, SourceError> =>
  listRoots(path, paths, labels, limits.listFolder).pipe(
    Stream.flatMap((found) =>
      Stream.fromIterable({ [Symbol.iterator]: () => piecesOf(found, known, limits.converterVersion) }).pipe(
        Stream.flatMap((piece) =>
          piece._tag === "Records" ? Stream.fromIterable(piece.records) : readFile(fs, limits, piece.file, piece.stamp)
        )
      )
    )
  )

/** The bytes a file found will be read from; an unreadable file counts nothing, since it is read as one BadRecord. */
const sizeOf = (found: Found): number => {
  if (found._tag === "Skip") return 0
  try {
    return Number(statSync(found.file).size)
  } catch {
    return 0
  }
}

/** The total size of the files under `paths`, found as `readAll` finds them. */
const totalSize = (
  path: Path.Path,
  limits: Limits,
  paths: ReadonlyArray<string>,
  labels?: Readonly<Record<string, string>>
): Effect.Effect<number, SourceError> =>
  listFiles(path, paths, labels, limits.listFolder).pipe(
    Stream.map(sizeOf),
    Stream.runFold(
      () => 0,
      (total, bytes) => total + bytes
    ),
    Effect.withSpan("DocumentSource.size")
  )

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
     *
     * With several paths, a text file's doc id starts with its path's label (the shortest ending of the path that
     * tells it from the others); `labels` (by absolute path, `""` for none) gives the labels an index recorded, so
     * that its doc ids stay as they were (`rootLabelsOf`).
     *
     * Each document read from a regular file carries the file's stamp (`FileStamp`), taken before it was read. With
     * `known`, a file it says the caller's index holds is not read: one `UnreadFile` record stands in its place.
     */
    readonly read: (
      paths: ReadonlyArray<string>,
      labels?: Readonly<Record<string, string>>,
      known?: KnownFile
    ) => Stream.Stream<SourceRecord, SourceError>
    /**
     * The total size in bytes of the files `read` would read under `paths` (found the same way, without reading
     * them), for progress reports; it fails as `read` would for a missing, unreadable or unsupported path.
     */
    readonly size: (
      paths: ReadonlyArray<string>,
      labels?: Readonly<Record<string, string>>
    ) => Effect.Effect<number, SourceError>
  }
>()("pipeline/DocumentSource") {
  /** Reads through the platform `FileSystem` and `Path`, with `options` in place of the defaults. */
  static readonly layerWith = (options: ReadOptions) =>
    Layer.effect(
      DocumentSource,
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const limits: Limits = {
          chunkBytes: options.chunkBytes ?? READ_CHUNK_BYTES,
          maxTextFileBytes: options.maxTextFileBytes ?? MAX_TEXT_FILE_BYTES,
          maxConvertedFileBytes: options.maxConvertedFileBytes ?? MAX_CONVERTED_FILE_BYTES,
          convertSeconds: options.convertSeconds ?? MAX_CONVERT_SECONDS,
          converterVersion: options.converterVersion ?? CONVERTER_VERSION,
          maxRecordBytes: options.maxRecordBytes ?? MAX_RECORD_BYTES,
          listFolder: options.listFolder ?? listFolder
        }
        return DocumentSource.of({
          read: (paths, labels, known) => readAll(fs, path, limits, paths, labels, known),
          size: (paths, labels) => totalSize(path, limits, paths, labels)
        })
      })
    )

  /** Reads through the platform `FileSystem` and `Path`. */
  static readonly layer = DocumentSource.layerWith({})
}
