/**
 * Results on a terminal: a passage as wide as the terminal around the matches, the matched words in bold; plain output
 * (pipes, files) keeps its stable format.
 */

import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, FileSystem, Layer } from "effect"
import { Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { cli, version } from "../src/Cli.ts"
import { ResultTerminal, terminalStyleOf } from "../src/output/Terminal.ts"

const run = Command.runWith(cli, { version })
const BaseLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))

/** What the terminal shows of a line: without the escape sequences that make text bold. */
const visible = (line: string) => line.replaceAll("\u001b[1m", "").replaceAll("\u001b[22m", "")

/** A note whose one matching sentence is at its end, far past the 160 code points the plain format shows. */
const MOON =
  "# The Moon\nThe Moon has no light of its own. What we see is sunlight bounced off grey dust and rock. " +
  "Its phases follow the angle between the Sun, the Earth and the Moon over about a month, from new to full and " +
  "back. It is about 384,000 km away."

/** Indexes the note and answers `query` with the given terminal (none: plain output); returns the first line. */
const firstLine = (query: string, terminal: Layer.Layer<never>, flags: ReadonlyArray<string> = []) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-terminal-" })
    yield* fs.makeDirectory(`${dir}/sky`)
    yield* fs.writeFileString(`${dir}/sky/moon.md`, MOON)
    yield* run(["index", `${dir}/sky`, "--index", `${dir}/index.db`])
    const before = (yield* TestConsole.logLines).length
    yield* run(["query", query, "--index", `${dir}/index.db`, ...flags]).pipe(Effect.provide(terminal))
    return String((yield* TestConsole.logLines).slice(before)[0]).split("\n")[0]!
  }).pipe(Effect.provide(BaseLayer))

describe("results on a terminal", () => {
  it.effect("show the passage around the match, as wide as the terminal, with the matched words in bold", () =>
    Effect.gen(function* () {
      const line = yield* firstLine("how far away", Layer.succeed(ResultTerminal, { columns: 100, bold: true }))
      assert.isAtMost(Array.from(visible(line)).length, 100)
      assert.include(line, "\u001b[1maway\u001b[22m")
      assert.include(visible(line), "It is about 384,000 km away.")
      assert.match(visible(line), /\[0, \d+\) {2}…/, "the passage says that text before it is left out")
      // Plain output cuts the passage to 160 code points around the match, and marks nothing.
      const plain = yield* firstLine("how far away", Layer.empty)
      assert.include(plain, "It is about 384,000 km away.")
      assert.notInclude(plain, "\u001b[")
      // With --raw, the cleaned text as indexed: its first 160 code points, which do not reach the match.
      const raw = yield* firstLine("how far away", Layer.empty, ["--raw"])
      assert.match(raw, /\[0, \d+\) {2}# the moon the moon has no light/)
      assert.notInclude(raw, "384,000")
    })
  )

  it.effect("without bold, mark nothing, and stay within a narrow terminal", () =>
    Effect.gen(function* () {
      const line = yield* firstLine("sunlight dust", Layer.succeed(ResultTerminal, { columns: 60, bold: false }))
      assert.notInclude(line, "\u001b[")
      assert.include(line, "sunlight")
      assert.isAtMost(Array.from(line).length, 60)
    })
  )

  it("is a terminal only when stdout is one; bold unless NO_COLOR is set or the terminal is dumb", () => {
    assert.isUndefined(terminalStyleOf(false, 120, {}))
    assert.deepStrictEqual(terminalStyleOf(true, 120, {}), { columns: 120, bold: true })
    assert.deepStrictEqual(terminalStyleOf(true, undefined, {}), { columns: 80, bold: true })
    assert.deepStrictEqual(terminalStyleOf(true, 120, { NO_COLOR: "1" }), { columns: 120, bold: false })
    assert.deepStrictEqual(terminalStyleOf(true, 120, { TERM: "dumb" }), { columns: 120, bold: false })
  })
})
