/**
 * `serve`'s settings that change while it runs: on SIGHUP it reads its configuration again (the file; the
 * environment is the process's own) and applies the token, the body limit, the rate and concurrency limits and
 * `log-queries` to the requests that arrive after. A setting that needs a restart (the address, the index, the model)
 * is named as such; a file that cannot be read leaves everything as it was.
 */

import { DEFAULT_MAX_BODY_BYTES } from "@funcpipe/domain/Config"
import type { GuardCell, GuardSettings } from "@funcpipe/server/Server"
import { Config, Context, Effect, Option, Queue, type Redacted, Schema, type Scope } from "effect"
import { Flag } from "effect/cli"
import { Configuration } from "../config/Configuration.ts"
import { parsedValue, type Resolved, resolve, resolveSettings } from "../config/Effective.ts"
import { settingOf } from "../config/Settings.ts"

const Positive = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: "must be at least 1" }))
const NonNegative = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "must be 0 or more" }))

/** The flags of what guards each request: the settings a reload may change. */
export const guardFlags = {
  token: Flag.Redacted("token").pipe(
    Flag.withDescription(
      "Require Authorization: Bearer <token> on every request (but the search page and /healthz); " +
        "also read from FUNCPIPE_TOKEN. Needed to listen beyond this machine"
    ),
    Flag.withFallbackConfig(Config.Redacted("FUNCPIPE_TOKEN")),
    Flag.optional
  ),
  maxBody: Flag.Int("max-body").pipe(
    Flag.withSchema(Positive),
    Flag.withDescription("The largest request body in bytes (default 1048576, 1 MiB); larger ones get 413"),
    Flag.withDefault(DEFAULT_MAX_BODY_BYTES)
  ),
  logQueries: Flag.Boolean("log-queries").pipe(
    Flag.withDescription("With --log-format json: put each query's text into its line too (left out by default)"),
    Flag.withDefault(false)
  ),
  rateLimit: Flag.Int("rate-limit").pipe(
    Flag.withSchema(NonNegative),
    Flag.withMetavar("N"),
    Flag.withDescription(
      "Answer each client (by address) at most N requests a second on average, 429 with Retry-After past it " +
        "(default 0: no limit; the page, /healthz and /readyz are never limited)"
    ),
    Flag.withDefault(0)
  ),
  burst: Flag.Int("burst").pipe(
    Flag.withSchema(Positive),
    Flag.withMetavar("N"),
    Flag.withDescription("With --rate-limit: how many requests a client may send at once (default: twice the rate)"),
    Flag.optional
  ),
  maxInFlight: Flag.Int("max-in-flight").pipe(
    Flag.withSchema(NonNegative),
    Flag.withMetavar("N"),
    Flag.withDescription(
      "Answer at most N requests at once, the others waiting in a queue of --queue; past it, 503 at once rather " +
        "than ever slower answers (default 0: no limit)"
    ),
    Flag.withDefault(0)
  ),
  queue: Flag.Int("queue").pipe(
    Flag.withSchema(NonNegative),
    Flag.withMetavar("N"),
    Flag.withDescription("With --max-in-flight: how many requests may wait for a turn (default 64)"),
    Flag.withDefault(64)
  )
}

/** The guard flags' values. */
export interface GuardInput {
  readonly token: Option.Option<Redacted.Redacted<string>>
  readonly maxBody: number
  readonly logQueries: boolean
  readonly rateLimit: number
  readonly burst: Option.Option<number>
  readonly maxInFlight: number
  readonly queue: number
}

/** What the server's guard is given for the flags' values. */
export const guardSettingsOf = (input: GuardInput): GuardSettings => ({
  token: Option.getOrUndefined(input.token),
  maxBodyBytes: input.maxBody,
  logQueries: input.logQueries,
  rateLimit:
    input.rateLimit === 0
      ? undefined
      : { perSecond: input.rateLimit, burst: Option.getOrElse(input.burst, () => 2 * input.rateLimit) },
  concurrency: input.maxInFlight === 0 ? undefined : { inFlight: input.maxInFlight, queue: input.queue }
})

/**
 * SIGHUP as it arrives: `subscribe` gives a queue of them for as long as its scope lasts. The process entry provides
 * the real signal (where stdin is not a terminal); by default none ever arrives.
 */
export const Hangups = Context.Reference<{
  readonly subscribe: Effect.Effect<Queue.Dequeue<void>, never, Scope.Scope>
}>("@funcpipe/cli/Hangups", { defaultValue: () => ({ subscribe: Queue.sliding<void>(1) }) })

/** The guard flags' values for a configuration file: the command line's stay; the others come from the file. */
const reloaded = (given: GuardInput, file: Parameters<typeof resolve>[2]) =>
  Effect.gen(function* () {
    const configuration = yield* Configuration
    const keys = Object.keys(guardFlags) as Array<keyof typeof guardFlags>
    const resolved = resolveSettings(
      "serve",
      keys.map((key) => settingOf(guardFlags[key])),
      configuration.args,
      file,
      configuration.env
    )
    const input: Record<string, unknown> = {}
    for (const [i, key] of keys.entries()) {
      const one = resolved[i]!
      if (one.source.kind === "command line") {
        input[key] = given[key]
        continue
      }
      // A bad value is reported with its line in the file (or its variable).
      input[key] = yield* parsedValue(one)
    }
    return input as unknown as GuardInput
  })

/** The settings that need a restart and differ between two states of the file, by name. */
const needRestart = (before: ReadonlyArray<Resolved>, after: ReadonlyArray<Resolved>): ReadonlyArray<string> => {
  const live = new Set(Object.values(guardFlags).map((flag) => settingOf(flag).name))
  return after
    .filter((one, i) => !live.has(one.setting.name) && JSON.stringify(one.value) !== JSON.stringify(before[i]?.value))
    .map((one) => one.setting.name)
}

/**
 * Until the scope closes, reads the configuration again at each SIGHUP from `hangups` and sets the guard's settings
 * from it, reporting each reload in a line.
 */
export const reloadOnHangup = <E extends { readonly message: string }>(
  hangups: Queue.Dequeue<void>,
  cell: GuardCell,
  given: GuardInput,
  report: (line: string) => Effect.Effect<void>,
  /** Refuses settings the server cannot take (no token where it listens beyond this machine). */
  allowed: (token: Redacted.Redacted<string> | undefined) => Effect.Effect<void, E>
) =>
  Effect.gen(function* () {
    const configuration = yield* Configuration
    const serve = configuration.commands.find((command) => command.name === "serve")
    const once = Effect.gen(function* () {
      const next = yield* configuration.reload
      const input = yield* reloaded(given, next)
      const restart =
        serve === undefined
          ? []
          : needRestart(
              resolve(serve, configuration.args, configuration.file, configuration.env),
              resolve(serve, configuration.args, next, configuration.env)
            )
      const settings = guardSettingsOf(input)
      yield* allowed(settings.token)
      cell.set(settings)
      yield* report(
        `reloaded the configuration${next === undefined ? " (no file: defaults and variables)" : ` from ${next.path}`}` +
          `; rate limit ${input.rateLimit === 0 ? "off" : `${input.rateLimit}/s`}, ` +
          `at once ${input.maxInFlight === 0 ? "unlimited" : input.maxInFlight}` +
          (restart.length === 0 ? "" : `; ${restart.join(", ")} changed, which takes a restart`)
      )
    }).pipe(
      Effect.catch((error) =>
        report(`cannot reload the configuration: ${error.message}; still serving with the settings before`)
      )
    )
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Queue.take(hangups), once)))
  })
