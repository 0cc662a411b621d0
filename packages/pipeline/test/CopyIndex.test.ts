/**
 * Copying an index between stores: a SQLite file into PostgreSQL and back (or into another file where no server is
 * configured) answers every query as the original, to the bit, with every chunking tail policy, and later runs carry on.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ChunkerConfig, ChunkSize, Overlap, type TailPolicy } from "@funcpipe/domain/Config"
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { freshSchema, PG_URL } from "@funcpipe/test-kit/PgFixture"
import { Context, Effect, FileSystem, Layer, Option, Result, Stream } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { CopyTargetNotEmpty, copyIndex } from "../src/programs/CopyIndex.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerPostgres } from "../src/store/postgres/PgIndexStore.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"

// Ties, code points outside the BMP, titles and categories, a document of stop words only.
const corpus: ReadonlyArray<readonly [string, string, string, string | null]> = [
  ["doc-～", "Twins", "abc abc zz 😀 abc", "x;y"],
  ["doc-😀", "Twins", "abc abc zz 😀 abc", null],
  ["b", "", "c a b abc, the moon and the stars", "y"],
  ["a", "Zed", "zz zz b", null],
  ["s", "Of the", "the of and", null]
]

const source = Layer.succeed(
  DocumentSource,
  DocumentSource.of({
    read: () =>
      Stream.fromIterable(
        corpus.map(([docId, title, body, categories]) =>
          Result.succeed({
            source: `mem/${docId.length}`,
            line: 0,
            doc: new RawDoc({ docId: DocId.make(docId), title, body, categories })
          })
        )
      ),
    size: () => Effect.succeed(0)
  })
)

const modes = ["vector", "lexical", "hybrid"] as const
const queries = ["abc", "zz b", "moon twins", "😀 c", "zed"]

/** Every query in every mode, with scores, spans and texts; and the stored documents. */
const answers = Effect.gen(function* () {
  const results = yield* Effect.forEach(queries, (q) =>
    Effect.forEach(modes, (mode) =>
      Effect.map(queryIndex(q, 20, { mode }), ({ results }) =>
        results.map((r) => [
          r.rank,
          r.score,
          r.chunk.docId,
          r.chunk.start,
          r.chunk.end,
          r.chunk.text,
          r.chunk.embedding.vector
        ])
      )
    )
  )
  const store = yield* IndexStore
  const documents = (yield* store.documents)
    .map((d) => [d.docId, d.source, d.title, d.categories, d.hash, d.chunks])
    .sort()
  return { results, documents, manifest: Option.getOrThrow(yield* store.manifest), roots: yield* store.roots }
})

/** The store of `layer`, open while the test runs. */
const open = <E>(layer: Layer.Layer<IndexStore, E>) => Effect.map(Layer.build(layer), (c) => Context.get(c, IndexStore))

describe("funcpipe copy", () => {
  // Live time: the PostgreSQL pool stays open across the test and keeps real idle timers.
  it.live.each<TailPolicy>(["emit_short", "pad", "drop"])(
    "moves an index and back without changing an answer (tail %s)",
    (tail) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-copy-" })
        const chunker = new ChunkerConfig({
          chunkSize: ChunkSize.make(4),
          overlap: Overlap.make(tail === "drop" ? 0 : 1),
          tailPolicy: tail
        })
        const original = layerSqlite(`${dir}/original.db`)
        // Through PostgreSQL where a server is configured, else through a second file: the program is the same.
        const middle = PG_URL === undefined ? layerSqlite(`${dir}/middle.db`) : layerPostgres((yield* freshSchema).url)
        const back = layerSqlite(`${dir}/back.db`)
        yield* indexPaths(["corpus"], { chunker }).pipe(Effect.provide(Layer.mergeAll(original, source)))
        const expected = yield* answers.pipe(Effect.provide(original))

        const a = yield* open(original)
        const b = yield* open(middle)
        const c = yield* open(back)
        const report = yield* copyIndex(a, b)
        assert.deepStrictEqual([report.documents, report.chunks], [5, expected.manifest.chunks])
        yield* copyIndex(b, c)
        assert.deepStrictEqual(yield* answers.pipe(Effect.provide(middle)), expected)
        assert.deepStrictEqual(yield* answers.pipe(Effect.provide(back)), expected)

        // The copy is an index like any other: the next run finds nothing changed.
        const again = yield* indexPaths(["corpus"], { chunker }).pipe(Effect.provide(Layer.mergeAll(middle, source)))
        assert.deepStrictEqual([again.plan.added, again.plan.updated, again.plan.deleted], [[], [], []])
        assert.strictEqual(again.plan.unchanged.length, 5)
      }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer))),
    30_000
  )

  it.effect("refuses to overwrite an index unless asked to, and says there is nothing to copy", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-copy-" })
      const one = layerSqlite(`${dir}/one.db`)
      const two = layerSqlite(`${dir}/two.db`)
      const missing = yield* Effect.flip(copyIndex(yield* open(one), yield* open(two)))
      assert.strictEqual(missing._tag, "IndexMissing")
      yield* indexPaths(["corpus"]).pipe(Effect.provide(Layer.mergeAll(one, source)))
      yield* indexPaths(["corpus"]).pipe(Effect.provide(Layer.mergeAll(two, source)))
      const refused = yield* Effect.flip(copyIndex(yield* open(one), yield* open(two)))
      assert.instanceOf(refused, CopyTargetNotEmpty)
      assert.include(refused.message, "--replace")
      const report = yield* copyIndex(yield* open(one), yield* open(two), { replace: true })
      assert.strictEqual(report.documents, 5)
    }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)))
  )
})
