/** Finds the files to read under the paths named for indexing: folders walked in order, each file listed once. */

import { existsSync } from "node:fs"
import { compareCodePoints } from "@funcpipe/domain/Ranking"
import { Effect, type FileSystem, type Path, type PlatformError, Result, Stream } from "effect"
import { systemReason } from "../platform/SystemReason.ts"
import { BadRecord } from "./BadRecord.ts"
import { rootLabels } from "./FileDoc.ts"
import { NoDocuments, type SourceError, SourceMissing, SourceUnreadable, UnsupportedSource } from "./SourceErrors.ts"

const TEXT_FILE = /\.(md|markdown|txt)$/i
const READABLE_FILE = /\.(md|markdown|txt|csv|jsonl|ndjson)$/i

/** A file to read: where it is, and its doc id (a text file) or source name (a CSV or JSONL file). */
export interface SourceFile {
  readonly file: string
  readonly shown: string
}

/** What listing the paths finds: a file to read, or an entry skipped with its reason (a loop, an unreadable folder). */
export type Found = (SourceFile & { readonly _tag: "File" }) | { readonly _tag: "Skip"; readonly record: BadRecord }

/** A skipped entry, shown as `shown`, with the reason it is skipped. */
const skipped = (shown: string, reason: string): Found => ({
  _tag: "Skip",
  record: new BadRecord({ source: shown, line: 0, reason })
})

/** Fails for a path named for indexing: `SourceMissing` when nothing is there, else `SourceUnreadable` with why. */
const failFor = (target: string) => (error: PlatformError.PlatformError) =>
  Effect.fail<SourceMissing | SourceUnreadable>(
    error.reason._tag === "NotFound"
      ? new SourceMissing({ path: target })
      : new SourceUnreadable({ path: target, reason: systemReason(error) })
  )

/** A walk of one folder in progress: its root, the prefix of shown names, and what it has found so far. */
interface Walk {
  readonly fs: FileSystem.FileSystem
  readonly path: Path.Path
  readonly root: string
  readonly prefix: string
  /** Every folder walked for this read (under any path named), by real path, with its shown name. */
  readonly walked: Map<string, string>
  readonly found: Array<Found>
}

/** The names in a folder that are read, in code point order: hidden entries and `node_modules` are left out. */
const readNames = (entries: ReadonlyArray<FileSystem.DirectoryEntry>): Array<string> =>
  entries
    .map((e) => e.name)
    .filter((n) => !n.startsWith(".") && n !== "node_modules")
    .sort(compareCodePoints)

/** Why a folder reached a second time is not walked again: a link back to a folder it is in, or another name. */
const walkedReason = (ancestors: ReadonlyArray<string>, real: string, before: string): string =>
  ancestors.includes(real)
    ? `a link back to the folder ${before} it is in (a loop), not followed`
    : `the same folder as ${before} (a link), read once`

/** One entry of a folder: a folder is walked, a readable file found, and a broken link to a readable file skipped. */
const visitEntry = (
  w: Walk,
  child: string,
  name: string,
  ancestors: ReadonlyArray<string>
): Effect.Effect<void, SourceMissing | SourceUnreadable> =>
  Effect.gen(function* () {
    const info = yield* w.fs.stat(w.path.join(w.root, child)).pipe(Effect.result)
    if (Result.isFailure(info)) {
      const reason =
        info.failure.reason._tag === "NotFound"
          ? "a link to a file that does not exist, skipped"
          : `${systemReason(info.failure)}, skipped`
      if (READABLE_FILE.test(name)) w.found.push(skipped(w.prefix + child, reason))
    } else if (info.success.type === "Directory") {
      yield* visitFolder(w, child, ancestors)
    } else if (info.success.type === "File" && READABLE_FILE.test(name)) {
      w.found.push({ _tag: "File", file: w.path.join(w.root, child), shown: w.prefix + child })
    }
  })

/**
 * A folder (`relative` to the walk's root, `""` for the root) and everything under it, unless it was walked already;
 * an unreadable folder below the root is a skip, an unreadable root fails the walk.
 */
const visitFolder = (
  w: Walk,
  relative: string,
  ancestors: ReadonlyArray<string>
): Effect.Effect<void, SourceMissing | SourceUnreadable> =>
  Effect.gen(function* () {
    const dir = relative === "" ? w.root : w.path.join(w.root, relative)
    const shownDir = relative === "" ? (w.prefix === "" ? w.root : w.prefix.slice(0, -1)) : w.prefix + relative
    const real = yield* w.fs.realPath(dir).pipe(Effect.orElseSucceed(() => dir))
    const before = w.walked.get(real)
    if (before !== undefined) return void w.found.push(skipped(shownDir, walkedReason(ancestors, real, before)))
    w.walked.set(real, shownDir)
    const listed = yield* w.fs.readDirectoryEntries(dir).pipe(Effect.result)
    if (Result.isFailure(listed)) {
      if (relative === "") return yield* failFor(dir)(listed.failure)
      return void w.found.push(skipped(shownDir, `${systemReason(listed.failure)}, so the folder was skipped`))
    }
    const inside = [...ancestors, real]
    for (const name of readNames(listed.success)) {
      yield* visitEntry(w, relative === "" ? name : `${relative}/${name}`, name, inside)
    }
  })

