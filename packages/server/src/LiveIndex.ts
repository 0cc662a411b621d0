/**
 * The index a server answers from: one open snapshot at a time, swapped for a newer one when the file changes, with
 * each request holding the snapshot it started on until it ends.
 */

import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { openSnapshot } from "@funcpipe/pipeline/programs/QueryIndex"
import type { ModelMismatch } from "@funcpipe/pipeline/search/QueryErrors"
import { IndexMissing } from "@funcpipe/pipeline/search/QueryErrors"
import { IndexStore, readSnapshot, type Snapshot } from "@funcpipe/pipeline/store/IndexStore"
import type { StoreError } from "@funcpipe/pipeline/store/StoreErrors"
import {
  Cause,
  Clock,
  Context,
  Duration,
  Effect,
  Exit,
  Layer,
  Metric,
  Option,
  Schedule,
  Scope,
  Semaphore
} from "effect"

/** One opened state of the index. */
export interface Loaded {
  readonly snapshot: Snapshot
  /** The store's change token when it was opened. */
  readonly version: string
  /** When it was opened (Clock millis). */
  readonly loadedAt: number
}

/** How many states of the index this server has served: 1 for the first, one more at each swap. */
export const snapshotGeneration = Metric.gauge("funcpipe_snapshot_generation", {
  description: "How many states of the index this server has served (1 for the first, one more at each swap)"
})
/** Swaps to a newer state of the index. */
export const snapshotSwaps = Metric.counter("funcpipe_snapshot_swaps_total", {
  description: "Swaps to a newer state of the index since the server started"
})

/** Why no snapshot could be opened: nothing indexed yet, another model's index, or a store failure. */
export type OpenError = IndexMissing | ModelMismatch | StoreError

/** The last failed attempt to open the index. */
export interface OpenFailure {
  readonly at: number
  readonly error: OpenError
}

/** How a `LiveIndex` looks for changes and where it reports them. */
export interface LiveIndexOptions {
  readonly pollMillis: number
  readonly report?: (line: string) => Effect.Effect<void>
}

/** What `refresh` did. */
export type Refreshed = "unchanged" | "swapped" | "failed"

export class LiveIndex extends Context.Service<
  LiveIndex,
  {
    /** The index file, for messages. */
    readonly location: string
    /**
     * Runs `f` on the current snapshot, which stays open until `f` ends even when a newer one replaces it meanwhile,
     * so one request never sees two states of the index. Fails with the reason when there is no snapshot yet.
     */
    readonly use: <A, E, R>(f: (loaded: Loaded) => Effect.Effect<A, E, R>) => Effect.Effect<A, E | OpenError, R>
    /**
     * Looks whether the file changed since the current snapshot was opened and, if so, opens the new state and swaps
     * it in at once: later requests get the new one, requests in flight finish on the old one, which then closes. If
     * opening fails, the old snapshot stays in service and the failure is kept for `state`. One refresh runs at a time.
     */
    readonly refresh: Effect.Effect<Refreshed>
    /** The snapshot in service (if any) and the last failure since it was opened (if any). */
    readonly state: Effect.Effect<{ readonly loaded: Loaded | undefined; readonly failure: OpenFailure | undefined }>
  }
>()("server/LiveIndex") {
  /**
   * Opens the index of the `IndexStore` (checked against the `Embedder`'s model) and refreshes every `pollMillis`
   * (never when 0). A missing or unreadable index does not fail the layer: requests get the reason until a refresh
   * succeeds. `report` is told of every swap and failure, for the server's log. Closing the layer closes the snapshot.
   */
  static readonly layer = (options: LiveIndexOptions) => Layer.effect(LiveIndex, make(options))
}

/** How many graph rows a server reads at a time between requests (a few milliseconds' reading). */
const WARM_ROWS = 4096

/**
 * Reads a snapshot's graph rows (`IndexView.annWarm`) a slice at a time, letting requests in between, until every graph
 * is held whole; before the snapshot's first walk, it looks again every second (a server that never walks holds no
 * graph). A row that does not read is left for the walk that reaches it to report.
 */
export const warmGraphs = (location: string, snapshot: Snapshot) =>
  Effect.gen(function* () {
    const warm = snapshot.annWarm
    if (warm === undefined) return
    for (;;) {
      const done = yield* readSnapshot(location, () => warm(WARM_ROWS))
      if (done === true) return
      yield* Effect.sleep(done === false ? Duration.millis(1) : Duration.seconds(1))
    }
  }).pipe(Effect.ignore)

interface Generation {
  readonly loaded: Loaded
  readonly scope: Scope.Closeable
  users: number
  retired: boolean
}

