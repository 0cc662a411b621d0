/** The SQLite index file: damaged and foreign files, read isolation, and the index and query workflows' errors. */

import { existsSync, readdirSync, readlinkSync } from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Bm25Params, ChunkerConfig, ChunkSize, Overlap } from "@funcpipe/domain/Config"
import { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { Deferred, Effect, Fiber, FileSystem, Layer, Option, Result, Tracer } from "effect"
import { embedText } from "../src/analysis/Embed.ts"
import { PackWriter } from "../src/index/BodyPack.ts"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex, querySnapshot } from "../src/programs/QueryIndex.ts"
import { cosineSimilarity } from "../src/search/Cosine.ts"
import { scoreQuery, topChunksOf } from "../src/search/Engine.ts"
import { IndexStore, type Snapshot } from "../src/store/IndexStore.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"
import { bodiesSource } from "./Sources.ts"
import { testEmbedder } from "./TestModels.ts"

const docs = bodiesSource

const Base = Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)

/** A temporary index file holding two documents. */
const builtIndex = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-store-" })
  const file = `${dir}/index.db`
  yield* indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), docs("alpha beta", "gamma"))))
  return file
})

const queryFile = (file: string, text = "gamma") =>
  queryIndex(text, 5, { mode: "vector" }).pipe(Effect.provide(layerSqlite(file)))

/** Runs SQL against the file behind FuncPipe's back. */
const tamper = (file: string, sql: string) =>
  Effect.sync(() => {
    const db = new DatabaseSync(file)
    db.exec(sql)
    db.close()
  })

