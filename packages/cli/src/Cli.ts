/** The `funcpipe` command tree. Handlers only orchestrate: stages do the work, services do the I/O. */
import { Effect, Schema, Stdio } from "effect"
import { Command } from "effect/cli"
import { ask } from "./commands/Ask.ts"
import { check } from "./commands/Check.ts"
import { chunks } from "./commands/Chunks.ts"
import { config } from "./commands/Config.ts"
import { copy } from "./commands/Copy.ts"
import { evaluate } from "./commands/Eval.ts"
import { index } from "./commands/Index.ts"
import { mcp } from "./commands/Mcp.ts"
import { models } from "./commands/Models.ts"
import { query } from "./commands/Query.ts"
import { search } from "./commands/Search.ts"
import { serve } from "./commands/Serve.ts"
import { status } from "./commands/Status.ts"
import { Configuration, loadConfig, takeConfigFlag } from "./config/Configuration.ts"
import { withSettings } from "./config/Effective.ts"
import { version } from "./Version.ts"

export const cli = Command.make("funcpipe").pipe(
  Command.withDescription("FuncPipe: turn documents into ranked answers (read, clean, chunk, embed, retrieve)"),
  Command.withSubcommands([
    index,
    query,
    ask,
    status,
    check,
    serve,
    mcp,
    search,
    chunks,
    evaluate,
    models,
    copy,
    config
  ])
)

export { version } from "./Version.ts"

/** `--wizard` was given but stdin is not a terminal, so nobody could answer its questions. */
export class WizardNeedsTerminal extends Schema.TaggedError<WizardNeedsTerminal>()("WizardNeedsTerminal", {}) {
  override get message(): string {
    return (
      "--wizard asks its questions on a terminal, but stdin is not one; give the command's arguments instead " +
      "(see: funcpipe --help)"
    )
  }
}

/** Whether the command line asks for the wizard (a `--wizard` before any `--`). */
const asksWizard = (args: ReadonlyArray<string>): boolean => {
  const end = args.indexOf("--")
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === "--wizard" || arg.startsWith("--wizard="))
}

/** Flags after which a command line needs no configuration: help, the version, completion scripts. */
const SKIPS_CONFIGURATION: ReadonlySet<string> = new Set(["--help", "-h", "--version", "-v", "--completions"])

/** effect's flags for every command that take a value (`--log-level debug`). */
const GLOBAL_WITH_VALUE: ReadonlySet<string> = new Set(["--log-level", "--completions"])

/** Where the command's name is in a command line: its first word that is not a flag or a global flag's value. */
const commandAt = (args: ReadonlyArray<string>): number | undefined => {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--") return undefined
    if (GLOBAL_WITH_VALUE.has(arg)) i++
    else if (!arg.startsWith("-")) return i
  }
  return undefined
}

/**
 * Runs one command line (without the program name), with the settings the command line does not give taken from
 * `env`'s `FUNCPIPE_*` variables and the configuration file (`--config`, `FUNCPIPE_CONFIG` or `funcpipe.yaml`; see
 * config/Effective.ts). The wizard is refused when stdin is not a terminal: it would read end of input, print
 * "Wizard cancelled." and exit 0, as if something had run.
 */
export const main = Effect.fn("main")(function* (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>> = {}
) {
  const stdio = yield* Stdio.Stdio
  if (asksWizard(args) && !(yield* stdio.stdinIsTerminal)) return yield* new WizardNeedsTerminal()
  const { path, rest } = takeConfigFlag(args)
  // Help, the version and completion scripts need no configuration (and show the flags as they are).
  if (rest.some((arg) => SKIPS_CONFIGURATION.has(arg) || arg.startsWith("--completions="))) {
    return yield* Command.runWith(cli, { version })(rest)
  }
  const commands = cli.subcommands.flatMap((group) => group.commands)
  const at = commandAt(rest)
  const command = at === undefined ? undefined : commands.find((c) => c.name === rest[at])
  const configuration = yield* loadConfig(path, env, commands, command === undefined ? [] : rest.slice(at! + 1))
  const line =
    command === undefined
      ? rest
      : yield* withSettings(command, rest.slice(0, at! + 1), rest.slice(at! + 1), configuration.file, env)
  return yield* Command.runWith(cli, { version })(line).pipe(Effect.provideService(Configuration, configuration))
})
