/** An index the user may read but not write (a shared or archived copy) answers `query` and `status`. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer } from "effect"
import { Command } from "effect/cli"
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { DocumentSource } from "@funcpipe/pipeline/services/DocumentSource"
import { Embedder } from "@funcpipe/pipeline/services/Embedder"
import { cli, version } from "../src/Cli.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Embedder.layerLocalSha256).pipe(Layer.provideMerge(NodeServices.layer))
const run = Command.runWith(cli, { version })
const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))

/** Runs the CLI in a process that cannot write the index: as `nobody` when the tests run as root (root may write anything). */
const funcpipe = (args: ReadonlyArray<string>) => {
  const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}
  const result = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", ...asNobody })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

/**
 * Whether `nobody` can run Node from this checkout at all: not when it lies in a folder only root may enter (a
 * `mktemp -d` clone), where the test cannot make a process that is refused the index and nothing else.
 */
const nobodyCanRun = process.getuid?.() !== 0 || spawnSync(process.execPath, ["-e", "0"], { uid: 65534, gid: 65534 }).status === 0

describe("a read-only index", () => {
  it.effect.skipIf(!nobodyCanRun)("answers query and status without writing anything next to it", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-readonly-" })
      const index = `${dir}/shared/index.db`
      yield* run(["index", sample, "--index", index])
      const before = yield* fs.readFile(index)
      yield* fs.chmod(dir, 0o755)
      yield* fs.chmod(`${dir}/shared`, 0o555)
      yield* fs.chmod(index, 0o444)

      const query = funcpipe(["query", "interstellar space probe", "--index", index, "--top-k", "1"])
      assert.strictEqual(query.code, 0, query.stderr)
      assert.match(query.stdout, /^1\. \d+\.\d{6} {2}voyager-1 /)
      const status = funcpipe(["status", "--index", index])
      assert.strictEqual(status.code, 0, status.stderr)
      assert.include(status.stdout, "documents  17")

      assert.deepStrictEqual((yield* fs.readDirectory(`${dir}/shared`)).sort(), ["index.db"], "no journal or lock files")
      assert.deepStrictEqual(yield* fs.readFile(index), before)
      yield* fs.chmod(`${dir}/shared`, 0o755) // so the temporary folder can be removed
    }).pipe(Effect.provide(TestLayer)), 30_000)
})
