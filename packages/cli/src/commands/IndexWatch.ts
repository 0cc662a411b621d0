/** `funcpipe index --watch`: a first run, then one run per settled burst of changes, a line each, until Ctrl-C. */

import type { EmbedUsage } from "@funcpipe/pipeline/models/Embedder"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import type { OutputFailure } from "@funcpipe/pipeline/platform/AtomicFile"
import type { IndexOptions } from "@funcpipe/pipeline/programs/IndexRun"
import { watchIndex } from "@funcpipe/pipeline/programs/Watch"
import { Console, Effect, type FileSystem, type Path, Schema, Stream } from "effect"
import { embedUsageLine, indexReportJson, skipLines, watchingLine, watchRunLine } from "../output/Format.ts"
import type { Progress } from "../output/Progress.ts"

/**
 * Set once a watch has been stopped (Ctrl-C, SIGTERM), so the process entry exits with 0 rather than the 130 of an
 * interrupted command: stopping is how a watch ends normally.
 */
export const watchStopped = { value: false }

/** `--watch` with `--dry-run`: a watch writes each change, a dry run writes nothing. */
export class WatchDryRun extends Schema.TaggedError<WatchDryRun>()("WatchDryRun", {}) {
  override get message(): string {
    return "--watch keeps the index current and --dry-run writes nothing: use one or the other"
  }
}

/** What the model cost between two readings of its usage (which counts from the start of the process). */
const usageSince = (before: EmbedUsage, now: EmbedUsage): EmbedUsage => ({
  requests: now.requests - before.requests,
  inputTokens:
    now.inputTokens === undefined || before.inputTokens === undefined
      ? now.inputTokens
      : now.inputTokens - before.inputTokens
})

/**
 * Watches `paths` (see `watchIndex`), printing a line on stderr for each run, the records it skipped and what its
 * embedding cost; with `json`, also each run's `--json` object on stdout, one a line. Ends only when stopped (the index
 * as the last finished run left it) or when a run fails in a way the watch cannot go past.
 */
export const watchPaths = Effect.fn("index.watch")(function* (
  paths: ReadonlyArray<string>,
  options: Omit<IndexOptions, "dryRun">,
  location: string,
  json: boolean,
  progress: Progress,
  /** Runs after each run that indexed (`--metrics-file`). */
  afterRun: Effect.Effect<void, OutputFailure, FileSystem.FileSystem | Path.Path> = Effect.void
) {
  const embedder = yield* Embedder
  let usage = yield* embedder.usage
  yield* watchIndex(paths, options).pipe(
    Stream.runForEach((run) =>
      Effect.gen(function* () {
        yield* progress.finish
        yield* Console.error(watchRunLine(run, location))
        if (run._tag === "Indexed") {
          for (const line of skipLines(run.report.skipped)) yield* Console.error(line)
          const now = yield* embedder.usage
          const cost = embedUsageLine(run.report.chunksWritten, { model: embedder.model, ...usageSince(usage, now) })
          usage = now
          if (cost !== undefined) yield* Console.error(cost)
          if (json) yield* Console.log(indexReportJson(run.report, location))
          // A metrics file that cannot be written is reported; the watch goes on.
          yield* afterRun.pipe(Effect.catch((error) => Console.error(`watch: ${error.message}`)))
        }
        if (run.first) yield* Console.error(watchingLine(paths.length, run.folders))
      })
    ),
    // A run under way when stopped is rolled back; the index is as the last finished run left it.
    Effect.onInterrupt(() =>
      Effect.andThen(
        progress.finish,
        Effect.andThen(
          Console.error("watch: stopped"),
          Effect.sync(() => (watchStopped.value = true))
        )
      )
    )
  )
})
