/** `funcpipe config`: the settings each command would run with, and where each comes from; secrets hidden. */

import { Console, Effect, Option, Schema } from "effect"
import { Argument, Command } from "effect/cli"
import { Configuration } from "../config/Configuration.ts"
import { effectiveValue, resolve, type Source } from "../config/Effective.ts"
import { json } from "../flags/Flags.ts"

/** `funcpipe config NAME` names no command. */
export class UnknownCommand extends Schema.TaggedError<UnknownCommand>()("UnknownCommand", {
  name: Schema.String,
  commands: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `there is no command ${this.name}; the commands are ${this.commands.join(", ")}`
  }
}

/** Where a value comes from, as a comment on its line. */
const sourceText = (source: Source): string => {
  switch (source.kind) {
    case "environment":
      return source.variable
    case "file":
      return `${source.path}, line ${source.line}`
    default:
      return source.kind
  }
}

/** A value as YAML writes it on one line (quoted where YAML would read it otherwise). */
const yamlValue = (yaml: typeof import("yaml"), value: unknown): string =>
  value === undefined ? '""' : yaml.stringify(value, { collectionStyle: "flow", lineWidth: 0 }).trim()

export const config = Command.make(
  "config",
  {
    command: Argument.String("command").pipe(
      Argument.withDescription("Show only this command's settings (default: every command's)"),
      Argument.optional
    ),
    json
  },
  Effect.fn("config")(function* (input) {
    const configuration = yield* Configuration
    const { commands, env, file } = configuration
    const wanted = Option.getOrUndefined(input.command)
    const chosen = commands.filter(
      (command) => command.name !== "config" && (wanted === undefined || command.name === wanted)
    )
    if (wanted !== undefined && chosen.length === 0) {
      return yield* new UnknownCommand({ name: wanted, commands: commands.map((c) => c.name) })
    }
    const report: Record<string, Record<string, { value: unknown; source: string }>> = {}
    for (const command of chosen) {
      const settings: Record<string, { value: unknown; source: string }> = {}
      for (const resolved of resolve(command, [], file, env)) {
        const value = yield* effectiveValue(resolved)
        if (value === undefined && resolved.source.kind === "default") continue
        settings[resolved.setting.name] = { value, source: sourceText(resolved.source) }
      }
      report[command.name] = settings
    }
    if (input.json) {
      yield* Console.log(JSON.stringify({ file: file?.path ?? null, commands: report }, null, 2))
      return
    }
    // YAML's writer, loaded only here (start-up does not pay for it).
    const yaml = yield* Effect.promise(() => import("yaml"))
    const lines = [
      file === undefined
        ? `# no configuration file (${configuration.path} does not exist); defaults and FUNCPIPE_* variables`
        : `# ${file.path}; FUNCPIPE_* variables override it, and flags override both`
    ]
    for (const [name, settings] of Object.entries(report)) {
      lines.push(`${name}:`)
      for (const [setting, { source, value }] of Object.entries(settings)) {
        lines.push(`${`  ${setting}: ${yamlValue(yaml, value)}`.padEnd(40)}  # ${source}`)
      }
    }
    yield* Console.log(lines.join("\n"))
  })
).pipe(
  Command.withDescription(
    "Show the settings each command runs with: from funcpipe.yaml (or --config FILE), FUNCPIPE_* variables and " +
      "defaults, each with where it comes from; tokens and keys are shown as <redacted>"
  )
)