/**
 * The files under a directory, sorted, with their shown paths (`prefix` before each). A link back to a
 * folder being walked (a loop), a second name of a folder already walked, an unreadable folder below the
 * root and a broken link to a readable kind of file are listed as skips; the root itself must be readable.
 */
const walk = Effect.fn("DocumentSource.walk")(function* (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  root: string,
  prefix: string,
  walked: Map<string, string>
) {
  const w: Walk = { fs, path, root, prefix, walked, found: [] }
  yield* visitFolder(w, "", [])
  return w.found
})

/** The files under one path, in reading order; `label` (with several paths) goes before their shown names. */
const filesOf = Effect.fn("DocumentSource.filesOf")(function* (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  target: string,
  label: string | undefined,
  walked: Map<string, string>
) {
  const info = yield* fs.stat(target).pipe(Effect.catchTag("PlatformError", failFor(target)))
  if (info.type === "Directory") {
    const found = yield* walk(fs, path, target, label === undefined ? "" : `${label}/`, walked)
    if (found.length === 0) return yield* new NoDocuments({ path: target })
    return found
  }
  const name = path.basename(target)
  if (!READABLE_FILE.test(name)) return yield* new UnsupportedSource({ path: target })
  return [{ _tag: "File", file: target, shown: TEXT_FILE.test(name) ? (label ?? name) : target }] as const
})

/**
 * The paths to read, each once, with the label that names its files when there are several paths: the one `kept`
 * gives its absolute path (an index keeps the labels its roots were read with, so that doc ids stay as they were when
 * paths are added or removed; `""` for none), else its shortest ending that tells it from the others.
 */
const labelled = (
  path: Path.Path,
  paths: ReadonlyArray<string>,
  kept: Readonly<Record<string, string>> = {}
): Array<readonly [string, string | undefined]> => {
  const targets = [...new Map(paths.map((p) => [path.resolve(p), p])).entries()]
  const parts = targets.map(([resolved]) => resolved.split(path.sep).filter((part) => part !== ""))
  const labels = rootLabels(parts)
  // A kept path without a label names its files from its own top: a new path's label must not start like one of them.
  const unlabeled = Object.entries(kept).flatMap(([root, label]) => (label === "" ? [root] : []))
  const clashes = (label: string) => unlabeled.some((root) => existsSync(path.join(root, label.split("/")[0]!)))
  return targets.map(([resolved, target], i) => {
    if (Object.hasOwn(kept, resolved)) {
      const label = kept[resolved]
      return [target, label === "" ? undefined : label] as const
    }
    let label = labels[i]
    const own = parts[i]!
    for (let n = (label ?? "").split("/").length + 1; label !== undefined && clashes(label) && n <= own.length; n++) {
      label = own.slice(own.length - n).join("/")
    }
    return [target, label] as const
  })
}

/** A file found, or a skip when its real path was found before (`files` maps real paths to their first names). */
const once = (fs: FileSystem.FileSystem, files: Map<string, string>, found: Found): Effect.Effect<Found> => {
  if (found._tag === "Skip") return Effect.succeed(found)
  return Effect.map(fs.realPath(found.file).pipe(Effect.orElseSucceed(() => found.file)), (real): Found => {
    const first = files.get(real)
    if (first === undefined) {
      files.set(real, found.shown)
      return found
    }
    const reason = first === found.shown ? "named twice, read once" : `the same file as ${first}, read once`
    return skipped(found.shown, reason)
  })
}

/**
 * Every file under `paths`, each once (by its real path: a file named twice, or reached through a link, is
 * read the first time and listed as a skip after), with the skips of the walk in their places.
 */
export const listFiles = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  paths: ReadonlyArray<string>,
  labels?: Readonly<Record<string, string>>
): Stream.Stream<Found, SourceError> =>
  Stream.unwrap(
    Effect.sync(() => {
      const walked = new Map<string, string>()
      const files = new Map<string, string>()
      return Stream.fromIterable(labelled(path, paths, labels)).pipe(
        Stream.flatMap(([target, label]) =>
          Stream.unwrap(Effect.map(filesOf(fs, path, target, label, walked), Stream.fromIterable))
        ),
        Stream.mapEffect((found) => once(fs, files, found))
      )
    })
  )

/**
 * The labels the files of `paths` are read with, by absolute path (`""` for none): those `kept` from earlier runs, and
 * for paths new to the index the shortest ending that tells each from the others. What an index records, so that
 * adding or removing a path renames no document.
 */
export const rootLabelsOf = (
  path: Path.Path,
  paths: ReadonlyArray<string>,
  kept: Readonly<Record<string, string>> = {}
): Record<string, string> =>
  Object.fromEntries(labelled(path, paths, kept).map(([target, label]) => [path.resolve(target), label ?? ""] as const))
