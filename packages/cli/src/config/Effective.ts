/**
 * A command's effective settings: each from the command line, else an environment variable, else the configuration
 * file's section for the command, else its top-level settings, else the flag's default. The settings the command line
 * does not give are handed to the command as if they were flags, after each is checked by its flag's own parser, so a
 * bad value is reported with the file and line (or the variable) it came from.
 */

import { scrubUrl } from "@funcpipe/pipeline/store/postgres/PgUrl"
import { Effect, Option, Redacted, Result } from "effect"
import type { Command } from "effect/cli"
import { type ConfigFile, ConfigInvalid, type SettingValue } from "./ConfigFile.ts"
import { givenOn, type Setting, settingsOf } from "./Settings.ts"

/** Where a setting's value comes from. */
export type Source =
  | { readonly kind: "command line" }
  | { readonly kind: "environment"; readonly variable: string }
  | {
      readonly kind: "file"
      readonly path: string
      readonly line: number
      /** The command whose section gives it; undefined for a top-level setting. */
      readonly section: string | undefined
    }
  | { readonly kind: "default" }

/** A setting with its value, and where that comes from. */
export interface Resolved {
  readonly setting: Setting
  /** The value from the environment or the file (undefined for the command line and defaults). */
  readonly value: SettingValue | undefined
  readonly source: Source
}

/** The command's name in a variable: `FUNCPIPE_SERVE_…`; a setting's: `…_RATE_LIMIT`. */
const envName = (name: string) => name.toUpperCase().replaceAll("-", "_")

/** The variables that may give `setting` to `command`: the command's own first. */
export const variablesOf = (command: string, setting: Setting): ReadonlyArray<string> => [
  `FUNCPIPE_${envName(command)}_${envName(setting.name)}`,
  `FUNCPIPE_${envName(setting.name)}`
]

/**
 * The command line's words for a value of `setting`, each as `--name=value`: a value may start with a dash (a
 * token, a query) and would otherwise read as a flag.
 */
const argsOf = (setting: Setting, value: SettingValue): ReadonlyArray<string> => {
  const values = Array.isArray(value) ? value : [value]
  return values.map((one) =>
    setting.boolean && (one === true || one === "true") ? `--${setting.name}` : `--${setting.name}=${String(one)}`
  )
}

/**
 * Checks that every setting of the file names a flag: a section's settings must be its command's, and a top-level
 * setting must be one some command takes.
 */
export const checkFile = (
  file: ConfigFile,
  commands: ReadonlyArray<Command.Command.Any>
): Result.Result<void, ConfigInvalid> => {
  const byName = new Map(commands.map((command) => [command.name, settingsOf(command)] as const))
  for (const [name, section] of file.sections) {
    const settings = byName.get(name)!
    for (const [setting, { line }] of section) {
      if (!settings.has(setting)) {
        return Result.fail(
          new ConfigInvalid({
            origin: file.path,
            line,
            setting: `${name}.${setting}`,
            problem: `funcpipe ${name} has no flag --${setting} (its flags: funcpipe ${name} --help)`
          })
        )
      }
    }
  }
  for (const [setting, { line }] of file.top) {
    const takers = [...byName.entries()].flatMap(([name, settings]) => {
      const one = settings.get(setting)
      return one === undefined ? [] : [{ name, one }]
    })
    const fail = (problem: string) => Result.fail(new ConfigInvalid({ origin: file.path, line, setting, problem }))
    if (takers.length === 0) return fail(`no command has a flag --${setting} (see funcpipe <command> --help)`)
    // One value for every command that has the flag: only where the flag means the same kind of thing in each.
    const kinds = new Set(takers.map(({ one }) => `${one.boolean}/${one.repeatable}`))
    if (kinds.size > 1) {
      return fail(
        `--${setting} takes different values in ${takers.map((t) => t.name).join(", ")}: set it in a command's ` +
          "section instead"
      )
    }
  }
  return Result.succeed(undefined)
}

/** Each setting of `command`, resolved for the command line `args` (the words after the command's name). */
export const resolve = (
  command: Command.Command.Any,
  args: ReadonlyArray<string>,
  file: ConfigFile | undefined,
  env: Readonly<Record<string, string | undefined>>
): ReadonlyArray<Resolved> => resolveSettings(command.name, settingsOf(command).values(), args, file, env)