describe("the SQLite index file", () => {
  it.effect("answers after reopening, and a missing file is an index not built yet", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      const { results } = yield* queryFile(file)
      assert.strictEqual(results[0]!.chunk.docId, "d1")
      const error = yield* Effect.flip(queryFile(`${file}.absent`))
      assert.strictEqual(error._tag, "IndexMissing")
      const fs = yield* FileSystem.FileSystem
      assert.isFalse(yield* fs.exists(`${file}.absent`), "a query creates no file")
    }).pipe(Effect.provide(Base))
  )

  it.effect(
    "reads the segments' order from an index of its own, which a file made without one gets at its next write",
    () =>
      Effect.gen(function* () {
        const file = yield* builtIndex
        const plan = () => {
          const db = new DatabaseSync(file, { readOnly: true })
          const detail = db
            .prepare(
              "EXPLAIN QUERY PLAN SELECT id, base, count, live, live_length, version, block_rows FROM segments ORDER BY base"
            )
            .all()
            .map((row) => String((row as { detail: unknown }).detail))
            .join("; ")
          db.close()
          return detail
        }
        assert.include(plan(), "COVERING INDEX segments_order")
        yield* tamper(file, "DROP INDEX segments_order")
        assert.notInclude(plan(), "segments_order")
        const before = yield* queryFile(file)
        yield* indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), docs("alpha beta", "gamma"))))
        assert.include(plan(), "COVERING INDEX segments_order")
        assert.deepStrictEqual(yield* queryFile(file), before)
      }).pipe(Effect.provide(Base))
  )

  it.effect("writes a new file once, through a rollback journal, and turns the write-ahead log on after", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-store-" })
      const file = `${dir}/index.db`
      /** Which of the file's journals exist in the middle of a transaction. */
      const journalsDuringAWrite = IndexStore.use((store) =>
        store.transaction(() => Effect.sync(() => [existsSync(`${file}-journal`), existsSync(`${file}-wal`)]))
      ).pipe(Effect.provide(layerSqlite(file)))
      assert.deepStrictEqual(yield* journalsDuringAWrite, [true, false], "the new file: a rollback journal")
      const header = yield* fs.readFile(file)
      assert.deepStrictEqual([header[18], header[19]], [2, 2], "the write-ahead log is on once it has committed")
      assert.isFalse(existsSync(`${file}-journal`))
      assert.deepStrictEqual(yield* journalsDuringAWrite, [false, true], "a file that exists: the write-ahead log")
      yield* indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), docs("alpha beta", "gamma"))))
      assert.strictEqual((yield* queryFile(file)).results[0]!.chunk.docId, "d1")
    }).pipe(Effect.provide(Base))
  )

  it.effect("rejects a file that is not a database", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      const fs = yield* FileSystem.FileSystem
      yield* fs.writeFileString(file, "these are notes, not an index\n".repeat(200))
      yield* fs.remove(`${file}-wal`, { force: true })
      const error = yield* Effect.flip(queryFile(file))
      assert.strictEqual(error._tag, "NotAnIndex")
    }).pipe(Effect.provide(Base))
  )

  it.effect("rejects a truncated file with a clear error", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      yield* tamper(file, "PRAGMA wal_checkpoint(TRUNCATE)")
      const fs = yield* FileSystem.FileSystem
      const bytes = yield* fs.readFile(file)
      yield* fs.writeFile(file, bytes.slice(0, Math.floor(bytes.length / 2)))
      const error = yield* Effect.flip(queryFile(file))
      assert.include(["IndexCorrupt", "NotAnIndex"], error._tag)
      assert.match(
        error.message,
        /is damaged .*; rebuild it with: funcpipe index <paths...> --rebuild|is not a FuncPipe index/
      )
    }).pipe(Effect.provide(Base))
  )

  it.effect("rejects another program's SQLite database", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-store-" })
      yield* tamper(`${dir}/other.db`, "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hi')")
      const error = yield* Effect.flip(queryFile(`${dir}/other.db`))
      assert.strictEqual(error._tag, "NotAnIndex")
      const writing = yield* Effect.flip(
        indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerSqlite(`${dir}/other.db`), docs("a"))))
      )
      assert.strictEqual(writing._tag, "NotAnIndex")
    }).pipe(Effect.provide(Base))
  )

  it.effect("keeps what SQLite or the system reported as the error's cause, out of its message", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-store-" })
      yield* fs.writeFileString(`${dir}/notes.db`, "these are notes, not an index\n".repeat(200))
      const read = yield* Effect.flip(
        IndexStore.use((s) => s.manifest).pipe(Effect.provide(layerSqlite(`${dir}/notes.db`)))
      )
      assert.strictEqual(read._tag, "NotAnIndex")
      assert.strictEqual((read.cause as { readonly errcode?: unknown }).errcode, 26, "SQLITE_NOTADB")
      assert.strictEqual(
        read.message,
        `${dir}/notes.db is not a FuncPipe index; pass another --index path or move the file away`
      )
      yield* fs.writeFileString(`${dir}/in-the-way`, "")
      const written = yield* Effect.flip(
        IndexStore.use((s) => s.transaction(() => Effect.void)).pipe(
          Effect.provide(layerSqlite(`${dir}/in-the-way/index.db`))
        )
      )
      assert.strictEqual(written._tag, "StoreFailure")
      assert.include(written.message, "cannot create its folder")
      assert.typeOf((written.cause as { readonly code?: unknown }).code, "string", "the system's error code")
    }).pipe(Effect.provide(Base))
  )

  it.effect("rejects an index from a newer format version", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      yield* tamper(file, "PRAGMA user_version = 9")
      const error = yield* Effect.flip(queryFile(file))
      assert.strictEqual(error._tag, "IndexTooNew")
      assert.include(error.message, "made by a newer FuncPipe")
      // One name and one number for a user: the format `status` shows, never the file's own layout number.
      assert.notMatch(error.message, /layout|version/)
    }).pipe(Effect.provide(Base))
  )

  it.effect.each([
    // `||` makes text of blobs: CAST gives the bytes back as a blob, as FuncPipe stores them.
    [
      "a vector that is not finite",
      "UPDATE vectors SET data = CAST(X'000000000000F87F' || zeroblob(length(data) * 4 - 8) AS BLOB)",
      "a vector that is not finite"
    ],
    [
      "a vector too long to score",
      "UPDATE vectors SET data = CAST(X'9C7500883CE4377E' || zeroblob(length(data) * 4 - 8) AS BLOB)",
      "too long to score"
    ],
    ["a vector block of the wrong length", "UPDATE vectors SET data = X'00'", "a vector block of the wrong size"],
    ["chunk lengths of the wrong size", "UPDATE segments SET lengths = X'0000'", "chunk lengths of the wrong size"],
    ["a body pack that does not decompress", "UPDATE packs SET data = X'FFFF'", "does not decompress"],
    [
      "a body pack whose checksum fails",
      "UPDATE packs SET data = CAST(substr(data, 1, length(data) - 4) || X'00000000' AS BLOB)",
      "does not decompress"
    ],
    ["a body range past its pack", "UPDATE documents SET body_end = body_end + 100000", "not where its row says"],
    ["postings that do not decode", "UPDATE postings SET data = X'FF'", "postings of"],
    ["postings pointing past the segment", "UPDATE postings SET data = X'6401'", "postings of"],
    [
      "a live count that disagrees with the deleted chunks",
      "UPDATE segments SET live = live - 1, deleted = zeroblob(1)",
      "live chunks"
    ],
    ["chunk spans cut short", "UPDATE documents SET spans = substr(spans, 1, 4)", "missing or unreadable"],
    ["a chunk whose document row is gone", "DELETE FROM documents WHERE doc_id = 'd1'", "missing or unreadable"],
    // Each document has one chunk: stored as start 10, end 5.
    ["a span that ends before it starts", "UPDATE documents SET spans = x'0a00000005000000'", "is before start"],
    ["an empty doc id", "UPDATE documents SET doc_id = '' WHERE doc_id = 'd0'", "must not be empty"],
    ["a manifest that is not JSON", "UPDATE meta SET value = '{' WHERE key = 'manifest'", "manifest"]
  ])("reports %s as IndexCorrupt instead of answering", ([, sql, detail]) =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      yield* tamper(file, `PRAGMA foreign_keys = OFF; ${sql}`)
      const error = yield* Effect.flip(
        Effect.gen(function* () {
          yield* queryFile(file)
          yield* queryIndex("gamma alpha", 5, { mode: "lexical" })
          const store = yield* IndexStore
          yield* store.documents
        }).pipe(Effect.provide(layerSqlite(file)))
      )
      assert.include(error.message, detail!)
      assert.strictEqual(error._tag, "IndexCorrupt")
    }).pipe(Effect.provide(Base))
  )

  it.effect("lets a reader see the old index while a writer's transaction is open, and the new one after", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      const writing = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const writer = yield* Effect.forkChild(
        Effect.gen(function* () {
          const store = yield* IndexStore
          yield* store.transaction((w) =>
            Effect.gen(function* () {
              yield* w.deleteDoc("d1")
              yield* Deferred.succeed(writing, undefined)
              yield* Deferred.await(release)
            })
          )
        }).pipe(Effect.provide(layerSqlite(file)))
      )
      yield* Deferred.await(writing)
      const during = yield* queryFile(file)
      assert.deepStrictEqual(
        during.results.map((r) => r.chunk.docId),
        ["d1", "d0"]
      )
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(writer)
      const after = yield* queryFile(file)
      assert.deepStrictEqual(
        after.results.map((r) => r.chunk.docId),
        ["d0"]
      )
    }).pipe(Effect.provide(Base))
  )

  it.effect(
    "fails a second writer with IndexBusy while the first one writes",
    () =>
      Effect.gen(function* () {
        const file = yield* builtIndex
        const writing = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const first = yield* Effect.forkChild(
          IndexStore.use((store) =>
            store.transaction(() => Effect.andThen(Deferred.succeed(writing, undefined), Deferred.await(release)))
          ).pipe(Effect.provide(layerSqlite(file)))
        )
        yield* Deferred.await(writing)
        const error = yield* Effect.flip(
          indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), docs("other"))))
        )
        assert.strictEqual(error._tag, "IndexBusy")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(first)
      }).pipe(Effect.provide(Base)),
    20_000
  )

  it.effect("keeps the old index when a run fails halfway", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      const before = yield* queryFile(file)
      let calls = 0
      const failing = Layer.succeed(
        Embedder,
        Embedder.of({
          model: ModelLabel.make("local-sha256"),
          dimensions: 16,
          fingerprint: "test",
          usage: Effect.succeed({ requests: 0, inputTokens: undefined }),
          embedMany: (texts) =>
            ++calls === 2 ? Effect.die("the model went away") : Effect.succeed(texts.map(embedText))
        })
      )
      const exit = yield* Effect.exit(
        indexPaths(["x"], { batchSize: 1 }).pipe(
          Effect.provide(Layer.mergeAll(layerSqlite(file), docs("new one", "new two", "new three"), failing))
        )
      )
      assert.isTrue(exit._tag === "Failure")
      const after = yield* queryFile(file)
      assert.deepStrictEqual(after, before)
    }).pipe(Effect.provide(Base))
  )
})

