/**
 * The settings a command takes: its flags, read from the command itself, so that a configuration file and the
 * environment can give every flag the command line takes, validated by the flag's own parser.
 */

import type { Command, Param } from "effect/cli"

/** One flag of a command, as a setting. */
export interface Setting {
  /** The flag's name without dashes (`rate-limit`), the setting's name in a configuration file. */
  readonly name: string
  /** Its other names on the command line (`-k`), which also count as given there. */
  readonly aliases: ReadonlyArray<string>
  /** A switch: `--json`, or `--json false`. */
  readonly boolean: boolean
  /** It may be given more than once (a list in the file). */
  readonly repeatable: boolean
  /** Its value is never shown (a token or a key). */
  readonly secret: boolean
  /** The flag, to check a value with its own parser. */
  readonly flag: Param.Param<"flag", unknown>
}

/** Names of flags whose values are secrets even where the flag is a plain string. */
const SECRET_NAME = /(^|-)(token|key|password|secret)$/

/** Whether a parameter is one of the wrappers that hold another (`Flag.optional`, `withDefault`, `map`, …). */
const inner = (param: Param.Param<"flag", unknown>): Param.Param<"flag", unknown> | undefined =>
  param._tag === "Single" ? undefined : (param as unknown as { readonly param: Param.Param<"flag", unknown> }).param

/** The setting of one of a command's flags. */
export const settingOf = (flag: Param.Param<"flag", unknown>): Setting => {
  let repeatable = false
  let param = flag
  for (let next = inner(param); next !== undefined; next = inner(param)) {
    if (param._tag === "Variadic") repeatable = true
    param = next
  }
  const single = param as Param.Single<"flag", unknown>
  return {
    name: single.name,
    aliases: single.aliases,
    boolean: single.primitiveType._tag === "Boolean",
    repeatable,
    secret: single.primitiveType._tag === "Redacted" || SECRET_NAME.test(single.name),
    flag
  }
}

/**
 * A command's settings by name. effect's `Command` keeps the flags it was made with in its `config` (not in its public
 * type); the flags themselves are walked by their public shape. The configuration tests fail if either changes.
 */
export const settingsOf = (command: Command.Command.Any): ReadonlyMap<string, Setting> => {
  const flags = (command as unknown as { readonly config?: { readonly flags?: ReadonlyArray<unknown> } }).config?.flags
  if (flags === undefined) throw new Error(`effect's Command no longer keeps its flags in config (${command.name})`)
  return new Map(
    flags.map((flag) => {
      const setting = settingOf(flag as Param.Param<"flag", unknown>)
      return [setting.name, setting] as const
    })
  )
}

/** Whether the command line gives the setting (by its name or an alias, as `--name value` or `--name=value`). */
export const givenOn = (args: ReadonlyArray<string>, setting: Setting): boolean => {
  const names = [setting.name, ...setting.aliases].map((name) => (name.length === 1 ? `-${name}` : `--${name}`))
  if (setting.boolean) names.push(`--no-${setting.name}`)
  const end = args.indexOf("--")
  return (end === -1 ? args : args.slice(0, end)).some((arg) =>
    names.some((name) => arg === name || arg.startsWith(`${name}=`))
  )
}
