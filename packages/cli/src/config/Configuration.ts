/**
 * Finding and reading the configuration file, and the `Configuration` a command line runs with: the file (if any) and
 * the environment its `FUNCPIPE_*` variables override it from.
 */

import { Context, Effect, FileSystem, Path, Schema } from "effect"
import type { Command } from "effect/cli"
import { type ConfigFile, type ConfigInvalid, parseConfigFile } from "./ConfigFile.ts"
import { checkFile } from "./Effective.ts"

/** The file read when neither `--config` nor `FUNCPIPE_CONFIG` names one, in the working folder. */
export const DEFAULT_CONFIG_FILE = "funcpipe.yaml"

/** The variable that names the configuration file. */
export const CONFIG_ENV = "FUNCPIPE_CONFIG"

/** The configuration a command line runs with. */
export interface ConfigurationShape {
  /** The file read, or undefined where there is none. */
  readonly file: ConfigFile | undefined
  /** Where the file was looked for (the default file, which may not exist, or the one named). */
  readonly path: string
  /** The environment, whose `FUNCPIPE_*` variables override the file. */
  readonly env: Readonly<Record<string, string | undefined>>
  /** The commands the settings are for. */
  readonly commands: ReadonlyArray<Command.Command.Any>
  /** The command line's words after the command's name, as given (without the settings added from elsewhere). */
  readonly args: ReadonlyArray<string>
  /** Reads the file again (`serve` on SIGHUP). */
  readonly reload: Effect.Effect<ConfigFile | undefined, ConfigInvalid | ConfigMissing, FileSystem.FileSystem>
}

/**
 * The configuration a command line runs with (`main` provides it); by default none: no file, no variables, as when a
 * program runs the command tree itself.
 */
export const Configuration = Context.Reference<ConfigurationShape>("@funcpipe/cli/Configuration", {
  defaultValue: () => ({
    file: undefined,
    path: DEFAULT_CONFIG_FILE,
    env: {},
    commands: [],
    args: [],
    reload: Effect.succeed(undefined)
  })
})

/** `--config` or `FUNCPIPE_CONFIG` names a file that is not there. */
export class ConfigMissing extends Schema.TaggedError<ConfigMissing>()("ConfigMissing", {
  path: Schema.String,
  namedBy: Schema.String
}) {
  override get message(): string {
    return `${this.namedBy} names the configuration file ${this.path}, which cannot be read (it does not exist, or is not a file)`
  }
}

/** `--config PATH` (or `--config=PATH`) taken out of a command line, before any `--`. */
export const takeConfigFlag = (
  args: ReadonlyArray<string>
): { readonly path: string | undefined; readonly rest: ReadonlyArray<string> } => {
  const end = args.indexOf("--")
  const head = end === -1 ? [...args] : args.slice(0, end)
  const tail = end === -1 ? [] : args.slice(end)
  let path: string | undefined
  const rest: Array<string> = []
  for (let i = 0; i < head.length; i++) {
    const arg = head[i]!
    if (arg === "--config" && i + 1 < head.length) path = head[++i]
    else if (arg.startsWith("--config=")) path = arg.slice("--config=".length)
    else rest.push(arg)
  }
  return { path, rest: [...rest, ...tail] }
}

/**
 * Reads the configuration file: the one `--config` (`explicit`) or `FUNCPIPE_CONFIG` names, which must exist, else
 * `funcpipe.yaml` in the working folder if there is one. Its settings are checked against the commands' flags.
 */
export const loadConfig = (
  explicit: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  commands: ReadonlyArray<Command.Command.Any>,
  args: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const pathService = yield* Path.Path
    const named = explicit ?? (env[CONFIG_ENV] === "" ? undefined : env[CONFIG_ENV])
    const path = pathService.resolve(named ?? DEFAULT_CONFIG_FILE)
    const read = Effect.gen(function* () {
      const text = yield* fs.readFileString(path).pipe(Effect.option)
      if (text._tag === "None") {
        if (named === undefined) return undefined
        return yield* new ConfigMissing({ path, namedBy: explicit !== undefined ? "--config" : CONFIG_ENV })
      }
      const names = new Set(commands.map((command) => command.name))
      // YAML's parser, loaded only when there is a file to read.
      const yaml = yield* Effect.promise(() => import("yaml"))
      const file = yield* Effect.fromResult(parseConfigFile(yaml, path, text.value, names))
      yield* Effect.fromResult(checkFile(file, commands))
      return file
    })
    const file = yield* read
    return { file, path, env, commands, args, reload: read } satisfies ConfigurationShape
  })
