/** Finds the files to read under the paths named for indexing: folders walked in order, each file listed once. */

import { type Dirent, existsSync, readdirSync, realpathSync, type Stats, statSync } from "node:fs"
import { basename, join } from "node:path"
import { compareCodePoints } from "@funcpipe/domain/Ranking"
import { Effect, type Path, Stream } from "effect"
import { errorCode, systemReason } from "../platform/SystemReason.ts"
import { BadRecord } from "./BadRecord.ts"
import { rootLabels } from "./FileDoc.ts"
import { NoDocuments, type SourceError, SourceMissing, SourceUnreadable, UnsupportedSource } from "./SourceErrors.ts"

const TEXT_FILE = /\.(md|markdown|txt|pdf|html?|xhtml|docx|epub)$/i
const READABLE_FILE = /\.(md|markdown|txt|pdf|html?|xhtml|docx|epub|csv|jsonl|ndjson)$/i

/** A file to read: where it is, and its doc id (a text file) or source name (a CSV or JSONL file). */
export interface SourceFile {
  readonly file: string
  readonly shown: string
  /** Its real path (links resolved), which tells a file reached twice. */
  readonly real: string
}

/** What listing the paths finds: a file to read, or an entry skipped with its reason (a loop, an unreadable folder). */
export type Found = (SourceFile & { readonly _tag: "File" }) | { readonly _tag: "Skip"; readonly record: BadRecord }

/** A skipped entry, shown as `shown`, with the reason it is skipped. */
const skipped = (shown: string, reason: string): Found => ({
  _tag: "Skip",
  record: new BadRecord({ source: shown, line: 0, reason })
})

/** The failure for a path named for indexing: `SourceMissing` when nothing is there, else `SourceUnreadable` with why. */
const failFor = (target: string, error: unknown): SourceMissing | SourceUnreadable =>
  errorCode(error) === "ENOENT"
    ? new SourceMissing({ path: target })
    : new SourceUnreadable({ path: target, reason: systemReason(error) })

/** A walk of one folder in progress: its root, the prefix of shown names, and what it has found so far. */
interface Walk {
  readonly root: string
  /** `root` as `join` normalizes it, ending in `/`: the start of every path under it (what `join(root, child)` gives). */
  readonly base: string
  readonly prefix: string
  /** Every folder walked for this read (under any path named), by real path, with its shown name. */
  readonly walked: Map<string, string>
  readonly found: Array<Found>
  readonly list: ListFolder
}

/** Lists a folder with each entry's type; throws Node's error when it cannot. */
export type ListFolder = (dir: string) => Array<Dirent>

/** How folders are listed unless the caller says otherwise. */
export const listFolder: ListFolder = (dir) => readdirSync(dir, { withFileTypes: true })

/** Whether a name in a folder is read: hidden entries and `node_modules` are left out. */
export const isRead = (name: string): boolean => !name.startsWith(".") && name !== "node_modules"

/** Why a folder reached a second time is not walked again: a link back to a folder it is in, or another name. */
const walkedReason = (ancestors: ReadonlyArray<string>, real: string, before: string): string =>
  ancestors.includes(real)
    ? `a link back to the folder ${before} it is in (a loop), not followed`
    : `the same folder as ${before} (a link), read once`

/** The real path of `file` (links resolved), or `file` itself when it cannot be resolved. */
const realOf = (file: string): string => {
  try {
    return realpathSync.native(file)
  } catch {
    return file
  }
}

/**
 * One entry of a folder whose real path is `realDir`: a folder is walked, a readable file found, and a broken link to
 * a readable file skipped. The entry's type comes with the listing, so a plain file costs no call of its own (a folder
 * of 38k small files is mostly such costs); a link, or an entry of a file system that does not give types, is looked
 * at with `stat`.
 */
const visitEntry = (w: Walk, entry: Dirent, child: string, realDir: string, ancestors: ReadonlyArray<string>): void => {
  const name = entry.name
  // Joined by hand: `join` normalizes the whole path each time, which was a tenth of a run over a tree of small files.
  const full = w.base + child
  let kind: "Directory" | "File" | "Other" = entry.isDirectory() ? "Directory" : entry.isFile() ? "File" : "Other"
  let real = realDir === "/" ? `/${name}` : `${realDir}/${name}`
  if (kind === "Other") {
    let info: Stats | undefined
    try {
      info = statSync(full)
    } catch (error) {
      const reason =
        errorCode(error) === "ENOENT"
          ? "a link to a file that does not exist, skipped"
          : `${systemReason(error)}, skipped`
      if (READABLE_FILE.test(name)) w.found.push(skipped(w.prefix + child, reason))
      return
    }
    kind = info.isDirectory() ? "Directory" : info.isFile() ? "File" : "Other"
    real = realOf(full)
  }
  if (kind === "Directory") visitFolder(w, child, ancestors)
  else if (kind === "File" && READABLE_FILE.test(name))
    w.found.push({ _tag: "File", file: full, shown: w.prefix + child, real })
}