describe("stored vectors", () => {
  /** A model whose components are `narrow` (float32) or not: a vector from the text's characters. */
  const model = (narrow: boolean) =>
    testEmbedder(narrow ? "test-f32" : "test-f64", 3, (text) =>
      [text.length / 7, (text.charCodeAt(0) % 13) / 3, 0.1 * (text.charCodeAt(1) || 1)].map((x) =>
        narrow ? Math.fround(x) : x
      )
    )

  it.effect.each([
    ["local-sha256", "float32", 2, undefined, undefined],
    ["a float32 model", "float32", 4, model(true), undefined],
    ["a float64 model", "exact", 8, model(false), "exact"],
    ["a float64 model", "float32", 4, model(false), undefined]
  ] as const)(
    "store %s's vectors (storage %s) in %i bytes a component, and answer the same from a first and a later scan",
    ([, , bytes, embedder, storage]) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-vectors-" })
        const file = `${dir}/index.db`
        const modelLayer = embedder === undefined ? Layer.empty : Layer.succeed(Embedder, embedder)
        const texts = ["alpha beta", "gamma", "delta epsilon zeta", "eta"]
        // Vectors finer than float32 are rounded to it unless the index keeps them exactly.
        const rounded = storage === undefined && bytes === 4 && embedder !== undefined && embedder.model === "test-f64"
        const asStored = (vector: ReadonlyArray<number>) => (rounded ? vector.map(Math.fround) : vector)
        yield* indexPaths(["x"], storage === undefined ? {} : { vectorStorage: storage }).pipe(
          Effect.provide(Layer.mergeAll(layerSqlite(file), docs(...texts), modelLayer))
        )
        const db = new DatabaseSync(file, { readOnly: true })
        const dimensions = embedder?.dimensions ?? 16
        const stored = (db.prepare("SELECT sum(length(data)) AS n FROM vectors").get() as { n: number }).n
        db.close()
        // One chunk per text.
        assert.strictEqual(stored, texts.length * dimensions * bytes)
        const [first, later] = yield* Effect.gen(function* () {
          const ask = Effect.map(queryIndex("gamma", 4, { mode: "vector" }), (a) =>
            a.results.map((r) => [r.score, r.chunk.docId, r.chunk.text, r.chunk.embedding.vector] as const)
          )
          // A result's vector as its row's bytes (no block kept yet), then as kept with its row: the same bits.
          const lexical = Effect.map(queryIndex("gamma", 4, { mode: "lexical" }), (a) =>
            a.results.map((r) => r.chunk.embedding.vector)
          )
          const [once, twice] = [yield* lexical, yield* lexical]
          assert.deepStrictEqual(twice, once)
          const expected = yield* (
            embedder ?? Embedder.of({ ...model(false), embedMany: (t) => Effect.succeed(t.map(embedText)) })
          ).embedMany(["gamma"])
          assert.deepStrictEqual(once[0], asStored(expected[0]!.vector))
          return [yield* ask, yield* ask]
        }).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), modelLayer)))
        assert.deepStrictEqual(later, first)
        assert.strictEqual(first!.length, texts.length)
        const embed = embedder ?? Embedder.of({ ...model(false), embedMany: (t) => Effect.succeed(t.map(embedText)) })
        const [query] = yield* embed.embedMany(["gamma"])
        for (const [score, , text, vector] of first!) {
          const [stored] = yield* embed.embedMany([text])
          // The vector comes back with the bits stored (the model's, or the nearest float32), and the score is the
          // reference cosine of the query with it.
          assert.deepStrictEqual(vector, asStored(stored!.vector))
          if (rounded) assert.notDeepEqual(vector, stored!.vector)
          assert.strictEqual(score, Result.getOrThrow(cosineSimilarity(query!.vector, asStored(stored!.vector))))
        }
      }).pipe(Effect.provide(Base))
  )
  it.effect("keep an index's vector storage across runs and rebuilds, and refuse another without --rebuild", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-vectors-" })
      const file = `${dir}/index.db`
      const layers = (...texts: Array<string>) =>
        Layer.mergeAll(layerSqlite(file), docs(...texts), Layer.succeed(Embedder, model(false)))
      const storage = Effect.map(
        IndexStore.use((store) => store.manifest),
        (manifest) => Option.getOrThrow(manifest).vectorStorage
      ).pipe(Effect.provide(layerSqlite(file)))
      const bytes = Effect.sync(() => {
        const db = new DatabaseSync(file, { readOnly: true })
        const n = (db.prepare("SELECT sum(length(data)) AS n FROM vectors").get() as { n: number }).n
        db.close()
        return n
      })
      yield* indexPaths(["x"], { vectorStorage: "exact" }).pipe(Effect.provide(layers("alpha", "beta")))
      assert.strictEqual(yield* storage, "exact")
      // A later run and a rebuild that name no storage keep the index's.
      yield* indexPaths(["x"]).pipe(Effect.provide(layers("alpha", "beta", "gamma")))
      yield* indexPaths(["x"], { rebuild: true }).pipe(Effect.provide(layers("alpha", "beta", "gamma")))
      assert.strictEqual(yield* storage, "exact")
      assert.strictEqual(yield* bytes, 3 * 3 * 8)
      // Another storage is refused, and the index is left as it was.
      const ask = queryFile(file).pipe(Effect.provideService(Embedder, model(false)))
      const before = yield* ask
      const error = yield* Effect.flip(
        indexPaths(["x"], { vectorStorage: "float32" }).pipe(Effect.provide(layers("alpha", "beta", "gamma", "delta")))
      )
      assert.strictEqual(error._tag, "SettingsChanged")
      assert.include(error.message, "vector storage exact → float32")
      assert.deepStrictEqual(yield* ask, before)
      // With --rebuild it is stored again, in half the bytes.
      yield* indexPaths(["x"], { vectorStorage: "float32", rebuild: true }).pipe(
        Effect.provide(layers("alpha", "beta", "gamma"))
      )
      assert.strictEqual(yield* storage, "float32")
      assert.strictEqual(yield* bytes, 3 * 3 * 4)
      // An index made before the setting (its manifest names none) stores exactly, goes on naming none through
      // ordinary runs, and is moved to float32 by a rebuild.
      yield* indexPaths(["x"], { vectorStorage: "exact", rebuild: true }).pipe(Effect.provide(layers("alpha", "beta")))
      const db = new DatabaseSync(file)
      const manifest = JSON.parse(
        (db.prepare("SELECT value FROM meta WHERE key = 'manifest'").get() as { value: string }).value
      )
      delete manifest.vectorStorage
      db.prepare("UPDATE meta SET value = ? WHERE key = 'manifest'").run(JSON.stringify(manifest))
      db.close()
      yield* indexPaths(["x"]).pipe(Effect.provide(layers("alpha", "beta", "gamma")))
      assert.isUndefined(yield* storage)
      assert.strictEqual(yield* bytes, 3 * 3 * 8)
      yield* indexPaths(["x"], { rebuild: true }).pipe(Effect.provide(layers("alpha", "beta", "gamma")))
      assert.strictEqual(yield* storage, "float32")
      assert.strictEqual(yield* bytes, 3 * 3 * 4)
    }).pipe(Effect.provide(Base))
  )
})

