/** Boundary service: reads documents from files, directories, CSV and JSONL as a stream of per-record results. */
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
import type { RawDoc } from "@funcpipe/domain/Document"
import { BadRecord } from "../stages/BadRecord.ts"
import {
  BINARY_FILE,
  type ByteReader,
  type DocResult,
  formatBytes,
  MAX_RECORD_BYTES,
  NOT_UTF8,
  sniffBinary
} from "../stages/ByteReader.ts"
import { csvReader } from "../stages/Csv.ts"
import { fileDoc } from "../stages/FileDoc.ts"
import { jsonlReader } from "../stages/Jsonl.ts"
import { systemReason } from "./SystemReason.ts"

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

/** A document with the file it was read from. */
export interface SourcedDoc {
  readonly source: string
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

export class DocumentSource extends Context.Service<DocumentSource, {
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
}>()("pipeline/DocumentSource") {
  /** Reads through the platform `FileSystem` and `Path`, with `options` in place of the defaults. */
  static readonly layerWith = (options: ReadOptions) =>
    Layer.effect(
      DocumentSource,
      Effect.gen(function*() {
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

        const unreadable = (shown: string) => (error: PlatformError.PlatformError): SourceRecord =>
          Result.fail(new BadRecord({ source: shown, line: 0, reason: describe(error) }))

        const readText = Effect.fn("DocumentSource.readText")(function*(file: string, shown: string) {
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

        /** The records of a CSV or JSONL file, parsed chunk by chunk as the stream is pulled. */
        const streamFile = (file: string, shown: string, reader: ByteReader): Stream.Stream<SourceRecord> =>
          Stream.unwrap(Effect.gen(function*() {
            const handle = yield* fs.open(file, { flag: "r" })
            // One buffer for the whole file: readers copy what they keep, and fresh buffers would cost page faults.
            const buffer = new Uint8Array(chunkBytes)
            let ended = false
            const toRecord = (result: DocResult): SourceRecord => Result.map(result, (doc) => ({ source: file, doc }))
            const pull = Effect.gen(function*() {
              while (!ended && !reader.done()) {
                const count = yield* handle.read(buffer)
                if (count === 0) ended = true
                const results = count === 0 ? reader.end() : reader.push(buffer.subarray(0, count))
                if (Arr.isReadonlyArrayNonEmpty(results)) return Arr.map(results, toRecord)
              }
              return yield* Cause.done()
            })
            return Stream.fromPull(Effect.succeed(pull))
          })).pipe(Stream.catchTag("PlatformError", (error) => Stream.make(unreadable(shown)(error))))

        /** The records of one file. */
        const readFile = ({ file, shown }: SourceFile): Stream.Stream<SourceRecord> => {
          const reader = readerFor(file, shown, maxRecordBytes)
          if (reader !== undefined) return streamFile(file, shown, reader)
          return Stream.fromEffect(Effect.map(readText(file, shown), (text) =>
            Result.isFailure(text)
              ? Result.fail(text.failure)
              : Result.map(fileDoc(shown, text.success), (doc) => ({ source: file, doc }))))
        }

        const walk = Effect.fn("DocumentSource.walk")(function*(root: string) {
          const found: Array<string> = []
          const visit = (relative: string): Effect.Effect<void, SourceMissing | SourceUnreadable> =>
            Effect.gen(function*() {
              const dir = relative === "" ? root : path.join(root, relative)
              const entries = yield* fs.readDirectoryEntries(dir).pipe(Effect.catchTag("PlatformError", failFor(dir)))
              const names = entries.map((e) => e.name).filter((n) => !n.startsWith(".") && n !== "node_modules").sort()
              for (const name of names) {
                const child = relative === "" ? name : `${relative}/${name}`
                const info = yield* fs.stat(path.join(root, child)).pipe(Effect.result)
                if (Result.isFailure(info)) continue // a dangling link: nothing to read
                if (info.success.type === "Directory") yield* visit(child)
                else if (info.success.type === "File" && READABLE_FILE.test(name)) found.push(child)
              }
            })
          yield* visit("")
          return found
        })

        /** The files under one path, in reading order. */
        const filesOf = Effect.fn("DocumentSource.filesOf")(function*(target: string) {
          const info = yield* fs.stat(target).pipe(Effect.catchTag("PlatformError", failFor(target)))
          if (info.type === "Directory") {
            const files = yield* walk(target)
            if (files.length === 0) return yield* new NoDocuments({ path: target })
            return files.map((relative): SourceFile => ({ file: path.join(target, relative), shown: relative }))
          }
          const name = path.basename(target)
          if (!READABLE_FILE.test(name)) return yield* new UnsupportedSource({ path: target })
          return [{ file: target, shown: TEXT_FILE.test(name) ? name : target }]
        })

        const size = Effect.fn("DocumentSource.size")(function*(paths: ReadonlyArray<string>) {
          let total = 0
          for (const target of paths) {
            for (const { file } of yield* filesOf(target)) {
              const info = yield* fs.stat(file).pipe(Effect.result)
              // An unreadable file counts nothing: it is read as one BadRecord.
              if (Result.isSuccess(info)) total += Number(info.success.size)
            }
          }
          return total
        })

        return DocumentSource.of({
          read: (paths) =>
            Stream.fromIterable(paths).pipe(
              Stream.flatMap((target) => Stream.unwrap(Effect.map(filesOf(target), Stream.fromIterable))),
              Stream.flatMap(readFile)
            ),
          size
        })
      })
    )

  /** Reads through the platform `FileSystem` and `Path`. */
  static readonly layer = DocumentSource.layerWith({})
}
