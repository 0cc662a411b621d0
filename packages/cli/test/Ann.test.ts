/** `--ann hnsw` through the CLI: built on request, kept by later runs, used by vector queries, checked by `check`. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, Layer } from "effect"
import { printed, run, SAMPLE, sampleIndex } from "./support/Run.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))

describe("funcpipe index --ann hnsw", () => {
  it.effect("builds the approximate index, keeps it on later runs, answers from it, and checks its recall", () =>
    Effect.gen(function* () {
      const index = yield* sampleIndex(["--ann", "hnsw"])
      yield* run(["index", SAMPLE, "--index", index])
      const status = JSON.parse(yield* printed(["status", "--index", index, "--json"]))
      assert.deepStrictEqual(status.ann, { kind: "hnsw", m: 16, ef_construction: 100 })
      const query = ["query", "Which probe reached interstellar space?", "--index", index, "--mode", "vector", "--json"]
      const exact = JSON.parse(yield* printed([...query, "--exact"]))
      const approximate = JSON.parse(yield* printed([...query, "--ann-candidates", "100"]))
      assert.deepStrictEqual(approximate.results, exact.results)
      const checked = JSON.parse(yield* printed(["check", "--index", index, "--json", "--queries", "2"]))
      const ann = checked.checks.find((c: { name: string }) => c.name === "ann")
      assert.match(ann.covered, /^recall@10 1\.000 against the exact scan over \d+ chunks' vectors \(efSearch 64\)$/)
      const changed = yield* Effect.flip(run(["index", SAMPLE, "--index", index, "--ann", "exact"]))
      assert.strictEqual(changed._tag, "SettingsChanged")
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )
})