describe("damaged float32 vectors", () => {
  it.effect("fail a vector query with IndexCorrupt, on a first scan (read as stored) and a later one (kept)", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-vectors-" })
      const file = `${dir}/index.db`
      const narrow = testEmbedder("test-f32", 3, (text) => [
        Math.fround(text.length / 7),
        0.5,
        Math.fround(0.1 * text.charCodeAt(0))
      ])
      const model = Layer.succeed(Embedder, narrow)
      yield* indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), docs("alpha", "gamma"), model)))
      // A float32 NaN as the first component of every block.
      yield* tamper(file, "UPDATE vectors SET data = CAST(X'0000C07F' || substr(data, 5) AS BLOB)")
      const errors = yield* Effect.gen(function* () {
        const ask = Effect.flip(queryIndex("gamma", 2, { mode: "vector" }))
        return [yield* ask, yield* ask] as const
      }).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), model)))
      for (const error of errors) {
        assert.strictEqual(error._tag, "IndexCorrupt")
        assert.include(error.message, "a vector that is not finite")
      }
    }).pipe(Effect.provide(Base))
  )
})

describe("index and query workflows", () => {
  it.effect("refuses a changed chunker without --rebuild, and rebuilds with it", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      const chunker = new ChunkerConfig({ chunkSize: ChunkSize.make(4), overlap: Overlap.make(0), tailPolicy: "drop" })
      const run = (rebuild: boolean) =>
        indexPaths(["x"], { chunker, rebuild }).pipe(
          Effect.provide(Layer.mergeAll(layerSqlite(file), docs("alpha beta", "gamma")))
        )
      const error = yield* Effect.flip(run(false))
      assert.strictEqual(error._tag, "SettingsChanged")
      assert.include(error.message, "--rebuild")
      const report = yield* run(true)
      assert.deepStrictEqual([report.rebuilt, report.plan.added.length, report.chunks], [true, 2, 3])
      const manifest = yield* IndexStore.use((s) => s.manifest).pipe(Effect.provide(layerSqlite(file)))
      assert.strictEqual(Option.getOrThrow(manifest).chunker.chunkSize, 4)
    }).pipe(Effect.provide(Base))
  )

  it.effect("writes nothing on a dry run", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      const report = yield* indexPaths(["x"], { dryRun: true }).pipe(
        Effect.provide(Layer.mergeAll(layerSqlite(file), docs("other")))
      )
      assert.deepStrictEqual(report.plan, { added: [], updated: ["d0"], unchanged: [], deleted: ["d1"] })
      assert.strictEqual((yield* queryFile(file)).results.length, 2)
    }).pipe(Effect.provide(Base))
  )

  it.effect("fails a query against an index of another model with ModelMismatch, before scoring", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      let embedded = 0
      const other = Layer.succeed(
        Embedder,
        Embedder.of({
          model: ModelLabel.make("other-model"),
          dimensions: 16,
          fingerprint: "other",
          usage: Effect.succeed({ requests: 0, inputTokens: undefined }),
          embedMany: (texts) =>
            Effect.sync(() => {
              embedded += texts.length
              return texts.map(
                (t) => new Embedding({ vector: embedText(t).vector, model: ModelLabel.make("other-model") })
              )
            })
        })
      )
      const error = yield* Effect.flip(queryFile(file).pipe(Effect.provide(other)))
      assert.strictEqual(error._tag, "ModelMismatch")
      assert.strictEqual(embedded, 0)
    }).pipe(Effect.provide(Base))
  )

  it.effect("cleans the query with the index's own rules", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      const { query, results } = yield* queryFile(file, "   GAMMA ")
      assert.strictEqual(query.text, "gamma")
      assert.closeTo(results[0]!.score, 1, 1e-12)
    }).pipe(Effect.provide(Base))
  )
})

