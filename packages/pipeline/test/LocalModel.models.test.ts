/**
 * `local:<folder>` models run for real: the tiny fixture model through the installed transformers.js runtime
 * (tokenizer, ONNX Runtime session, pooling, normalisation). Not part of `npm test`: the runtime is installed on
 * demand (`funcpipe models install transformers`); `npm run test:models` runs these, and CI installs it first.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import {
  expectedMean,
  TINY_DIMENSIONS,
  TINY_MAX_TOKENS,
  tinyIds,
  tinyTable,
  writeTinyModel
} from "@funcpipe/test-kit/LocalModelFixture"
import { Effect, FileSystem, Layer, Path } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { Models } from "../src/models/Models.ts"
import { searchPaths } from "../src/programs/Search.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"

const ModelsLayer = Models.layer.pipe(
  Layer.provide(NodeHttpClient.layerNodeHttp),
  Layer.provideMerge(NodeServices.layer)
)

/** A temporary folder holding the tiny model (with `table` as its weights, if given). */
const tinyFolder = (options: Parameters<typeof writeTinyModel>[1] = {}) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const folder = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-tiny-model-" })
    yield* writeTinyModel(folder, options)
    return folder
  })

const embedderOf = (folder: string) => Effect.flatMap(Models, (models) => models.embedder(`local:${folder}`))

const norm = (v: ReadonlyArray<number>) => Math.sqrt(v.reduce((s, x) => s + x * x, 0))

describe("local: models with the tiny model", () => {
  it.effect("make unit vectors of the model's length, named after the folder's absolute path", () =>
    Effect.gen(function* () {
      const folder = yield* tinyFolder()
      const embedder = yield* embedderOf(folder)
      assert.strictEqual(embedder.model, `local:${folder}`)
      assert.strictEqual(embedder.dimensions, TINY_DIMENSIONS)
      const embeddings = yield* embedder.embedMany(["Stars in the night sky", "bread and dough", "zebra"])
      assert.strictEqual(embeddings.length, 3)
      for (const e of embeddings) {
        assert.strictEqual(e.vector.length, TINY_DIMENSIONS)
        assert.strictEqual(e.model, embedder.model)
        assert.closeTo(norm(e.vector), 1, 1e-12)
      }
    }).pipe(Effect.provide(ModelsLayer))
  )

  it.effect("mean-pool the token vectors ([CLS] and [SEP] included, padding not) as computed by hand", () =>
    Effect.gen(function* () {
      const embedder = yield* embedderOf(yield* tinyFolder())
      const long = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? "court" : "ruled"))
      const texts = ["Stars in the night sky", "a car", "Telescope zebra!", long.join(" ")]
      const [stars, car, unknown, cut] = yield* embedder.embedMany(texts)
      const close = (actual: ReadonlyArray<number>, expected: ReadonlyArray<number>) =>
        actual.forEach((x, d) => {
          assert.closeTo(x, expected[d]!, 1e-12)
        })
      close(stars!.vector, expectedMean(tinyIds(["stars", "in", "the", "night", "sky"])))
      // Batched with longer texts, so padded: the padding must not count.
      close(car!.vector, expectedMean(tinyIds(["a", "car"])))
      // An unknown word is [UNK]; "!" is a token of its own, unknown too.
      close(unknown!.vector, expectedMean(tinyIds(["telescope", "zebra", "!"])))
      // Cut at the model's length: transformers.js cuts the whole sequence, so [CLS] and the first 15 words.
      close(cut!.vector, expectedMean(tinyIds(long.slice(0, TINY_MAX_TOKENS - 1)).slice(0, TINY_MAX_TOKENS)))
      // The same text alone (no padding) gives the same vector.
      const [alone] = yield* embedder.embedMany(["a car"])
      close(alone!.vector, car!.vector)
    }).pipe(Effect.provide(ModelsLayer))
  )

  it.effect("give the same fingerprint for the same files, another when the weights change", () =>
    Effect.gen(function* () {
      const folder = yield* tinyFolder()
      const first = yield* embedderOf(folder)
      const again = yield* embedderOf(folder)
      assert.strictEqual(again.fingerprint, first.fingerprint)
      const other = tinyTable().map((x) => x * 2)
      yield* writeTinyModel(folder, { table: other })
      const changed = yield* embedderOf(folder)
      assert.strictEqual(changed.model, first.model)
      assert.notStrictEqual(changed.fingerprint, first.fingerprint)
    }).pipe(Effect.provide(ModelsLayer))
  )

  it.effect("read model.onnx at the folder's top level too", () =>
    Effect.gen(function* () {
      const embedder = yield* embedderOf(yield* tinyFolder({ layout: "root" }))
      const [e] = yield* embedder.embedMany(["moon"])
      const expected = expectedMean(tinyIds(["moon"]))
      e!.vector.forEach((x, d) => {
        assert.closeTo(x, expected[d]!, 1e-12)
      })
    }).pipe(Effect.provide(ModelsLayer))
  )

  it.effect("rank first, in vector mode, the document that shares the query's words", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const model = yield* tinyFolder()
      const documents = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-tiny-docs-" })
      const texts: Record<string, string> = {
        "sky.md": "On a dark night the stars and the moon fill the sky.",
        "bread.md": "Knead the dough, then bake the bread in the oven.",
        "car.md": "The dealer checked the engine and the brakes of the car.",
        "law.md": "The court ruled that the contract was void."
      }
      for (const [name, text] of Object.entries(texts)) yield* fs.writeFileString(path.join(documents, name), text)
      const ranked = (query: string) =>
        searchPaths([documents], query, 4, { mode: "vector" }).pipe(
          Effect.map((answer) => answer.results.map((r) => r.chunk.docId))
        )
      const embedder = Layer.effect(Embedder, embedderOf(model))
      const search = Effect.all([
        ranked("telescope and stars"),
        ranked("fruit from the orchard"),
        ranked("judge")
      ]).pipe(Effect.provide(Layer.mergeAll(embedder, DocumentSource.layer)))
      const [sky, bread, law] = yield* search
      assert.strictEqual(sky[0], "sky.md")
      assert.strictEqual(bread[0], "bread.md")
      assert.strictEqual(law[0], "law.md")
    }).pipe(Effect.provide(ModelsLayer))
  )
})
