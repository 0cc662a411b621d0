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

/** The widest bar drawn, and the narrowest worth drawing (below it only the count is shown). */
const BAR_WIDTH = 30
const MIN_BAR_WIDTH = 10

/**
 * The progress line for a terminal `columns` wide. It takes at most `columns - 1` characters, since a line that
 * reaches the last column wraps in many terminals, and a wrapped line cannot be redrawn in place: each update would
 * scroll. As room shrinks the bar narrows, then goes, then the label goes; the count stays.
 */
export const progressLine = (
  label: string,
  done: number,
  total: number,
  columns: number,
  perSecond?: number
): string => {
  const room = Math.max(columns - 1, 1)
  const count = total === 0 ? `${done}` : `${done}/${total}`
  // The rate (and, with a total, the time left) when there is room for them; they are the first to go.
  const pace =
    perSecond === undefined || perSecond <= 0
      ? ""
      : `, ${formatRate(perSecond)}/s${total > done ? `, ${formatDuration((total - done) / perSecond)} left` : ""}`
  const withBar = (tail: string): string | undefined => {
    const barWidth = Math.min(BAR_WIDTH, room - label.length - tail.length - 4)
    if (total === 0 || barWidth < MIN_BAR_WIDTH) return undefined
    const filled = Math.round((Math.min(done, total) / total) * barWidth)
    return `${label} [${"#".repeat(filled)}${".".repeat(barWidth - filled)}] ${tail}`
  }
  const labelled = (tail: string): string | undefined => {
    const line = `${label}: ${tail}`
    return line.length <= room ? line : undefined
  }
  return withBar(count + pace) ?? withBar(count) ?? labelled(count + pace) ?? labelled(count) ?? count.slice(-room)
}

/** A rate for people: `87`, `1.2k`, `3.4M` per second. */
const formatRate = (perSecond: number): string =>
  perSecond >= 1e6
    ? `${(perSecond / 1e6).toFixed(1)}M`
    : perSecond >= 1e4
      ? `${(perSecond / 1e3).toFixed(1)}k`
      : `${Math.round(perSecond)}`

/** Seconds as `42s`, `3m05s` or `2h04m`. */
const formatDuration = (seconds: number): string => {
  const s = Math.ceil(seconds)
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`
}

/**
 * A bar redrawn in place with carriage returns through `write` (the entry point passes the terminal's stderr), fitted
 * to the terminal's width as `columns` reports it at each update (so a resized window is followed). It appears only
 * once the work has lasted `QUIET_MILLIS`, measured with the Clock.
 */
export const terminalProgress = (write: (text: string) => void, columns: () => number): Effect.Effect<Progress> =>
  Effect.gen(function* () {
    const startedAt = yield* Clock.currentTimeMillis
    let drawn = false
    // The rate is measured from the first update of the current label, so each stage has its own.
    let stage: { readonly label: string; readonly at: number; readonly done: number } | undefined
    return {
      update: (label, done, total) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.sync(() => {
            if (stage?.label !== label) stage = { label, at: now, done }
            if (now - startedAt < QUIET_MILLIS && !drawn) return
            const seconds = (now - stage.at) / 1000
            const perSecond = seconds >= 1 ? (done - stage.done) / seconds : undefined
            // Without a known total (a streaming run learns it at the end) the count alone is shown.
            write(`\r${progressLine(label, done, total, columns(), perSecond)}`)
            drawn = true
          })
        ),
      finish: Effect.sync(() => {
        if (drawn) write("\r\u001b[K")
        drawn = false
      })
    }
  })
