/** writeFileAtomic: the target holds the old content or the new one, and no temporary file is left behind. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem } from "effect"
import { writeFileAtomic } from "../src/platform/AtomicFile.ts"

describe("writeFileAtomic", () => {
  it.effect("replaces the file and leaves nothing else in its directory", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-atomic-" })
      yield* writeFileAtomic(`${dir}/out.jsonl`, "old\n")
      yield* writeFileAtomic(`${dir}/out.jsonl`, "new\n")
      assert.strictEqual(yield* fs.readFileString(`${dir}/out.jsonl`), "new\n")
      assert.deepStrictEqual(yield* fs.readDirectory(dir), ["out.jsonl"])
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("fails with OutputFailure and keeps the old content when the rename cannot happen", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-atomic-" })
      // A directory in the target's place: the temporary file is written, the rename over it fails.
      yield* fs.makeDirectory(`${dir}/taken/inner`, { recursive: true })
      const error = yield* Effect.flip(writeFileAtomic(`${dir}/taken`, "new\n"))
      assert.strictEqual(error._tag, "OutputFailure")
      assert.deepStrictEqual(yield* fs.readDirectory(dir), ["taken"])
      assert.deepStrictEqual(yield* fs.readDirectory(`${dir}/taken`), ["inner"])
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("fails with OutputFailure naming a missing directory", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(writeFileAtomic("/no/such/dir/out.jsonl", "x"))
      assert.strictEqual(error.message, "cannot write /no/such/dir/out.jsonl: the folder /no/such/dir does not exist")
    }).pipe(Effect.provide(NodeServices.layer))
  )
})
