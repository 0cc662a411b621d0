/** `funcpipe check` through the CLI: a report line per check, `--json` for scripts, and a failure when damaged. */
import { DatabaseSync } from "node:sqlite"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, Layer } from "effect"
import { printed, run, sampleIndex } from "./support/Run.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))

describe("funcpipe check", () => {
  it.effect("reports each check of a sound index, then fails naming the first problem once it is damaged", () =>
    Effect.gen(function* () {
      const index = yield* sampleIndex()
      const text = yield* printed(["check", "--index", index, "--queries", "3"])
      assert.match(text, /^storage {4}ok {6}the store's own integrity check$/m)
      assert.match(text, /^ordering {3}ok {6}9 result lists from 3 queries in lexical, vector, hybrid mode$/m)
      const sound = JSON.parse(yield* printed(["check", "--index", index, "--json", "--queries", "0"]))
      assert.strictEqual(sound.ok, true)
      assert.deepStrictEqual(
        sound.checks.map((c: { name: string }) => c.name),
        ["storage", "manifest", "documents", "postings", "vectors"]
      )
      assert.deepStrictEqual(Object.keys(sound.checks[0]).sort(), ["covered", "more", "name", "ok", "problems"])

      const db = new DatabaseSync(index)
      db.exec("DELETE FROM postings WHERE term = 'voyag'")
      db.close()
      const failed = yield* Effect.flip(run(["check", "--index", index, "--json"]))
      assert.strictEqual(failed._tag, "IndexCheckFailed")
      assert.match(
        failed.message,
        /has \d+ problems? \(first: the term "voyag" of position \d+ is missing from its postings\); rebuild it/
      )
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )
})