const make = Effect.fnUntraced(function* (options: LiveIndexOptions) {
  const store = yield* IndexStore
  const embedder = yield* Embedder
  const report = options.report ?? (() => Effect.void)
  let current: Generation | undefined
  let failure: (OpenFailure & { readonly version: string }) | undefined
  const lock = yield* Semaphore.make(1)

  /** Generations retired but still open (requests in flight on them). */
  const retiredOpen = new Set<Generation>()
  /** A swap happened: once the old snapshot is closed, fold the log into the file and open the current state again. */
  let compactPending = false

  const close = (generation: Generation) =>
    Effect.andThen(
      Scope.close(generation.scope, Exit.void),
      Effect.sync(() => void retiredOpen.delete(generation))
    )

  const acquire = Effect.suspend((): Effect.Effect<Generation, OpenError> => {
    const generation = current
    if (generation === undefined) return Effect.fail(failure?.error ?? new IndexMissing({ location: store.location }))
    generation.users++
    return Effect.succeed(generation)
  })
  const release = (generation: Generation) =>
    Effect.suspend(() => {
      generation.users--
      return generation.retired && generation.users === 0 ? close(generation) : Effect.void
    })
  const use = <A, E, R>(f: (loaded: Loaded) => Effect.Effect<A, E, R>) =>
    Effect.acquireUseRelease(acquire, (generation) => f(generation.loaded), release)

  const retire = (generation: Generation | undefined) =>
    Effect.suspend(() => {
      if (generation === undefined) return Effect.void
      generation.retired = true
      retiredOpen.add(generation)
      return generation.users === 0 ? close(generation) : Effect.void
    })

  // A failure is reported when it starts, or changes, not at every look: a store that stays down says so once.
  let reported: string | undefined
  /** States served so far (the snapshot generation metric). */
  let generations = 0
  // The swaps' counter shows from the start, at 0, rather than from the first swap.
  yield* Metric.update(snapshotSwaps, 0)
  const reportChange = (line: string) =>
    Effect.suspend(() => {
      if (line === reported) return Effect.void
      reported = line
      return report(line)
    })

  const refreshUnlocked = Effect.gen(function* () {
    // The token is read before the snapshot is opened, so a commit in between shows up at the next refresh.
    const version = yield* Effect.result(store.version)
    const now = yield* Clock.currentTimeMillis
    if (version._tag === "Failure") {
      failure = { at: now, error: version.failure, version: "" }
      yield* reportChange(`cannot check the index for changes: ${version.failure.message}`)
      return "failed" as const
    }
    if (current?.loaded.version === version.success && failure !== undefined && failure.version === "") {
      // The store answers again, and the index is as it was: that is news once, as its failure was.
      failure = undefined
      reported = undefined
      yield* report(`the index can be read again; still serving ${store.location}`)
    }
    if (current?.loaded.version === version.success) {
      // An open snapshot keeps SQLite from folding the write-ahead log into the file, so without this the log would
      // grow by every index run while the server runs. Once no request holds the older snapshot, the log is folded
      // in, and the current state is opened again: the new snapshot reads the file alone, which lets the next index
      // run start the log over instead of appending to it.
      if (!compactPending || retiredOpen.size > 0) return "unchanged" as const
      compactPending = false
      yield* store.checkpoint
    } else if (failure?.version === version.success) return "failed" as const
    const scope = yield* Scope.make()
    const opened = yield* Effect.exit(
      openSnapshot().pipe(
        // The documents' order, read once per snapshot, lets every query order equal scores by comparing numbers
        // instead of reading chunk keys (see `IndexView.tieOrder`): many chunks tie on common words.
        Effect.tap((snapshot) => readSnapshot(store.location, () => snapshot.documents())),
        Scope.provide(scope),
        Effect.provideService(IndexStore, store),
        Effect.provideService(Embedder, embedder)
      )
    )
    if (Exit.isFailure(opened)) {
      yield* Scope.close(scope, Exit.void)
      const found = Cause.findErrorOption(opened.cause)
      if (Option.isNone(found)) return yield* Effect.die(Cause.squash(opened.cause))
      const error = found.value
      failure = { at: now, error, version: version.success }
      yield* reportChange(
        `${current === undefined ? "cannot serve the index" : "still serving the older snapshot"}: ${error.message}`
      )
      return "failed" as const
    }
    const previous = current
    const reopened = previous?.loaded.version === version.success
    const loaded = {
      snapshot: opened.value,
      version: version.success,
      loadedAt: reopened ? previous!.loaded.loadedAt : now
    }
    current = { loaded, scope, users: 0, retired: false }
    failure = undefined
    // Graphs read as walks reach them (paged) come to be held whole: a server asks again and again, and a walk that
    // reads nothing is the quicker. Their rows are read a slice at a time between requests, until the snapshot closes.
    yield* Effect.forkIn(warmGraphs(store.location, opened.value), scope)
    yield* retire(previous)
    if (reopened) return "unchanged" as const
    compactPending = previous !== undefined
    const m = opened.value.manifest
    const what = `${m.documents} documents, ${m.chunks} chunks`
    // A new state is news each time; and a failure after it is reported again, even one seen before.
    reported = undefined
    yield* Metric.update(snapshotGeneration, ++generations)
    if (previous !== undefined) yield* Metric.update(snapshotSwaps, 1)
    yield* report(`${previous === undefined ? "serving" : "now serving"} ${store.location}: ${what}`)
    return "swapped" as const
  })
  const refresh = lock.withPermits(1)(refreshUnlocked)

  // What earlier index runs left in the log goes into the file before the first snapshot pins it.
  yield* store.checkpoint
  yield* refresh
  yield* Effect.addFinalizer(() => Effect.suspend(() => retire(current)))
  if (options.pollMillis > 0) {
    yield* Effect.forkScoped(Effect.repeat(refresh, Schedule.spaced(options.pollMillis)))
  }

  const state = Effect.sync(() => ({ loaded: current?.loaded, failure }))
  return LiveIndex.of({ location: store.location, use, refresh, state })
})
