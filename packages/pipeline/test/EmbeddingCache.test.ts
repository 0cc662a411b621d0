/** A costly model embeds outside the write lock, through a cache that keeps what a stopped run had paid for. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, FileSystem, Layer } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { cachedEmbedder, EmbeddingCache } from "../src/models/EmbeddingCache.ts"
import { EmbedFailure } from "../src/models/ModelErrors.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"
import { docsSource } from "./Sources.ts"

const corpus = Array.from(
  { length: 40 },
  (_, i) => [`d${i}`, `Document ${i} tells of ${i % 7} moons and ${i} stars.`] as const
)

const source = docsSource(corpus, "in.jsonl")

/** local-sha256's vectors from a "costly" model that records every text it is asked for and can fail on a batch. */
const costly = (asked: Array<string>, failOnBatch = Infinity) => {
  let batches = 0
  return Layer.succeed(
    Embedder,
    Embedder.of({
      ...Embedder.localSha256,
      costly: true,
      embedMany: (texts) =>
        ++batches === failOnBatch
          ? Effect.fail(new EmbedFailure({ model: "costly", reason: "the service went away" }))
          : Effect.tap(Embedder.localSha256.embedMany(texts), () => Effect.sync(() => asked.push(...texts)))
    })
  )
}

const files = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-cache-" })
  return { index: `${dir}/index.db`, cache: `${dir}/index.db.embeddings` }
})

/** Every stored chunk's doc id, span and vector, in a fixed order. */
const contents = (index: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const store = yield* IndexStore
      const snapshot = yield* store.snapshot
      const view = snapshot.pipe((o) => (o._tag === "Some" ? o.value : undefined))!
      return Array.from({ length: view.positions }, (_, p) => view.chunkAt(p))
        .map((c) => `${c.docId} ${c.start} ${c.end} ${c.vector.join(",")}`)
        .sort()
    })
  ).pipe(Effect.provide(layerSqlite(index)))

describe("a costly model", () => {
  it.effect(
    "re-run after a failure mid-embedding, embeds only what it had not, and indexes as an uncached run does",
    () =>
      Effect.gen(function* () {
        const { cache, index } = yield* files
        const run = (embedder: Layer.Layer<Embedder>) =>
          indexPaths(["/corpus"], { batchSize: 8 }).pipe(
            Effect.provide(Layer.mergeAll(layerSqlite(index), source, embedder, EmbeddingCache.layerSqlite(cache)))
          )
        const first: Array<string> = []
        const failed = yield* Effect.flip(run(costly(first, 3)))
        assert.strictEqual(failed._tag, "EmbedFailure")
        assert.strictEqual(first.length, 16, "two batches of 8 were embedded before the failure")
        assert.isFalse(yield* FileSystem.FileSystem.use((fs) => fs.exists(index)), "nothing was written to the index")

        const second: Array<string> = []
        const report = yield* run(costly(second))
        assert.strictEqual(report.plan.added.length, 40)
        assert.strictEqual(second.length, 24, "only the 24 texts not embedded before")
        assert.isTrue(second.every((text) => !first.includes(text)))

        const { index: plain } = yield* files
        yield* indexPaths(["/corpus"]).pipe(
          Effect.provide(Layer.mergeAll(layerSqlite(plain), source, Embedder.layerLocalSha256))
        )
        assert.deepStrictEqual(yield* contents(index), yield* contents(plain))
      }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("does not hold the write lock while it embeds", () =>
    Effect.gen(function* () {
      const { cache, index } = yield* files
      const embedding = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      let waited = false
      const slow = Layer.succeed(
        Embedder,
        Embedder.of({
          ...Embedder.localSha256,
          costly: true,
          embedMany: (texts) =>
            Effect.gen(function* () {
              if (!waited) {
                waited = true
                yield* Deferred.succeed(embedding, undefined)
                yield* Deferred.await(release)
              }
              return yield* Embedder.localSha256.embedMany(texts)
            })
        })
      )
      const layers = Layer.mergeAll(layerSqlite(index), source, slow, EmbeddingCache.layerSqlite(cache))
      const run = yield* Effect.forkChild(indexPaths(["/corpus"]).pipe(Effect.provide(layers)))
      yield* Deferred.await(embedding)
      // Another writer gets the lock at once while the model works.
      yield* IndexStore.use((store) => store.transaction(() => Effect.void)).pipe(Effect.provide(layerSqlite(index)))
      yield* Deferred.succeed(release, undefined)
      const report = yield* Fiber.join(run)
      assert.strictEqual(report.documents, 40)
    }).pipe(Effect.provide(NodeServices.layer))
  )
})

describe("cachedEmbedder", () => {
  it.effect("gives back the model's vectors bit for bit and asks the model once per text", () =>
    Effect.gen(function* () {
      const { cache } = yield* files
      const asked: Array<string> = []
      const model = Embedder.of({
        ...Embedder.localSha256,
        embedMany: (texts) =>
          Effect.tap(Embedder.localSha256.embedMany(texts), () => Effect.sync(() => asked.push(...texts)))
      })
      const texts = ["alpha", "beta", "alpha", "gamma 😀"]
      const run = EmbeddingCache.use((c) => cachedEmbedder(model, c).embedMany(texts))
      const first = yield* run.pipe(Effect.provide(EmbeddingCache.layerSqlite(cache)))
      const again = yield* run.pipe(Effect.provide(EmbeddingCache.layerSqlite(cache)))
      const direct = yield* Embedder.localSha256.embedMany(texts)
      assert.deepStrictEqual(
        first.map((e) => e.vector),
        direct.map((e) => e.vector)
      )
      assert.deepStrictEqual(
        again.map((e) => e.vector),
        direct.map((e) => e.vector)
      )
      assert.deepStrictEqual(asked, texts, "the second run asked nothing")
    }).pipe(Effect.provide(NodeServices.layer))
  )
})
