/** Running the CLI in a test: the command line parsed and run in process, and what it printed to stdout. */
import { Effect } from "effect"
import { Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { cli, version } from "../../src/Cli.ts"

/** Runs a command line (without the program's name). */
export const run = Command.runWith(cli, { version })

/** Runs a command line and returns what it printed to stdout through the console, lines joined. */
export const printed = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const before = (yield* TestConsole.logLines).length
    yield* run(args)
    return (yield* TestConsole.logLines).slice(before).map(String).join("\n")
  })