describe("an index written by an older FuncPipe", () => {
  /** A file laid out as format version 1 (one row per chunk and per posting), holding one document. */
  const versionOne = Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-store-" })
    const file = `${dir}/index.db`
    const manifest = {
      formatVersion: 1,
      model: "local-sha256",
      dimensions: 16,
      cleaner: { rules: ["strip", "lower", "collapse_ws"] },
      chunker: { chunkSize: 512, overlap: 0, tailPolicy: "emit_short" },
      analyzer: { stopWords: "english", stemmer: "porter" },
      createdAt: 0,
      updatedAt: 0,
      documents: 1,
      chunks: 1
    }
    yield* tamper(
      file,
      `
      PRAGMA application_id = ${0x46504950};
      PRAGMA user_version = 1;
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE documents (doc_id TEXT PRIMARY KEY, source TEXT, title TEXT, categories TEXT, hash TEXT, chunks INTEGER);
      CREATE TABLE chunks (id INTEGER PRIMARY KEY, doc_id TEXT, start INTEGER, "end" INTEGER, text TEXT, vector BLOB, length INTEGER);
      CREATE TABLE postings (term TEXT, chunk INTEGER, tf INTEGER);
      INSERT INTO meta VALUES ('manifest', '${JSON.stringify(manifest)}');
    `
    )
    return file
  })

  it.effect(
    "is refused with the way on: queries name --rebuild, an update is a planned change, --rebuild converts it",
    () =>
      Effect.gen(function* () {
        const file = yield* versionOne
        const query = yield* Effect.flip(queryFile(file))
        assert.strictEqual(query._tag, "IndexTooOld")
        assert.include(query.message, "--rebuild")
        const update = (rebuild: boolean) =>
          indexPaths(["x"], { rebuild }).pipe(
            Effect.provide(Layer.mergeAll(layerSqlite(file), docs("alpha beta", "gamma")))
          )
        const planned = yield* indexPaths(["x"], { rebuild: true, dryRun: true }).pipe(
          Effect.provide(Layer.mergeAll(layerSqlite(file), docs("alpha beta", "gamma")))
        )
        assert.deepStrictEqual(planned.plan.added, ["d0", "d1"], "a dry run of the rebuild plans it")
        const refused = yield* Effect.flip(update(false))
        assert.strictEqual(refused._tag, "SettingsChanged")
        assert.include(refused.message, "format version 1, older than this FuncPipe")
        yield* update(true)
        const { results } = yield* queryFile(file)
        assert.strictEqual(results[0]!.chunk.docId, "d1")
      }).pipe(Effect.provide(Base))
  )
})

