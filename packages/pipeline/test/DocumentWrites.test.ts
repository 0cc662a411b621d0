/** Writing single documents (`putDocuments`, `deleteDocuments`), the change token, and looking a document up. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { ModelLabel } from "@funcpipe/domain/Embedding"
import { Effect, FileSystem, Layer, Option } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { deleteDocuments, putDocuments } from "../src/programs/DocumentWrites.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"

const doc = (docId: string, body: string, title = "") =>
  new RawDoc({ docId: DocId.make(docId), title, body, categories: null })

/** A fresh index file in a temporary folder, with its store. */
const withStore = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-writes-" })
  return `${dir}/index.db`
})

const Base = Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)

describe("putDocuments and deleteDocuments", () => {
  it.effect("add, replace and keep documents, and the change token moves with every commit", () =>
    Effect.gen(function* () {
      const file = yield* withStore
      yield* Effect.gen(function* () {
        const store = yield* IndexStore
        const empty = yield* store.version
        assert.strictEqual(empty, "none")

        const first = yield* putDocuments(
          [doc("a", "The Moon orbits the Earth", "Moon"), doc("b", "Saturn has rings")],
          "api"
        )
        assert.deepStrictEqual([first.added, first.updated, first.documents], [["a", "b"], [], 2])
        const v1 = yield* store.version
        assert.notStrictEqual(v1, empty)
        assert.strictEqual(yield* store.version, v1, "no commit, no change")

        const second = yield* putDocuments(
          [doc("a", "The Moon orbits the Earth", "Moon"), doc("b", "Saturn's rings are ice")],
          "api"
        )
        assert.deepStrictEqual([second.unchanged, second.updated, second.added], [["a"], ["b"], []])
        const v2 = yield* store.version
        assert.notStrictEqual(v2, v1)

        const answer = yield* queryIndex("rings ice", 3)
        assert.deepStrictEqual(
          answer.results.map((r) => r.chunk.docId),
          ["b"]
        )

        const found = yield* Effect.scoped(
          Effect.map(store.snapshot, (snapshot) => {
            const view = Option.getOrThrow(snapshot)
            return { a: view.document("a"), none: view.document("zzz") }
          })
        )
        assert.strictEqual(found.none, undefined)
        assert.strictEqual(found.a?.doc.title, "Moon")
        assert.strictEqual(found.a?.doc.source, "api")
        assert.deepStrictEqual(
          found.a?.chunks.map((c) => c.text),
          ["the moon orbits the earth"]
        )

        const removed = yield* deleteDocuments(["b", "nope"])
        assert.deepStrictEqual(
          [removed.deleted, removed.missing, removed.documents, removed.chunks],
          [["b"], ["nope"], 1, 1]
        )
        assert.strictEqual(Option.getOrThrow(yield* store.manifest).documents, 1)
        assert.notStrictEqual(yield* store.version, v2)
      }).pipe(Effect.provide(layerSqlite(file)))
    }).pipe(Effect.provide(Base))
  )

  it.effect("a long-lived store answers with a replaced document's new text, never the old text it read before", () =>
    Effect.gen(function* () {
      const file = yield* withStore
      yield* Effect.gen(function* () {
        const texts = Effect.map(queryIndex("alpha", 3), (answer) => answer.results.map((r) => r.chunk.text))
        // The only document: replacing it deletes its row and inserts one that may get the same row number.
        yield* putDocuments([doc("a", "alpha beta")], "api")
        assert.deepStrictEqual(yield* texts, ["alpha beta"])
        yield* putDocuments([doc("a", "alpha gamma delta")], "api")
        assert.deepStrictEqual(yield* texts, ["alpha gamma delta"])
        const store = yield* IndexStore
        const found = yield* Effect.scoped(
          Effect.map(store.snapshot, (snapshot) => Option.getOrThrow(snapshot).document("a"))
        )
        assert.deepStrictEqual(
          found?.chunks.map((c) => c.text),
          ["alpha gamma delta"]
        )
      }).pipe(Effect.provide(layerSqlite(file)))
    }).pipe(Effect.provide(Base))
  )

  it.effect("a document with nothing left after cleaning is skipped, and its stored version deleted", () =>
    Effect.gen(function* () {
      const file = yield* withStore
      const run = <A, E, R>(effect: Effect.Effect<A, E, R>) => effect.pipe(Effect.provide(layerSqlite(file)))
      yield* run(putDocuments([doc("a", "alpha"), doc("b", "beta")], "api"))
      const report = yield* run(putDocuments([doc("a", "   ")], "api"))
      assert.deepStrictEqual(
        report.skipped.map((s) => s.reason),
        ['"a" has nothing left after cleaning']
      )
      assert.deepStrictEqual([report.documents, report.chunks], [1, 1])
    }).pipe(Effect.provide(Base))
  )

  it.effect("an index of another model is refused with the query's message", () =>
    Effect.gen(function* () {
      const file = yield* withStore
      yield* putDocuments([doc("a", "alpha")], "api").pipe(Effect.provide(layerSqlite(file)))
      const other = Layer.succeed(
        Embedder,
        Embedder.of({
          model: ModelLabel.make("other-model"),
          dimensions: 16,
          fingerprint: "other-model",
          usage: Effect.succeed({ requests: 0, inputTokens: undefined }),
          embedMany: () => Effect.die("not called")
        })
      )
      const error = yield* Effect.flip(
        putDocuments([doc("b", "beta")], "api").pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), other)))
      )
      assert.strictEqual(error._tag, "ModelMismatch")
    }).pipe(Effect.provide(Base))
  )
})