/**
 * A folder (`relative` to the walk's root, `""` for the root) and everything under it, unless it was walked already;
 * an unreadable folder below the root is a skip, an unreadable root fails the walk (returned).
 */
const visitFolder = (
  w: Walk,
  relative: string,
  ancestors: ReadonlyArray<string>
): SourceMissing | SourceUnreadable | undefined => {
  const dir = relative === "" ? w.root : w.base + relative
  const shownDir = relative === "" ? (w.prefix === "" ? w.root : w.prefix.slice(0, -1)) : w.prefix + relative
  const real = realOf(dir)
  const before = w.walked.get(real)
  if (before !== undefined) return void w.found.push(skipped(shownDir, walkedReason(ancestors, real, before)))
  w.walked.set(real, shownDir)
  let listed: Array<Dirent>
  try {
    listed = w.list(dir)
  } catch (error) {
    if (relative === "") return failFor(dir, error)
    return void w.found.push(skipped(shownDir, `${systemReason(error)}, so the folder was skipped`))
  }
  const inside = [...ancestors, real]
  const entries = listed.filter((e) => isRead(e.name)).sort((a, b) => compareCodePoints(a.name, b.name))
  for (const entry of entries) {
    visitEntry(w, entry, relative === "" ? entry.name : `${relative}/${entry.name}`, real, inside)
  }
  return undefined
}

/**
 * The files under a directory, sorted, with their shown paths (`prefix` before each). A link back to a
 * folder being walked (a loop), a second name of a folder already walked, an unreadable folder below the
 * root and a broken link to a readable kind of file are listed as skips; the root itself must be readable.
 * Synchronous: a trip to the thread pool per entry cost a folder of 38k small files most of its time.
 */
const walk = (root: string, prefix: string, walked: Map<string, string>, list: ListFolder) =>
  Effect.suspend(() => {
    const w: Walk = { root, base: join(root, "x").slice(0, -1), prefix, walked, found: [], list }
    const failed = visitFolder(w, "", [])
    return failed === undefined ? Effect.succeed(w.found) : Effect.fail(failed)
  }).pipe(Effect.withSpan("DocumentSource.walk"))

/** The files under one path, in reading order; `label` (with several paths) goes before their shown names. */
const filesOf = Effect.fn("DocumentSource.filesOf")(function* (
  target: string,
  label: string | undefined,
  walked: Map<string, string>,
  list: ListFolder
) {
  let info: Stats
  try {
    info = statSync(target)
  } catch (error) {
    return yield* failFor(target, error)
  }
  if (info.isDirectory()) {
    const found = yield* walk(target, label === undefined ? "" : `${label}/`, walked, list)
    if (found.length === 0) return yield* new NoDocuments({ path: target })
    return found
  }
  const name = basename(target)
  if (!READABLE_FILE.test(name)) return yield* new UnsupportedSource({ path: target })
  const shown = TEXT_FILE.test(name) ? (label ?? name) : target
  return [{ _tag: "File", file: target, shown, real: realOf(target) }] as const
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
const once = (files: Map<string, string>, found: Found): Found => {
  if (found._tag === "Skip") return found
  const first = files.get(found.real)
  if (first === undefined) {
    files.set(found.real, found.shown)
    return found
  }
  const reason = first === found.shown ? "named twice, read once" : `the same file as ${first}, read once`
  return skipped(found.shown, reason)
}

/**
 * Every file under `paths`, each once (by its real path: a file named twice, or reached through a link, is
 * read the first time and listed as a skip after), with the skips of the walk in their places: one list per path.
 */
export const listRoots = (
  path: Path.Path,
  paths: ReadonlyArray<string>,
  labels?: Readonly<Record<string, string>>,
  list: ListFolder = listFolder
): Stream.Stream<ReadonlyArray<Found>, SourceError> =>
  Stream.unwrap(
    Effect.sync(() => {
      const walked = new Map<string, string>()
      const files = new Map<string, string>()
      return Stream.fromIterable(labelled(path, paths, labels)).pipe(
        Stream.mapEffect(([target, label]) =>
          Effect.map(filesOf(target, label, walked, list), (found) => found.map((f) => once(files, f)))
        )
      )
    })
  )

/** `listRoots`, file by file. */
export const listFiles = (
  path: Path.Path,
  paths: ReadonlyArray<string>,
  labels?: Readonly<Record<string, string>>,
  list: ListFolder = listFolder
): Stream.Stream<Found, SourceError> => listRoots(path, paths, labels, list).pipe(Stream.flatMap(Stream.fromIterable))

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
