/**
 * `funcpipe index --model local:<folder>` and `funcpipe query` as a user runs them: the real `funcpipe` binary (the
 * bundle `npm ci` builds), the tiny fixture model and the runtime installed by `funcpipe models install
 * transformers` in `$FUNCPIPE_MODELS`. Part of `npm run test:models`.
 */

import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { tinyTable, writeTinyModel } from "@funcpipe/test-kit/LocalModelFixture"
import { Effect, FileSystem, Path } from "effect"

const bin = fileURLToPath(new URL("../bin/funcpipe.mjs", import.meta.url))

/** Runs `funcpipe args` in a process of its own: its exit code, stdout and stderr. */
const funcpipe = (args: ReadonlyArray<string>) =>
  Effect.callback<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resume) => {
    execFile(process.execPath, [bin, ...args], { encoding: "utf8" }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1
      resume(Effect.succeed({ code, stdout, stderr }))
    })
  })

const texts: Record<string, string> = {
  "sky.md": "On a dark night the stars and the moon fill the sky.",
  "bread.md": "Knead the dough, then bake the bread in the oven.",
  "car.md": "The dealer checked the engine and the brakes of the car.",
  "law.md": "The court ruled that the contract was void."
}

describe("funcpipe with a local: model", () => {
  it.effect("indexes, answers a query with the index's model, and refuses once the weights changed", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const root = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-local-cli-" })
      const model = path.join(root, "tiny-model")
      const documents = path.join(root, "docs")
      const index = path.join(root, "index.db")
      yield* writeTinyModel(model)
      yield* fs.makeDirectory(documents)
      for (const [name, text] of Object.entries(texts)) yield* fs.writeFileString(path.join(documents, name), text)

      const indexed = yield* funcpipe(["index", documents, "--model", `local:${model}`, "--index", index])
      assert.strictEqual(indexed.code, 0, indexed.stderr)

      const query = ["query", "telescope and stars", "--index", index, "--mode", "vector", "--top-k", "4", "--json"]
      const answered = yield* funcpipe(query)
      assert.strictEqual(answered.code, 0, answered.stderr)
      const results = (JSON.parse(answered.stdout) as { results: Array<{ doc_id: string }> }).results
      assert.deepStrictEqual(results.map((r) => r.doc_id)[0], "sky.md")

      // Other weights in the same folder: the fingerprint in the index no longer matches.
      yield* writeTinyModel(model, { table: tinyTable().map((x) => x * 2) })
      const refused = yield* funcpipe(query)
      assert.strictEqual(refused.code, 1)
      assert.strictEqual(
        refused.stderr,
        `funcpipe: the index was built with the model "local:${model}" but the query was embedded with ` +
          `"local:${model} with other settings"; query with the index's model or rebuild the index\n`
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )
})
