/** An index the user may read but not write (a shared or archived copy) answers `query` and `status`. */

import { execFileSync, spawnSync } from "node:child_process"
import { appendFileSync, chmodSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, FileSystem, Layer } from "effect"
import { Command } from "effect/cli"
import { cli, version } from "../src/Cli.ts"
import { launcher } from "./support/Launcher.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const run = Command.runWith(cli, { version })
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))

/** Runs the CLI in a child process. */
const funcpipe = (args: ReadonlyArray<string>) => {
  const result = spawnSync(process.execPath, [launcher, ...args], { encoding: "utf8" })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

/**
 * Makes `paths` unwritable, undone when the scope closes. Root may write anything regardless of permissions, so as
 * root the files are marked immutable (`chattr +i`), which binds root too; otherwise permissions do.
 */
const readOnly = (paths: ReadonlyArray<{ readonly path: string; readonly mode: number }>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      for (const { mode, path } of paths) {
        if (process.getuid?.() === 0) execFileSync("chattr", ["+i", path])
        else chmodSync(path, mode)
      }
    }),
    () =>
      Effect.sync(() => {
        for (const { path } of paths) {
          if (process.getuid?.() === 0) execFileSync("chattr", ["-i", path])
          else chmodSync(path, 0o755)
        }
      })
  )

describe("a read-only index", () => {
  it.effect(
    "answers query and status without writing anything next to it",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-readonly-" })
        const index = `${dir}/shared/index.db`
        yield* run(["index", sample, "--index", index])
        const before = yield* fs.readFile(index)
        yield* readOnly([
          { path: index, mode: 0o444 },
          { path: `${dir}/shared`, mode: 0o555 }
        ])
        assert.throws(() => appendFileSync(index, "x"), /EPERM|EACCES/, "the index cannot be written")

        const query = funcpipe(["query", "interstellar space probe", "--index", index, "--top-k", "1"])
        assert.strictEqual(query.code, 0, query.stderr)
        assert.match(query.stdout, /^1\. \d+\.\d{6} {2}voyager-1 /)
        const status = funcpipe(["status", "--index", index])
        assert.strictEqual(status.code, 0, status.stderr)
        assert.include(status.stdout, "documents  17")

        assert.deepStrictEqual(
          (yield* fs.readDirectory(`${dir}/shared`)).sort(),
          ["index.db"],
          "no journal or lock files"
        )
        assert.deepStrictEqual(yield* fs.readFile(index), before)
      }).pipe(Effect.provide(TestLayer)),
    30_000
  )
})