/** `settings` of the command `name`, resolved for the command line `args` (the words after the command's name). */
export const resolveSettings = (
  name: string,
  settings: Iterable<Setting>,
  args: ReadonlyArray<string>,
  file: ConfigFile | undefined,
  env: Readonly<Record<string, string | undefined>>
): ReadonlyArray<Resolved> =>
  [...settings].map((setting): Resolved => {
    if (givenOn(args, setting)) return { setting, value: undefined, source: { kind: "command line" } }
    for (const variable of variablesOf(name, setting)) {
      const value = env[variable]
      if (value !== undefined && value !== "") return { setting, value, source: { kind: "environment", variable } }
    }
    const own = file?.sections.get(name)?.get(setting.name)
    const located = own ?? file?.top.get(setting.name)
    if (located !== undefined && file !== undefined) {
      const section = own === undefined ? undefined : name
      return { setting, value: located.value, source: { kind: "file", path: file.path, line: located.line, section } }
    }
    return { setting, value: undefined, source: { kind: "default" } }
  })

/** Checks a value from the environment or the file with its flag's own parser; `ConfigInvalid` says where it is. */
export const check = (resolved: Resolved) => {
  const { setting, source, value } = resolved
  if (value === undefined) return Effect.void
  const fail = (problem: string) =>
    Effect.fail(
      source.kind === "file"
        ? new ConfigInvalid({
            origin: source.path,
            line: source.line,
            setting: source.section === undefined ? setting.name : `${source.section}.${setting.name}`,
            problem
          })
        : new ConfigInvalid({
            origin: source.kind === "environment" ? source.variable : "",
            line: null,
            setting: null,
            problem
          })
    )
  if (Array.isArray(value) && !setting.repeatable) return fail("takes one value, not a list")
  const values = (Array.isArray(value) ? value : [value]).map(String)
  if (setting.boolean) {
    return values.every((one) => one === "true" || one === "false") ? Effect.void : fail("must be true or false")
  }
  return setting.flag.parse({ flags: { [setting.name]: values }, arguments: [] }).pipe(
    Effect.asVoid,
    Effect.catch((error) => fail(error.message.replace(/^Invalid value for flag --[\w-]+: /, "not valid: ")))
  )
}

/**
 * The command line with the settings it does not give added from the environment and the file, each checked first:
 * the words for the command's name are `path`, its own words `rest`.
 */
export const withSettings = (
  command: Command.Command.Any,
  path: ReadonlyArray<string>,
  rest: ReadonlyArray<string>,
  file: ConfigFile | undefined,
  env: Readonly<Record<string, string | undefined>>
) =>
  Effect.gen(function* () {
    const resolved = resolve(command, rest, file, env).filter((r) => r.value !== undefined)
    for (const one of resolved) yield* check(one)
    return [...path, ...resolved.flatMap((r) => argsOf(r.setting, r.value!)), ...rest]
  })

/** A URL with a password in it (`postgres://user:secret@host/db`). */
const CREDENTIALS = /^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*@/i

/**
 * A value as `funcpipe config` shows it: secrets hidden (tokens, and passwords in URLs), options unwrapped, anything
 * else as JSON would.
 */
export const shown = (setting: Setting, value: unknown): unknown => {
  if (Option.isOption(value)) return Option.isSome(value) ? shown(setting, value.value) : undefined
  if (value === undefined) return undefined
  if (setting.secret) return "<redacted>"
  if (Redacted.isRedacted(value)) return "<redacted>"
  if (typeof value === "string") return CREDENTIALS.test(value) ? scrubUrl(value) : value
  if (typeof value === "number" || typeof value === "boolean") return value
  if (Array.isArray(value)) return value.map((one) => shown(setting, one))
  return undefined
}

/**
 * A resolved setting's value as its flag reads it: the environment's or the file's (checked first: `ConfigInvalid`
 * says where a bad one is), else the flag's default.
 */
export const parsedValue = (resolved: Resolved) => {
  const { setting, value } = resolved
  const values = value === undefined ? [] : (Array.isArray(value) ? value : [value]).map(String)
  if (value !== undefined && setting.boolean) {
    return Effect.as(check(resolved), setting.repeatable ? values.map((v) => v === "true") : values[0] === "true")
  }
  return Effect.andThen(
    check(resolved),
    Effect.map(
      setting.flag.parse({ flags: values.length === 0 ? {} : { [setting.name]: values }, arguments: [] }),
      ([, parsed]) => parsed
    )
  )
}

/** A resolved setting's value as `funcpipe config` shows it (see `parsedValue`, `shown`). */
export const effectiveValue = (resolved: Resolved) => {
  const { setting, value } = resolved
  if (value === undefined) return defaultOf(setting)
  return Effect.map(parsedValue(resolved), (parsed) => {
    // A value read into something other than words and numbers (a rule) is shown as written.
    const plain = shown(setting, parsed)
    return plain === undefined ? shown(setting, value) : plain
  })
}

/** The default of a setting: its flag's value when the command line does not give it (undefined where it has none). */
export const defaultOf = (setting: Setting) =>
  setting.flag.parse({ flags: {}, arguments: [] }).pipe(
    Effect.map(([, value]) => shown(setting, value)),
    Effect.orElseSucceed(() => undefined)
  )
