/** Ctrl-C during `funcpipe index`: one line on stderr, exit code 130, and the index as it was before the run. */

import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { IndexStore } from "@funcpipe/pipeline/store/IndexStore"
import { layerSqlite } from "@funcpipe/pipeline/store/sqlite/SqliteIndexStore"
import { Effect, FileSystem, Layer, Path } from "effect"
import { Command } from "effect/cli"
import { cli, version } from "../src/Cli.ts"
import { launcher } from "./support/Launcher.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const run = Command.runWith(cli, { version })
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))
const fakeTerminal = fileURLToPath(new URL("./children/FakeTerminal.ts", import.meta.url))

/** A JSONL corpus large enough that indexing it lasts well past the moment its progress bar first appears. */
const corpus = (count: number) =>
  `${Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      id: `doc-${i}`,
      title: `Document ${i}`,
      text: `Sentence ${i % 97} about topic ${i % 13}, with words.`
    })
  ).join("\n")}\n`

/** Runs the CLI as a process, sends SIGINT once its progress bar shows, and resolves its exit code and stderr. */
const interruptIndexing = (args: ReadonlyArray<string>) =>
  Effect.callback<{ readonly code: number | null; readonly stderr: string }, Error>((resume) => {
    const proc = spawn(process.execPath, ["--import", fakeTerminal, launcher, ...args], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stderr = ""
    let sent = false
    proc.stderr.on("data", (data: Buffer) => {
      stderr += data.toString()
      if (!sent && stderr.includes("indexing documents")) {
        sent = true
        proc.kill("SIGINT")
      }
    })
    proc.on("error", (error) => resume(Effect.fail(error)))
    proc.on("exit", (code) => resume(Effect.succeed({ code, stderr })))
  })

/** What the index holds: its manifest and documents. */
const contents = (index: string) =>
  Effect.gen(function* () {
    const store = yield* IndexStore
    return { manifest: yield* store.manifest, documents: yield* store.documents }
  }).pipe(Effect.provide(layerSqlite(index)))

describe("funcpipe index interrupted", () => {
  it.effect(
    "says the index is unchanged, exits 130, and leaves the index as it was",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-interrupt-" })
        const index = path.join(dir, "index.db")
        yield* run(["index", sample, "--index", index])
        const before = yield* contents(index)
        yield* fs.writeFileString(path.join(dir, "big.jsonl"), corpus(60_000))

        const { code, stderr } = yield* interruptIndexing(["index", path.join(dir, "big.jsonl"), "--index", index])
        assert.strictEqual(code, 130, stderr)
        // The bar is cleared, then one line says what happened.
        assert.isTrue(
          stderr.endsWith("\r\u001b[Kfuncpipe: interrupted; the index is unchanged\n"),
          JSON.stringify(stderr)
        )
        // Every redraw of the bar fitted the (fake) 60-column terminal.
        for (const line of stderr.split(/[\r\n]/)) assert.isAtMost(line.length, 59, line)
        assert.deepStrictEqual(yield* contents(index), before)
      }).pipe(Effect.provide(TestLayer)),
    60_000
  )
})
