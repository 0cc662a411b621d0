/** `--ann hnsw` through the CLI: built on request, kept by later runs, used by vector queries, checked by `check`. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, FileSystem, Layer } from "effect"
import { printed, run, SAMPLE, sampleIndex } from "./support/Run.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))

describe("funcpipe index --ann hnsw", () => {
  it.effect("builds the approximate index, keeps it on later runs, answers from it, and checks its recall", () =>
    Effect.gen(function* () {
      const index = yield* sampleIndex(["--ann", "hnsw"])
      yield* run(["index", SAMPLE, "--index", index])
      const status = JSON.parse(yield* printed(["status", "--index", index, "--json"]))
      assert.deepStrictEqual(status.ann, { kind: "hnsw", m: 16, ef_construction: 100, codes: "float32" })
      const query = ["query", "Which probe reached interstellar space?", "--index", index, "--mode", "vector", "--json"]
      const exact = JSON.parse(yield* printed([...query, "--exact"]))
      const approximate = JSON.parse(yield* printed([...query, "--ann-candidates", "100"]))
      assert.deepStrictEqual(approximate.results, exact.results)
      const checked = JSON.parse(yield* printed(["check", "--index", index, "--json", "--queries", "2"]))
      const ann = checked.checks.find((c: { name: string }) => c.name === "ann")
      assert.match(ann.covered, /^recall@10 1\.000 against the exact scan over \d+ queries \(efSearch 64\)$/)
      // Queries of one's own, one a line, in place of sampled chunks.
      const fs = yield* FileSystem.FileSystem
      const file = `${index}.queries.txt`
      yield* fs.writeFileString(file, "Which probe reached interstellar space?\n\nhow far away is the moon\n")
      const own = JSON.parse(yield* printed(["check", "--index", index, "--json", "--query-file", file]))
      const covered = Object.fromEntries(own.checks.map((c: { name: string; covered: string }) => [c.name, c.covered]))
      assert.match(covered.ann, /^recall@10 1\.000 against the exact scan over 2 queries/)
      assert.strictEqual(covered.ordering, "6 result lists from 2 queries in lexical, vector, hybrid mode")
      const changed = yield* Effect.flip(run(["index", SAMPLE, "--index", index, "--ann", "exact"]))
      assert.strictEqual(changed._tag, "SettingsChanged")
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )

  it.effect(
    "walks over i8 codes with --vector-codes i8, kept by later runs, and refuses it for an index without graphs",
    () =>
      Effect.gen(function* () {
        const exact = yield* sampleIndex([])
        const alone = yield* Effect.flip(run(["index", SAMPLE, "--index", exact, "--vector-codes", "i8"]))
        assert.strictEqual(alone._tag, "CodesNeedGraphs")
        assert.include(alone.message, "add --ann hnsw")
        const index = yield* sampleIndex(["--ann", "hnsw"])
        yield* run(["index", SAMPLE, "--index", index, "--vector-codes", "i8"])
        // A later run that names the graphs but not their rows keeps the codes.
        yield* run(["index", SAMPLE, "--index", index, "--ann", "hnsw"])
        const status = JSON.parse(yield* printed(["status", "--index", index, "--json"]))
        assert.deepStrictEqual(status.ann, { kind: "hnsw", m: 16, ef_construction: 100, codes: "i8" })
        assert.include(yield* printed(["status", "--index", index]), "walked over i8 rows")
        const query = [
          "query",
          "Which probe reached interstellar space?",
          "--index",
          index,
          "--mode",
          "vector",
          "--json"
        ]
        const exactAnswer = JSON.parse(yield* printed([...query, "--exact"]))
        const approximate = JSON.parse(yield* printed([...query, "--ann-candidates", "100"]))
        assert.deepStrictEqual(approximate.results, exactAnswer.results)
        yield* run(["index", SAMPLE, "--index", index, "--vector-codes", "float32"])
        const plain = JSON.parse(yield* printed(["status", "--index", index, "--json"]))
        assert.strictEqual(plain.ann.codes, "float32")
      }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )
})
