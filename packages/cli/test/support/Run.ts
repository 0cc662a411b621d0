/** Running the CLI in a test: the command line parsed and run in process, and what it printed to stdout. */
import { fileURLToPath } from "node:url"
import { Effect, FileSystem, Path } from "effect"
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

/** The repository's sample corpus. */
export const SAMPLE = fileURLToPath(new URL("../../../../sample", import.meta.url))

/** A fresh index of the sample corpus (`extra` flags given to `index`) in a temporary folder; its file. */
export const sampleIndex = (extra: ReadonlyArray<string> = []) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-sample-" })
    const index = path.join(dir, "index.db")
    yield* run(["index", SAMPLE, "--index", index, ...extra])
    return index
  })