describe("segment merges", () => {
  const segmentStats = (file: string) =>
    Effect.sync(() => {
      const db = new DatabaseSync(file, { readOnly: true })
      const rows = db.prepare("SELECT count, live FROM segments").all() as Array<{ count: number; live: number }>
      db.close()
      return rows
    })

  /** Body packs no document points into, and documents whose pack is missing. */
  const packStats = (file: string) =>
    Effect.sync(() => {
      const db = new DatabaseSync(file, { readOnly: true })
      const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n
      const stats = {
        packs: count("SELECT count(*) AS n FROM packs"),
        orphans: count(
          "SELECT count(*) AS n FROM packs WHERE id NOT IN (SELECT pack FROM documents WHERE pack IS NOT NULL)"
        ),
        missing: count("SELECT count(*) AS n FROM documents WHERE pack NOT IN (SELECT id FROM packs)")
      }
      db.close()
      return stats
    })

  it.effect("drop a body pack once no document is in it, and keep one a document still is in", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-packs-" })
      const file = `${dir}/index.db`
      const run = (...bodies: ReadonlyArray<string>) =>
        indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), docs(...bodies))))
      yield* run("alpha one", "beta two")
      assert.deepStrictEqual(yield* packStats(file), { packs: 1, orphans: 0, missing: 0 })
      // d1 changes: its new version goes to a new pack, and d0 keeps the first one.
      yield* run("alpha one", "beta changed")
      assert.deepStrictEqual(yield* packStats(file), { packs: 2, orphans: 0, missing: 0 })
      // Both change: neither old pack holds a document any more.
      yield* run("alpha again", "beta again")
      assert.deepStrictEqual(yield* packStats(file), { packs: 1, orphans: 0, missing: 0 })
      const answer = yield* queryIndex("beta again", 1, { mode: "lexical" }).pipe(Effect.provide(layerSqlite(file)))
      assert.strictEqual(answer.results[0]?.chunk.text, "beta again")
    }).pipe(Effect.provide(Base))
  )

  it.effect(
    "keep an often-updated index to a few segments without dead chunks, answering as a fresh build",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-merge-" })
        const bodies = (run: number) =>
          Array.from({ length: 12 }, (_, i) => `doc ${i} ${i === run % 12 ? `edit ${run}` : "stable"} words`)
        const answers = (file: string, run: number) =>
          indexPaths(["x"]).pipe(
            Effect.andThen(
              Effect.forEach(["stable words", `edit ${run}`, "doc 3"], (q) =>
                Effect.map(queryIndex(q, 20, { mode: "lexical" }), (a) =>
                  a.results.map((r) => [r.score, r.chunk.docId, r.chunk.text])
                )
              )
            ),
            Effect.provide(Layer.mergeAll(layerSqlite(file), docs(...bodies(run))))
          )
        let maxSegments = 0
        for (let run = 0; run < 10; run++) {
          const incremental = yield* answers(`${dir}/index.db`, run)
          const fresh = yield* answers(`${dir}/fresh-${run}.db`, run)
          assert.deepStrictEqual(incremental, fresh, `run ${run}`)
          const stats = yield* segmentStats(`${dir}/index.db`)
          maxSegments = Math.max(maxSegments, stats.length)
          for (const { count, live } of stats)
            assert.isAtLeast(live * 2, count, "no segment stays more than half deleted")
        }
        assert.isAtMost(maxSegments, 5, "small segments are merged")
      }).pipe(Effect.provide(Base)),
    60_000
  )
})

describe("a long-lived reader", () => {
  it.effect("sees a rebuild made by another writer, not what it cached before", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      const answer = (q: string) =>
        Effect.map(queryIndex(q, 5, { mode: "lexical" }), (a) => a.results.map((r) => [r.chunk.docId, r.chunk.text]))
      // One store layer for the whole test, as a server would hold it; the writer below uses its own.
      yield* Effect.gen(function* () {
        assert.deepStrictEqual(yield* answer("gamma"), [["d1", "gamma"]])
        yield* indexPaths(["x"], { rebuild: true }).pipe(
          Effect.provide(Layer.mergeAll(layerSqlite(file), docs("delta gamma", "epsilon")))
        )
        assert.deepStrictEqual(yield* answer("gamma"), [["d0", "delta gamma"]])
        assert.deepStrictEqual(yield* answer("epsilon"), [["d1", "epsilon"]])
      }).pipe(Effect.provide(layerSqlite(file)))
    }).pipe(Effect.provide(Base))
  )
})

