/**
 * A watched index: the paths' changes, debounced and coalesced, kept in the index by ordinary incremental runs (the
 * same write lock, the same atomic commit as `indexPaths`).
 */

import { Clock, Duration, Effect, Option, Path, Queue, Stream } from "effect"
import type { EmbedFailure } from "../models/ModelErrors.ts"
import type { NoDocuments, SourceMissing, SourceUnreadable } from "../read/SourceErrors.ts"
import { makeWatcher } from "../read/Watcher.ts"
import { IndexStore } from "../store/IndexStore.ts"
import type { IndexBusy, IndexUnreachable } from "../store/StoreErrors.ts"
import type { NothingKept, NothingToIndex, PruneNeeded } from "./IndexErrors.ts"
import { type IndexOptions, type IndexReport, indexPaths } from "./IndexRun.ts"

/** How a watch waits for the changes to settle and retries a run that failed for a passing reason. */
export interface WatchSettings {
  /** How long the paths must be quiet after a change before a run starts (default 300 ms). */
  readonly quiet?: Duration.Input
  /** The longest a run waits for quiet after the first change it covers (default 5 s), so steady changes still run. */
  readonly maxWait?: Duration.Input
  /**
   * How long after a run that failed for a passing reason (the index busy or unreachable, the model failing) the
   * next one starts even without a change (default 5 s, doubled after each such failure up to a minute).
   */
  readonly retry?: Duration.Input
  /** Paths whose changes start no run, besides the index's own files (absolute, or relative to the working directory). */
  readonly ignore?: ReadonlyArray<string>
}

/** A failure that ends one run only: the watch reports it and goes on. */
export type RunFailure =
  | SourceMissing
  | SourceUnreadable
  | NoDocuments
  | NothingToIndex
  | NothingKept
  | PruneNeeded
  | IndexBusy
  | IndexUnreachable
  | EmbedFailure

/**
 * One run of a watch: `first` is the run at the start (the others follow changes); `folders` is how many folders
 * under the paths were watched when it started. A failed run changed nothing; `retryMillis` says when a run whose failure may pass
 * (see `WatchSettings.retry`) is tried again, `undefined` when the next run waits for a change.
 */
export type WatchRun =
  | { readonly _tag: "Indexed"; readonly first: boolean; readonly folders: number; readonly report: IndexReport }
  | {
      readonly _tag: "Failed"
      readonly first: boolean
      readonly folders: number
      readonly error: RunFailure
      readonly retryMillis: number | undefined
    }

const MAX_RETRY_MILLIS = 60_000

/**
 * Waits until `changes` has been quiet for `quiet`, or `maxWait` has passed since the call: taking every change that
 * comes meanwhile, so that a burst of changes ends in one run.
 */
export const settle = Effect.fnUntraced(function* (
  changes: Queue.Dequeue<void>,
  quiet: Duration.Input,
  maxWait: Duration.Input
) {
  const quietMillis = Duration.toMillis(quiet)
  const until = (yield* Clock.currentTimeMillis) + Duration.toMillis(maxWait)
  while (true) {
    const left = until - (yield* Clock.currentTimeMillis)
    if (left <= 0) return
    const more = yield* Effect.timeoutOption(Queue.take(changes), Math.min(quietMillis, left))
    if (Option.isNone(more)) return
  }
})

/**
 * Keeps the index at the `IndexStore` mirroring `paths`: one run at the start, then one run for each settled burst of
 * changes under the paths (see `WatchSettings`), as a stream of what each run did. Changes that come during a run
 * mark one more run, never more (a queue of one), so changes never pile up. A run's failure of its own (`RunFailure`:
 * a path missing, the deletions needing `prune`, the index busy) is a `Failed` element and the watch goes on; any other
 * failure (the index damaged or built with other settings, a folder that cannot be watched) ends the stream. The
 * options are those of every run, but `rebuild`, which applies to the first run only.
 *
 * Every folder under the paths has a watch of its own (`read/Watcher.ts`), made again before each run, so that folders
 * made, renamed or removed meanwhile are followed; the index's own files (at the store's location) start no run.
 */
export const watchIndex = (
  paths: ReadonlyArray<string>,
  options: Omit<IndexOptions, "dryRun"> = {},
  settings: WatchSettings = {}
) =>
  Stream.unwrap(
    Effect.gen(function* () {
      const path = yield* Path.Path
      const store = yield* IndexStore
      // A queue of one: a change while another is pending (or while a run goes on) adds nothing.
      const changes = yield* Queue.sliding<void>(1)
      const ignored = [store.location, ...(settings.ignore ?? [])].map((p) => path.resolve(p))
      const watcher = yield* makeWatcher(
        paths.map((p) => path.resolve(p)),
        ignored,
        Effect.asVoid(Queue.offer(changes, undefined))
      )
      const quiet = settings.quiet ?? "300 millis"
      const maxWait = settings.maxWait ?? "5 seconds"
      const retry = Duration.toMillis(settings.retry ?? "5 seconds")
      let passing = 0
      let last: WatchRun | undefined
      const run = Effect.fnUntraced(function* (first: boolean) {
        const folders = yield* watcher.sync
        const failed = (error: RunFailure, passes: boolean) =>
          Effect.sync((): WatchRun => {
            passing = passes ? passing + 1 : 0
            const retryMillis = passes ? Math.min(MAX_RETRY_MILLIS, retry * 2 ** (passing - 1)) : undefined
            return { _tag: "Failed", first, folders, error, retryMillis }
          })
        last = yield* indexPaths(paths, first ? options : { ...options, rebuild: false }).pipe(
          Effect.map((report): WatchRun => {
            passing = 0
            return { _tag: "Indexed", first, folders, report }
          }),
          Effect.catchTags({
            SourceMissing: (e) => failed(e, false),
            SourceUnreadable: (e) => failed(e, false),
            NoDocuments: (e) => failed(e, false),
            NothingToIndex: (e) => failed(e, false),
            NothingKept: (e) => failed(e, false),
            PruneNeeded: (e) => failed(e, false),
            IndexBusy: (e) => failed(e, true),
            IndexUnreachable: (e) => failed(e, true),
            EmbedFailure: (e) => failed(e, true)
          })
        )
        return last
      })
      const next = Effect.gen(function* () {
        const wait = last?._tag === "Failed" ? last.retryMillis : undefined
        if (wait === undefined) yield* Queue.take(changes)
        else yield* Effect.timeoutOption(Queue.take(changes), wait)
        yield* settle(changes, quiet, maxWait)
        return yield* run(false)
      })
      return Stream.concat(Stream.fromEffect(run(true)), Stream.fromEffectRepeat(next))
    })
  )
