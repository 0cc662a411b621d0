/**
 * The folders under the paths named for indexing, watched for changes: one watch per folder (not per file), kept in
 * step with the folders as they come and go, so that any change to what a run would read is noticed.
 */

import { type Dirent, readdirSync, realpathSync, statSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import { Deferred, Effect, Exit, Fiber, FileSystem, PlatformError, Schema, Scope, Stream } from "effect"
import { errorCode, systemReason } from "../platform/SystemReason.ts"
import { isRead } from "./Folder.ts"

/** A folder under the paths cannot be watched (the system's limit of watches reached, permissions). */
export class WatchFailed extends Schema.TaggedError<WatchFailed>()("WatchFailed", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot watch ${this.path} for changes: ${this.reason}`
  }
}

/** A folder to watch, and which of its entries matter. */
export interface WatchTarget {
  readonly folder: string
  /** The folder's identity (device and inode): a folder replaced by another of the same name is watched anew. */
  readonly id: string
  /**
   * The entries whose changes matter: those named (in the folder above a path named for indexing, the path itself),
   * or with `undefined` every entry a run reads (not hidden entries nor `node_modules`).
   */
  readonly names: ReadonlySet<string> | undefined
}

const statOf = (path: string) => {
  try {
    return statSync(path)
  } catch {
    return undefined
  }
}

const listed = (folder: string): ReadonlyArray<Dirent> => {
  try {
    return readdirSync(folder, { withFileTypes: true })
  } catch {
    // A folder that cannot be listed is the run's to report (as a skip); it is not watched.
    return []
  }
}

/**
 * The folders to watch for `roots` (absolute paths): the folder above each (where the path itself appears, goes or is
 * replaced), and every folder a run walks under each, links followed as a run follows them, each real folder once.
 */
export const watchTargets = (roots: ReadonlyArray<string>): ReadonlyArray<WatchTarget> => {
  const targets = new Map<string, { id: string; names: Set<string> | undefined }>()
  const walked = new Set<string>()
  const walk = (folder: string): void => {
    const info = statOf(folder)
    if (info === undefined || !info.isDirectory()) return
    let real = folder
    try {
      real = realpathSync.native(folder)
    } catch {}
    if (walked.has(real)) return
    walked.add(real)
    targets.set(folder, { id: `${info.dev}:${info.ino}`, names: undefined })
    for (const entry of listed(folder)) {
      if (!isRead(entry.name)) continue
      if (entry.isDirectory() || entry.isSymbolicLink()) walk(join(folder, entry.name))
    }
  }
  for (const root of roots) walk(root)
  for (const root of roots) {
    const above = dirname(root)
    if (above === root) continue
    const known = targets.get(above)
    if (known !== undefined) {
      known.names?.add(basename(root))
      continue
    }
    const info = statOf(above)
    if (info?.isDirectory() === true)
      targets.set(above, { id: `${info.dev}:${info.ino}`, names: new Set([basename(root)]) })
  }
  return [...targets].map(([folder, { id, names }]) => ({ folder, id, names }))
}

/** Whether a change to the entry `name` of `target` matters: not when it is under one of `ignored` (absolute paths). */
export const matters = (target: WatchTarget, name: string, ignored: ReadonlyArray<string>): boolean => {
  if (target.names !== undefined) return target.names.has(name)
  if (!isRead(name)) return false
  const file = join(target.folder, name)
  return !ignored.some((own) => file === own || (file.startsWith(own) && /^[-.]/.test(file.slice(own.length))))
}

const sameTarget = (a: WatchTarget, b: WatchTarget): boolean =>
  a.id === b.id &&
  (a.names === undefined
    ? b.names === undefined
    : b.names !== undefined && a.names.size === b.names.size && [...a.names].every((n) => b.names!.has(n)))

/** Why a folder cannot be watched, in words; Linux's limit of watches has a remedy. */
const watchReason = (error: unknown): string => {
  const cause = PlatformError.isPlatformError(error) ? error.reason.cause : error
  return errorCode(cause) === "ENOSPC"
    ? "the system's limit of watched folders is reached; raise it (sysctl fs.inotify.max_user_watches)"
    : systemReason(error)
}

const isNotFound = (error: unknown): boolean => {
  if (PlatformError.isPlatformError(error)) {
    return error.reason._tag === "NotFound" || errorCode(error.reason.cause) === "ENOENT"
  }
  return errorCode(error) === "ENOENT"
}

/** The watches in place, kept in step with the folders by `sync`. */
export interface Watcher {
  /**
   * Watches the folders now under the paths (see `watchTargets`) and stops watching those gone or replaced; returns
   * once every new watch is in place, with the number of folders watched under the paths (the folders above them not
   * counted). Fails when a folder cannot be watched.
   */
  readonly sync: Effect.Effect<number, WatchFailed>
}

/**
 * A watcher of `roots` (absolute paths) that runs `changed` on every change that matters (see `matters`), and when a
 * watch ends (its folder removed): the next `sync` then watches the folders as they are. Nothing is watched until the
 * first `sync`; the watches end with the scope.
 */
export const makeWatcher = Effect.fnUntraced(function* (
  roots: ReadonlyArray<string>,
  ignored: ReadonlyArray<string>,
  changed: Effect.Effect<void>
) {
  const fs = yield* FileSystem.FileSystem
  const scope = yield* Scope.Scope
  const watching = new Map<string, { readonly target: WatchTarget; fiber?: Fiber.Fiber<void> }>()

  /** Starts watching `target`; the deferred is done once the watch is in place, or failed when it cannot be. */
  const watch = Effect.fnUntraced(function* (target: WatchTarget) {
    const ready = yield* Deferred.make<void, WatchFailed>()
    const entry: { readonly target: WatchTarget; fiber?: Fiber.Fiber<void> } = { target }
    // Before the watch is in place a failure is the caller's (a folder gone meanwhile is simply not watched); after,
    // the watch has ended, and the next sync looks again.
    const failed = (error: unknown) =>
      Deferred.isDoneUnsafe(ready) || isNotFound(error)
        ? Effect.void
        : Deferred.fail(ready, new WatchFailed({ path: target.folder, reason: watchReason(error) }))
    const ended = Effect.suspend(() => {
      if (watching.get(target.folder) !== entry) return Effect.void
      watching.delete(target.folder)
      return changed
    })
    watching.set(target.folder, entry)
    entry.fiber = yield* fs.watch(target.folder, { onReady: () => void Deferred.doneUnsafe(ready, Exit.void) }).pipe(
      Stream.runForEach((event) => (matters(target, event.path, ignored) ? changed : Effect.void)),
      Effect.catch(failed),
      Effect.catchDefect(failed),
      Effect.ensuring(Effect.andThen(Deferred.succeed(ready, undefined), ended)),
      Effect.forkIn(scope, { startImmediately: true })
    )
    return ready
  })

  const sync = Effect.gen(function* () {
    const wanted = new Map(watchTargets(roots).map((target) => [target.folder, target] as const))
    const stale: Array<Fiber.Fiber<void>> = []
    for (const [folder, { fiber, target }] of watching) {
      const now = wanted.get(folder)
      if (now !== undefined && sameTarget(now, target)) continue
      watching.delete(folder)
      if (fiber !== undefined) stale.push(fiber)
    }
    yield* Fiber.interruptAll(stale)
    const started: Array<Deferred.Deferred<void, WatchFailed>> = []
    for (const [folder, target] of wanted) if (!watching.has(folder)) started.push(yield* watch(target))
    yield* Effect.forEach(started, Deferred.await, { discard: true })
    let under = 0
    for (const { target } of watching.values()) if (target.names === undefined) under++
    return under
  })
  return { sync } satisfies Watcher
})
