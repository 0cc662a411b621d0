/**
 * The real `glove-100d` vectors, installed with `funcpipe models install glove-100d`: not part of `npm test` (they
 * are a 118 MB download); `npm run test:models` runs them, and CI installs the vectors and runs it.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Path } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { GLOVE_100D } from "../src/models/glove/Glove.ts"
import { readGlove } from "../src/models/glove/GloveFiles.ts"
import { Models } from "../src/models/Models.ts"
import { searchPaths } from "../src/programs/Search.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"

/** The embedder from the installed vectors; failing, the message says how to install them. */
const glove = Layer.effect(
  Embedder,
  Effect.flatMap(Models, (models) => models.embedder(GLOVE_100D))
).pipe(Layer.provide(Models.layer), Layer.provide(NodeHttpClient.layerNodeHttp))
const TestLayer = Layer.mergeAll(glove, DocumentSource.layer).pipe(Layer.provideMerge(NodeServices.layer))

const documents: Record<string, string> = {
  "cars.md": "Buying a used car: check the engine, the brakes and the tyres before you drive it away from the dealer.",
  "fruit.md": "Apples and pears ripen in the orchard in autumn; pick them when they come away from the branch easily.",
  "stars.md": "On a clear night, far from city lights, the Milky Way stretches across the sky as a pale band of stars.",
  "bread.md": "Knead the dough for ten minutes, let it rise until doubled, then bake the loaf in a hot oven.",
  "law.md": "The court ruled that the contract was void because one party had signed it under duress."
}

describe("glove-100d with the real vectors", () => {
  // How long loading takes is a figure for a benchmark to print, not for a test to time (a busy machine would fail it).
  it.effect("loads every word's weight from the installed cache", () =>
    Effect.gen(function* () {
      const model = yield* readGlove()
      assert.strictEqual(model.weights.length, 341_479)
      assert.isTrue(model.weights.every(Number.isFinite))
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("finds the car document for 'automobile', which shares no word with it", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const folder = yield* fs.makeTempDirectoryScoped()
      for (const [name, text] of Object.entries(documents)) yield* fs.writeFileString(path.join(folder, name), text)
      const answer = yield* searchPaths([folder], "automobile", 5, { mode: "vector" })
      assert.deepStrictEqual(answer.results.map((r) => r.chunk.docId)[0], "cars.md")
      const fruit = yield* searchPaths([folder], "Which fruit trees give a harvest in the fall?", 5, { mode: "vector" })
      assert.deepStrictEqual(fruit.results.map((r) => r.chunk.docId)[0], "fruit.md")
      const sky = yield* searchPaths([folder], "galaxy astronomy", 5, { mode: "vector" })
      assert.deepStrictEqual(sky.results.map((r) => r.chunk.docId)[0], "stars.md")
    }).pipe(Effect.provide(TestLayer))
  )
})
