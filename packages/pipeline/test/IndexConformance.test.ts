/** One suite, two stores: the in-memory index and the SQLite file must answer identically, to the bit. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Result, Stream } from "effect"
import fc from "fast-check"
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { ChunkerConfig, ChunkSize, Overlap } from "@funcpipe/domain/Config"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { searchPaths } from "../src/programs/Search.ts"
import { DocumentSource } from "../src/services/DocumentSource.ts"
import { Embedder } from "../src/services/Embedder.ts"
import { IndexStore } from "../src/services/IndexStore.ts"

type Corpus = ReadonlyArray<readonly [docId: string, body: string]>

/** A document source whose content the test replaces between runs. */
const makeSource = () => {
  let corpus: Corpus = []
  const layer = Layer.succeed(DocumentSource, DocumentSource.of({
    read: () =>
      Stream.suspend(() =>
        Stream.fromIterable(corpus.map(([docId, body]) =>
          Result.succeed({
            source: `mem/${docId.length % 2}`,
            doc: new RawDoc({ docId: DocId.make(docId), title: "", body, categories: null })
          })
        ))
      )
  }))
  return { layer, set: (next: Corpus) => void (corpus = next) }
}

const chunker = new ChunkerConfig({ chunkSize: ChunkSize.make(3), overlap: Overlap.make(1), tailPolicy: "emit_short" })

/** Everything a query returns that must agree between stores: span, text, score and rank. */
const answer = (text: string, topK: number) =>
  Effect.map(queryIndex(text, topK), ({ results }) =>
    results.map((r) => [r.rank, r.score, r.chunk.docId, r.chunk.start, r.chunk.end, r.chunk.text] as const))

const queries = ["abc", "a b", "zz", "b", "c a"]

/** The answers of every query at top-k 100 and 3. */
const allAnswers = Effect.forEach(queries.flatMap((q) => [[q, 100], [q, 3]] as const), ([q, k]) => answer(q, k))

/** The stores under test, each with a fresh location. */
const backends = {
  memory: () => Effect.succeed(IndexStore.layerMemory),
  sqlite: () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-conformance-" })
      return IndexStore.layerSqlite(`${dir}/nested/index.db`)
    })
} as const

// Equal texts in different documents and at different offsets: every query meets score ties.
const tied: Corpus = [
  ["doc-～", "abc abc zz"],
  ["doc-😀", "abc abc zz"],
  ["b", "c a b abc"],
  ["a", "zz zz b"],
  ["e", "  "]
]

describe.each(Object.entries(backends))("IndexStore conformance: %s", (_, makeStore) => {
  it.effect("answers every query exactly as the in-memory pipeline does, ties included", () =>
    Effect.gen(function*() {
      const source = makeSource()
      source.set(tied)
      const store = yield* makeStore()
      const stored = yield* Effect.gen(function*() {
        yield* indexPaths(["corpus"], { chunker })
        return yield* allAnswers
      }).pipe(Effect.provide(Layer.mergeAll(store, source.layer)))
      const direct = yield* Effect.forEach(queries.flatMap((q) => [[q, 100], [q, 3]] as const), ([q, k]) =>
        Effect.map(searchPaths(["corpus"], q, k, { chunker }), ({ results }) =>
          results.map((r) => [r.rank, r.score, r.chunk.docId, r.chunk.start, r.chunk.end, r.chunk.text] as const))
      ).pipe(Effect.provide(source.layer))
      assert.deepStrictEqual(stored, direct)
      assert.isTrue(stored[0]!.some((row, i) => i > 0 && row[1] === stored[0]![i - 1]![1]), "the corpus has ties")
    }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer))))

  it.effect("after any sequence of add / change / delete runs, equals indexing the final documents from scratch", () =>
    Effect.gen(function*() {
      const ids = fc.constantFrom("a", "b", "c", "doc-～", "doc-😀")
      const body = fc.string({ unit: fc.constantFrom("a", "b", "c", "z", " "), maxLength: 9 })
      const corpus = fc.uniqueArray(fc.tuple(ids, body), { selector: ([id]) => id, maxLength: 5 })
      const sequences = fc.sample(fc.array(corpus, { minLength: 1, maxLength: 4 }), { numRuns: 25, seed: 20261129 })
      for (const sequence of sequences) {
        const source = makeSource()
        const incremental = yield* makeStore()
        const scratch = yield* makeStore()
        const viaRuns = yield* Effect.gen(function*() {
          const reports = []
          for (const state of sequence) {
            source.set(state)
            reports.push(yield* indexPaths(["corpus"], { chunker }))
          }
          const store = yield* IndexStore
          return { answers: yield* allAnswers, docs: yield* store.documents, last: reports.at(-1)! }
        }).pipe(Effect.provide(Layer.mergeAll(incremental, source.layer)))
        const fresh = yield* Effect.gen(function*() {
          const report = yield* indexPaths(["corpus"], { chunker })
          const store = yield* IndexStore
          return { answers: yield* allAnswers, docs: yield* store.documents, report }
        }).pipe(Effect.provide(Layer.mergeAll(scratch, source.layer)))
        assert.deepStrictEqual(viaRuns.answers, fresh.answers, JSON.stringify(sequence))
        const byId = (docs: typeof fresh.docs) => docs.map((d) => [d.docId, d.hash, d.chunks]).sort()
        assert.deepStrictEqual(byId(viaRuns.docs), byId(fresh.docs))
        assert.strictEqual(viaRuns.last.chunks, fresh.report.chunks)
      }
    }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer))))

  it.effect("re-embeds only what changed", () => {
    let embedded: Array<string> = []
    const counting = Layer.effect(Embedder, Effect.gen(function*() {
      const local = yield* Embedder
      return Embedder.of({ ...local, embedMany: (texts) => (embedded.push(...texts), local.embedMany(texts)) })
    })).pipe(Layer.provide(Embedder.layerLocalSha256))
    return Effect.gen(function*() {
      const source = makeSource()
      const store = yield* makeStore()
      yield* Effect.gen(function*() {
        source.set([["a", "aaa"], ["b", "bbb"], ["c", "ccc"]])
        yield* indexPaths(["corpus"], { chunker })
        embedded = []
        source.set([["a", "aaa"], ["b", "bXb"], ["d", "ddd"]])
        const report = yield* indexPaths(["corpus"], { chunker })
        assert.deepStrictEqual(report.plan, { added: ["d"], updated: ["b"], unchanged: ["a"], deleted: ["c"] })
        // Windows of 3 advancing by 2: "bxb" then the tail "b".
        assert.deepStrictEqual(embedded, ["bxb", "b", "ddd", "d"])
        assert.strictEqual(report.chunks, 6)
      }).pipe(Effect.provide(Layer.mergeAll(store, source.layer)))
    }).pipe(Effect.provide(Layer.mergeAll(counting, NodeServices.layer)))
  })
})
