/** The `funcpipe` command tree. Handlers only orchestrate: stages do the work, services do the I/O. */
import { Effect, Schema, Stdio } from "effect"
import { Command } from "effect/cli"
import { ask } from "./commands/Ask.ts"
import { check } from "./commands/Check.ts"
import { chunks } from "./commands/Chunks.ts"
import { copy } from "./commands/Copy.ts"
import { evaluate } from "./commands/Eval.ts"
import { index } from "./commands/Index.ts"
import { mcp } from "./commands/Mcp.ts"
import { models } from "./commands/Models.ts"
import { query } from "./commands/Query.ts"
import { search } from "./commands/Search.ts"
import { serve } from "./commands/Serve.ts"
import { status } from "./commands/Status.ts"
import { version } from "./Version.ts"

export const cli = Command.make("funcpipe").pipe(
  Command.withDescription("FuncPipe: turn documents into ranked answers (read, clean, chunk, embed, retrieve)"),
  Command.withSubcommands([index, query, ask, status, check, serve, mcp, search, chunks, evaluate, models, copy])
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

/**
 * Runs one command line (without the program name). The wizard is refused when stdin is not a terminal: it would
 * read end of input, print "Wizard cancelled." and exit 0, as if something had run.
 */
export const main = Effect.fn("main")(function* (args: ReadonlyArray<string>) {
  const stdio = yield* Stdio.Stdio
  if (asksWizard(args) && !(yield* stdio.stdinIsTerminal)) return yield* new WizardNeedsTerminal()
  return yield* Command.runWith(cli, { version })(args)
})
