/** A progress bar on stderr for runs longer than a moment; silent unless the entry point installs a terminal one. */
import { Clock, Context, Effect } from "effect"

export interface Progress {
  /** Reports `done` of `total` units of work named by `label`; `total` 0 means not known yet. */
  readonly update: (label: string, done: number, total: number) => Effect.Effect<void>
  /** Clears the bar, if one was drawn. */
  readonly finish: Effect.Effect<void>
}

/** Draws nothing: for `--json`, pipes, files and tests. */
export const silentProgress: Progress = { update: () => Effect.void, finish: Effect.void }

/** The progress reporter in use; silent unless provided. */
export const Progress = Context.Reference<Progress>("cli/Progress", { defaultValue: () => silentProgress })

/** How long a run must last before a bar appears, so quick runs print nothing extra. */
const QUIET_MILLIS = 300

/**
 * A bar redrawn in place with carriage returns through `write` (the entry point passes the terminal's stderr).
 * It appears only once the work has lasted `QUIET_MILLIS`, measured with the Clock.
 */
export const terminalProgress = (write: (text: string) => void): Effect.Effect<Progress> =>
  Effect.gen(function*() {
    const startedAt = yield* Clock.currentTimeMillis
    let drawn = false
    return {
      update: (label, done, total) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.sync(() => {
            if (now - startedAt < QUIET_MILLIS && !drawn) return
            const width = 30
            const filled = Math.round((Math.min(done, total) / total) * width)
            // Without a known total (a streaming run learns it at the end) the count alone is shown.
            write(total === 0 ? `\r${label}: ${done}` : `\r${label} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total}`)
            drawn = true
          })),
      finish: Effect.sync(() => {
        if (drawn) write("\r\u001b[K")
        drawn = false
      })
    }
  })
