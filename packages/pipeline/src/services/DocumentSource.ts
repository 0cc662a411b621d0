/** Boundary service: reads documents from files, directories, CSV and JSONL as a stream of per-record results. */
import { Context, Effect, FileSystem, Layer, Path, PlatformError, Result, Schema, Stream } from "effect"
import type { RawDoc } from "@funcpipe/domain/Document"
import { BadRecord } from "../stages/BadRecord.ts"
import { parseCsvDocs } from "../stages/Csv.ts"
import { fileDoc } from "../stages/FileDoc.ts"
import { parseJsonlDocs } from "../stages/Jsonl.ts"

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

/** How a file's text becomes records, by its name; `undefined` for a kind FuncPipe does not read. */
const parserFor = (name: string) =>
  CSV_FILE.test(name)
    ? parseCsvDocs
    : JSONL_FILE.test(name)
    ? parseJsonlDocs
    : TEXT_FILE.test(name)
    ? (text: string, docId: string) => [fileDoc(docId, text)]
    : undefined

/** Decodes UTF-8 strictly; a leading byte order mark is dropped. */
const decodeUtf8 = (bytes: Uint8Array): Result.Result<string, string> => {
  if (bytes.includes(0)) return Result.fail("a binary file (it contains NUL bytes), skipped")
  try {
    return Result.succeed(new TextDecoder("utf-8", { fatal: true }).decode(bytes))
  } catch {
    return Result.fail("not UTF-8 text, skipped; convert it to UTF-8 to index it")
  }
}

const describe = (error: PlatformError.PlatformError): string => error.reason._tag === "PermissionDenied"
  ? "permission denied"
  : error.reason.description ?? error.reason._tag

export class DocumentSource extends Context.Service<DocumentSource, {
  /**
   * Reads every path in order. A `.md` or `.txt` file is one document; a `.csv` or `.jsonl` file yields one record
   * per row or line, with the doc ids it holds. A directory is walked for all of these (sorted, hidden entries and
   * `node_modules` left out), and a text file's doc id is its path relative to the directory with `/`; a text file
   * named directly gets its file name as doc id. A bad record is a
   * `BadRecord` value in the stream and reading goes on; a missing, unreadable or unsupported path, or a directory
   * with nothing to index, ends the stream with a `SourceError`.
   */
  readonly read: (paths: ReadonlyArray<string>) => Stream.Stream<SourceRecord, SourceError>
}>()("pipeline/DocumentSource") {
  /** Reads through the platform `FileSystem` and `Path`. */
  static readonly layer = Layer.effect(
    DocumentSource,
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path

      const failFor = (target: string) => (error: PlatformError.PlatformError) =>
        Effect.fail<SourceMissing | SourceUnreadable>(
          error.reason._tag === "NotFound"
            ? new SourceMissing({ path: target })
            : new SourceUnreadable({ path: target, reason: describe(error) })
        )

      const readText = Effect.fn("DocumentSource.readText")(function*(file: string, shown: string) {
        const bytes = yield* fs.readFile(file).pipe(Effect.result)
        if (Result.isFailure(bytes)) return Result.fail(new BadRecord({ source: shown, line: 0, reason: describe(bytes.failure) }))
        return Result.mapError(decodeUtf8(bytes.success), (reason) => new BadRecord({ source: shown, line: 0, reason }))
      })

      const textFiles = Effect.fn("DocumentSource.textFiles")(function*(root: string) {
        const found: Array<string> = []
        const walk = (relative: string): Effect.Effect<void, SourceMissing | SourceUnreadable> =>
          Effect.gen(function*() {
            const dir = relative === "" ? root : path.join(root, relative)
            const entries = yield* fs.readDirectoryEntries(dir).pipe(Effect.catchTag("PlatformError", failFor(dir)))
            const names = entries.map((e) => e.name).filter((n) => !n.startsWith(".") && n !== "node_modules").sort()
            for (const name of names) {
              const child = relative === "" ? name : `${relative}/${name}`
              const info = yield* fs.stat(path.join(root, child)).pipe(Effect.result)
              if (Result.isFailure(info)) continue // a dangling link: nothing to read
              if (info.success.type === "Directory") yield* walk(child)
              else if (info.success.type === "File" && READABLE_FILE.test(name)) found.push(child)
            }
          })
        yield* walk("")
        return found
      })

      /** The records of one file; `shown` is the doc id of a text file and the source name of a CSV or JSONL file. */
      const readFile = (file: string, shown: string): Stream.Stream<SourceRecord> =>
        Stream.unwrap(Effect.map(readText(file, shown), (text) =>
          Result.isFailure(text)
            ? Stream.make(Result.fail(text.failure))
            : Stream.fromIterable(parserFor(file)!(text.success, shown).map((r) => Result.map(r, (doc) => ({ source: file, doc }))))))

      const readPath = (target: string): Stream.Stream<SourceRecord, SourceError> =>
        Stream.unwrap(Effect.gen(function*() {
          const info = yield* fs.stat(target).pipe(Effect.catchTag("PlatformError", failFor(target)))
          if (info.type === "Directory") {
            const files = yield* textFiles(target)
            if (files.length === 0) return yield* new NoDocuments({ path: target })
            return Stream.fromIterable(files).pipe(Stream.flatMap((relative) => readFile(path.join(target, relative), relative)))
          }
          const name = path.basename(target)
          if (parserFor(name) === undefined) return yield* new UnsupportedSource({ path: target })
          return readFile(target, TEXT_FILE.test(name) ? name : target)
        }))

      return DocumentSource.of({
        read: (paths) => Stream.fromIterable(paths).pipe(Stream.flatMap(readPath))
      })
    })
  )
}
