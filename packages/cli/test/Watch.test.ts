/**
 * `funcpipe index --watch`, run as users run it: a line per run on stderr, a change indexed as it comes, and Ctrl-C
 * as the normal end (exit 0), after which `query` finds what was changed.
 */

import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, Exit, FileSystem, Layer, Path } from "effect"
import { CliOutput } from "effect/cli"
import { TestConsole } from "effect/testing"
import { presenter, reportFailure } from "../src/output/Report.ts"
import { launcher } from "./support/Launcher.ts"
import { printed, run } from "./support/Run.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal, CliOutput.layerPresenter(presenter)).pipe(
  Layer.provideMerge(NodeServices.layer)
)

/**
 * Runs `funcpipe index <docs> --watch`; once it watches, calls `change`, and once a run after it is reported, sends
 * SIGINT. Resolves with the exit code and stderr.
 */
const watchOneChange = (docs: string, index: string, change: () => void) =>
  Effect.callback<{ readonly code: number | null; readonly stderr: string }, Error>((resume) => {
    const proc = spawn(process.execPath, [launcher, "index", docs, "--index", index, "--watch"], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stderr = ""
    let changedAt: number | undefined
    let stopped = false
    proc.stderr.on("data", (data: Buffer) => {
      stderr += data.toString()
      if (changedAt === undefined && stderr.includes("watch: watching")) {
        changedAt = stderr.length
        change()
      } else if (changedAt !== undefined && !stopped && /watch: added 1,[^\n]*\n/.test(stderr.slice(changedAt))) {
        stopped = true
        proc.kill("SIGINT")
      }
    })
    proc.on("error", (error) => resume(Effect.fail(error)))
    proc.on("exit", (code) => resume(Effect.succeed({ code, stderr })))
    return Effect.sync(() => proc.kill("SIGKILL"))
  })

describe("funcpipe index --watch", () => {
  it.effect(
    "indexes a change as it comes, a line per run, and stops on SIGINT with exit code 0",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-watch-cli-" })
        const docs = path.join(dir, "docs")
        yield* fs.makeDirectory(docs)
        yield* fs.writeFileString(path.join(docs, "a.md"), "# Alpha\nThe first note.\n")
        const index = path.join(dir, "index.db")
        const { code, stderr } = yield* watchOneChange(docs, index, () =>
          writeFileSync(path.join(docs, "b.md"), "# Beta\nA note about a marmalade harbour.\n")
        )
        const lines = stderr.trim().split("\n")
        assert.match(
          lines[0]!,
          /^watch: added 1, updated 0, unchanged 0, deleted 0; 1 chunk written; .* \(\d+\.\d s\)$/
        )
        assert.strictEqual(lines[1], "watch: watching 1 path (1 folder) for changes; stop with Ctrl-C")
        assert.match(lines.at(-2)!, /^watch: added 1, updated 0, unchanged 1, deleted 0; .* holds 2 documents/)
        assert.strictEqual(lines.at(-1), "watch: stopped")
        assert.strictEqual(code, 0, stderr)

        const answer = JSON.parse(yield* printed(["query", "marmalade harbour", "--index", index, "--json"]))
        assert.strictEqual(answer.results[0].doc_id, "b.md")
      }).pipe(Effect.provide(TestLayer)),
    60_000
  )

  it.effect("refuses --dry-run, which writes nothing", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(run(["index", ".", "--watch", "--dry-run", "--index", "/nonexistent/i.db"]))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) yield* reportFailure(exit.cause)
      assert.strictEqual(
        (yield* TestConsole.errorLines).at(-1),
        "funcpipe: --watch keeps the index current and --dry-run writes nothing: use one or the other"
      )
    }).pipe(Effect.provide(TestLayer))
  )
})