describe("readers and writers over time", () => {
  const lexical = (snapshot: Snapshot, q: string) =>
    topChunksOf(
      snapshot,
      scoreQuery(snapshot, { terms: [q], vector: undefined }, "lexical", Bm25Params.default),
      5
    ).map((top) => snapshot.keyOf(top.position).docId)

  it.effect("a snapshot kept open across a rebuild does not spoil what newer snapshots read", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex // d0 "alpha beta", d1 "gamma"
      yield* Effect.scoped(
        Effect.gen(function* () {
          const store = yield* IndexStore
          const old = Option.getOrThrow(yield* store.snapshot)
          yield* indexPaths(["x"], { rebuild: true }).pipe(
            Effect.provide(Layer.mergeAll(layerSqlite(file), docs("gamma gamma delta", "alpha")))
          )
          const fresh = Option.getOrThrow(yield* store.snapshot)
          assert.deepStrictEqual(lexical(old, "alpha"), ["d0"])
          assert.deepStrictEqual(lexical(fresh, "alpha"), ["d1"])
        })
      ).pipe(Effect.provide(layerSqlite(file)))
    }).pipe(Effect.provide(Base))
  )

  it.effect("a reader sees an index file deleted and made again", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      const fs = yield* FileSystem.FileSystem
      const answer = Effect.map(queryIndex("gamma", 5, { mode: "lexical" }), (a) => a.results.map((r) => r.chunk.text))
      yield* Effect.gen(function* () {
        assert.deepStrictEqual(yield* answer, ["gamma"])
        for (const suffix of ["", "-wal", "-shm"]) yield* fs.remove(`${file}${suffix}`, { force: true })
        yield* indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), docs("new gamma"))))
        assert.deepStrictEqual(yield* answer, ["new gamma"])
      }).pipe(Effect.provide(layerSqlite(file)))
    }).pipe(Effect.provide(Base))
  )

  it.effect("a dry run over a file left without tables sees an empty index", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-store-" })
      yield* tamper(`${dir}/index.db`, "PRAGMA user_version = 0")
      const report = yield* indexPaths(["x"], { dryRun: true }).pipe(
        Effect.provide(Layer.mergeAll(layerSqlite(`${dir}/index.db`), docs("a", "b")))
      )
      assert.deepStrictEqual(report.plan, { added: ["d0", "d1"], updated: [], unchanged: [], deleted: [] })
    }).pipe(Effect.provide(Base))
  )

  it.effect("a document written twice in one transaction of a new index keeps the second version", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-store-" })
      const file = `${dir}/index.db`
      const built = yield* builtIndex
      const manifest = Option.getOrThrow(
        yield* IndexStore.use((s) => s.manifest).pipe(Effect.provide(layerSqlite(built)))
      )
      const doc = (body: string) => ({
        docId: "d",
        source: "s",
        title: "",
        categories: null,
        hash: "0".repeat(64),
        body: new PackWriter().pack([body])[0]!
      })
      const chunk = (body: string) => [{ start: 0, end: body.length, from: 0, to: 1 }]
      yield* Effect.gen(function* () {
        const store = yield* IndexStore
        yield* store.transaction((writer) =>
          Effect.gen(function* () {
            yield* writer.putDoc(
              doc("first"),
              chunk("first"),
              { vocabulary: ["first"], ids: Uint32Array.of(0) },
              Float64Array.from(embedText("first").vector)
            )
            yield* writer.putDoc(
              doc("second"),
              chunk("second"),
              { vocabulary: ["second"], ids: Uint32Array.of(0) },
              Float64Array.from(embedText("second").vector)
            )
            yield* writer.putManifest(manifest)
          })
        )
        const docsNow = yield* store.documents
        assert.deepStrictEqual(
          docsNow.map((d) => [d.docId, d.chunks]),
          [["d", 1]]
        )
        assert.deepStrictEqual(
          (yield* queryIndex("second", 5, { mode: "lexical" })).results.map((r) => r.chunk.text),
          ["second"]
        )
      }).pipe(Effect.provide(layerSqlite(file)))
    }).pipe(Effect.provide(Base))
  )
})

describe("the store's resources", () => {
  /** How many of this process's open files are the index at `file`, its log or its shared memory (Linux). */
  const openFiles = (file: string) =>
    Effect.sync(
      () =>
        readdirSync("/proc/self/fd").filter((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`).startsWith(file)
          } catch {
            return false // closed meanwhile (the descriptor readdirSync itself used)
          }
        }).length
    )

  it.effect.skipIf(!existsSync("/proc/self/fd"))(
    "closes a failed transaction's connection at once, and every other one with the layer",
    () =>
      Effect.gen(function* () {
        const file = yield* builtIndex
        yield* Effect.gen(function* () {
          const store = yield* IndexStore
          yield* queryIndex("gamma", 5, { mode: "vector" })
          yield* store.version
          const stop = Effect.flip(store.transaction(() => Effect.fail("stopped")))
          assert.strictEqual(yield* stop, "stopped")
          // SQLite keeps a closed connection's descriptor for its next one while others in the process hold locks on
          // the file, so the count is taken once a transaction has come and gone.
          const open = yield* openFiles(file)
          assert.isAbove(open, 0, "a pooled reader and the version watcher stay open while the layer lives")
          for (let i = 0; i < 3; i++) yield* stop
          yield* store.checkpoint
          assert.strictEqual(yield* openFiles(file), open, "failed transactions and checkpoints leave nothing open")
        }).pipe(Effect.provide(layerSqlite(file)))
        assert.strictEqual(yield* openFiles(file), 0)
      }).pipe(Effect.provide(Base))
  )

  it.effect("names its operations in traces", () =>
    Effect.gen(function* () {
      const names = new Set<string>()
      const recording = Tracer.make({
        span: (options) => {
          names.add(options.name)
          return Tracer.nativeTracer.span(options)
        }
      })
      const file = yield* builtIndex
      yield* Effect.withTracer(
        Effect.gen(function* () {
          yield* indexPaths(["x"]).pipe(Effect.provide(docs("alpha", "beta gamma")))
          yield* queryIndex("gamma", 5, { mode: "lexical" })
        }).pipe(Effect.provide(layerSqlite(file))),
        recording
      )
      for (const name of [
        "IndexStore.transaction",
        "IndexWriter.storedDocs",
        "IndexWriter.putManifest",
        "IndexStore.snapshot"
      ]) {
        assert.isTrue(names.has(name), name)
      }
    }).pipe(Effect.provide(Base))
  )
})

describe("queries from one snapshot", () => {
  it.effect("answer from the current state after each run, though results of an unchanged index are reused", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      const texts = (q: string) =>
        Effect.map(queryIndex(q, 5, { mode: "lexical" }), (a) => a.results.map((r) => r.chunk.text))
      const seen = yield* Effect.gen(function* () {
        const before = yield* texts("alpha")
        const again = yield* texts("alpha")
        // The same document with another text: its chunk keeps its place in the ranking, not its text.
        yield* indexPaths(["x"]).pipe(Effect.provide(docs("alpha delta", "gamma")))
        const changed = yield* texts("alpha")
        // The first document gone: the second one's chunk is at another position now.
        yield* indexPaths(["x"]).pipe(Effect.provide(docs("gamma")))
        const moved = yield* texts("gamma")
        return { before, again, changed, moved }
      }).pipe(Effect.provide(layerSqlite(file)))
      assert.deepStrictEqual(seen.before, ["alpha beta"])
      assert.deepStrictEqual(seen.again, ["alpha beta"])
      assert.deepStrictEqual(seen.changed, ["alpha delta"])
      assert.deepStrictEqual(seen.moved, ["gamma"])
    }).pipe(Effect.provide(Base))
  )

  it.effect("read each result's chunk once, and answer exactly as the first time", () =>
    Effect.gen(function* () {
      const file = yield* builtIndex
      const answers = yield* Effect.scoped(
        Effect.gen(function* () {
          const store = yield* IndexStore
          const opened = Option.getOrThrow(yield* store.snapshot)
          let reads = 0
          const snapshot: Snapshot = {
            ...opened,
            chunkAt: (position) => {
              reads++
              return opened.chunkAt(position)
            }
          }
          const ask = Effect.map(querySnapshot(snapshot, file, "alpha gamma", 5, { mode: "vector" }), (a) => a.results)
          const first = yield* ask
          const readsFirst = reads
          const second = yield* ask
          const readsSecond = reads - readsFirst
          // The next snapshot of the unchanged index (the next query's) shares the state, and reads nothing again.
          const again = Option.getOrThrow(yield* store.snapshot)
          assert.isDefined(again.stateKey)
          assert.strictEqual(again.stateKey, opened.stateKey)
          const same = yield* querySnapshot({ ...snapshot, stateKey: again.stateKey }, file, "alpha gamma", 5, {
            mode: "vector"
          })
          const readsSame = reads - readsFirst - readsSecond
          // A snapshot of another state of the index reads for itself.
          const other = yield* querySnapshot({ ...snapshot, stateKey: {} }, file, "alpha gamma", 5, { mode: "vector" })
          return {
            first,
            second,
            readsFirst,
            readsSecond,
            readsSame,
            same: same.results,
            other: other.results,
            total: reads
          }
        })
      ).pipe(Effect.provide(layerSqlite(file)))
      assert.strictEqual(answers.readsFirst, 2)
      assert.strictEqual(answers.readsSecond, 0)
      assert.strictEqual(answers.readsSame, 0)
      assert.strictEqual(answers.total, 4)
      assert.deepStrictEqual(answers.second, answers.first)
      assert.deepStrictEqual(answers.same, answers.first)
      assert.deepStrictEqual(answers.other, answers.first)
    }).pipe(Effect.provide(Base))
  )

  it.effect("break ties by doc id whether keys are read or the documents are numbered, and show each chunk once", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-ties-" })
      const file = `${dir}/index.db`
      // 30 documents of the same text: every chunk ties, and doc ids decide (d0, d1, d10, d11, … in code points).
      yield* indexPaths(["x"]).pipe(
        Effect.provide(Layer.mergeAll(layerSqlite(file), docs(...Array.from({ length: 30 }, () => "alpha beta"))))
      )
      const answers = yield* Effect.scoped(
        Effect.gen(function* () {
          const store = yield* IndexStore
          const snapshot = Option.getOrThrow(yield* store.snapshot)
          const ask = querySnapshot(snapshot, file, "alpha", 10, { mode: "lexical" })
          const asked = []
          for (let i = 0; i < 6; i++) asked.push(yield* ask)
          return { asked, numbered: snapshot.tieOrder?.() !== undefined }
        })
      ).pipe(Effect.provide(layerSqlite(file)))
      const ids = Array.from({ length: 30 }, (_, i) => `d${i}`).sort()
      const [first, ...later] = answers.asked
      assert.deepStrictEqual(
        first!.results.map((r) => r.chunk.docId),
        ids.slice(0, 10)
      )
      // The snapshot numbered its documents once it had been asked a few times; the answers did not change.
      assert.isTrue(answers.numbered)
      for (const answer of later) {
        assert.deepStrictEqual(answer.results, first!.results)
        assert.deepStrictEqual(answer.shown, first!.shown)
        // Shown once, then kept with the result's chunk.
        answer.shown!.forEach((shown, i) => {
          assert.strictEqual(shown, first!.shown![i])
        })
      }
    }).pipe(Effect.provide(Base))
  )
})
