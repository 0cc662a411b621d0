/**
 * The PostgreSQL index: its URL, the errors a team meets (a server that is down, a wrong password, a schema that holds
 * someone else's tables, a layout too new or damaged), one writer at a time, and readers that see one state.
 */

import { createServer } from "node:net"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { AnalyzerConfig, ChunkerConfig, CleanerConfig } from "@funcpipe/domain/Config"
import { ModelLabel } from "@funcpipe/domain/Embedding"
import { FORMAT_VERSION, IndexManifest } from "@funcpipe/domain/Manifest"
import { describePg, freshSchema, onServer, PG_URL, withSchema, writeLocks } from "@funcpipe/test-kit/PgFixture"
import { Deferred, Effect, Fiber, FileSystem, Layer, Option, Redacted, Result } from "effect"
import { embedText } from "../src/analysis/Embed.ts"
import { makePartitionReader } from "../src/cluster/PgPartition.ts"
import { shardOf } from "../src/cluster/Shards.ts"
import { PackWriter } from "../src/index/BodyPack.ts"
import { Embedder } from "../src/models/Embedder.ts"
import { deleteDocuments } from "../src/programs/DocumentWrites.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerPostgres } from "../src/store/postgres/PgIndexStore.ts"
import { parsePgUrl, scrubUrl } from "../src/store/postgres/PgUrl.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"
import { bodiesSource } from "./Sources.ts"

const docs = bodiesSource

const Base = Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)

/** A fresh schema holding an index of two documents; its URL. */
const builtIndex = Effect.gen(function* () {
  const { url } = yield* freshSchema
  yield* indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerPostgres(url), docs("alpha beta", "gamma"))))
  return url
})

const queryAt = (url: string, text = "gamma") =>
  queryIndex(text, 5, { mode: "vector" }).pipe(Effect.provide(layerPostgres(url)))

/** A port on 127.0.0.1 where nothing listens (one the system just gave out and took back). */
const closedPort = Effect.promise(
  () =>
    new Promise<number>((resolve) => {
      const server = createServer()
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as { port: number }
        server.close(() => resolve(port))
      })
    })
)

describe("PostgreSQL index URLs", () => {
  it("take the schema from the URL, check its name, and never keep the password in what is shown", () => {
    const parsed = Result.getOrThrow(
      parsePgUrl("postgres://team:s3cr%40t@db.example:5433/search?schema=papers&sslmode=disable")
    )
    assert.strictEqual(parsed.schema, "papers")
    assert.strictEqual(parsed.database, "search")
    assert.strictEqual(parsed.location, "postgres://team@db.example:5433/search?schema=papers&sslmode=disable")
    assert.strictEqual(Redacted.value(parsed.password!), "s3cr@t")
    assert.strictEqual(Redacted.value(parsed.url), "postgres://team:s3cr%40t@db.example:5433/search?sslmode=disable")
    assert.strictEqual(Result.getOrThrow(parsePgUrl("postgresql://localhost/db")).schema, "funcpipe")
    assert.isTrue(Result.isFailure(parsePgUrl("postgres://localhost/db?schema=Robert%27);DROP")))
    assert.strictEqual(scrubUrl("postgres://u:pw@h/db?password=pw2"), "postgres://u@h/db")
    assert.strictEqual(scrubUrl("postgres://u:p w@h:x/db"), "postgres://u@h:x/db")
  })

  it.effect(
    "report a server that is not there as IndexUnreachable at once, without hanging",
    () =>
      Effect.gen(function* () {
        const port = yield* closedPort
        const url = `postgres://funcpipe:hunter2@127.0.0.1:${port}/funcpipe`
        const error = yield* Effect.flip(IndexStore.use((s) => s.manifest).pipe(Effect.provide(layerPostgres(url))))
        assert.strictEqual(error._tag, "IndexUnreachable")
        assert.include(error.message, "connection refused")
        assert.include(error.message, `postgres://funcpipe@127.0.0.1:${port}/funcpipe`)
        assert.notInclude(error.message, "hunter2")
        // An index run gets the same typed error, not a defect or a hang.
        const run = yield* Effect.flip(
          indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerPostgres(url), docs("a"))))
        )
        assert.strictEqual(run._tag, "IndexUnreachable")
      }).pipe(Effect.provide(Base)),
    15_000
  )

  it.effect("refuse a URL that is not one, naming no password", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        IndexStore.use((s) => s.manifest).pipe(Effect.provide(layerPostgres("postgres://u:pw@[nope/db")))
      )
      assert.strictEqual(error._tag, "StoreFailure")
      assert.notInclude(error.message, "pw")
    })
  )
})

describePg("the PostgreSQL index", () => {
  it.effect("answers after reopening; a schema not made yet is an index not built yet", () =>
    Effect.gen(function* () {
      const url = yield* builtIndex
      const { results } = yield* queryAt(url)
      assert.strictEqual(results[0]!.chunk.docId, "d1")
      const { schema, url: empty } = yield* freshSchema
      const error = yield* Effect.flip(queryAt(empty))
      assert.strictEqual(error._tag, "IndexMissing")
      const made = yield* onServer((sql) => sql`SELECT 1 FROM pg_namespace WHERE nspname = ${schema}`)
      assert.strictEqual(made.length, 0, "a query creates nothing")
    }).pipe(Effect.provide(Base))
  )

  it.effect("refuses a wrong password with IndexCredentialsRefused, and never shows the password", () =>
    Effect.gen(function* () {
      const url = new URL(PG_URL!)
      url.password = "not-the-Password-42"
      const error = yield* Effect.flip(IndexStore.use((s) => s.manifest).pipe(Effect.provide(layerPostgres(url.href))))
      assert.strictEqual(error._tag, "IndexCredentialsRefused")
      assert.include(error.message, "refused the user name or password")
      for (const text of [error.message, JSON.stringify(error), String(error)])
        assert.notInclude(text, "not-the-Password-42")
    }).pipe(Effect.provide(Base))
  )

  it.effect("names a database that does not exist, without the password", () =>
    Effect.gen(function* () {
      const url = new URL(PG_URL!)
      url.pathname = "/funcpipe_no_such_database"
      const error = yield* Effect.flip(IndexStore.use((s) => s.manifest).pipe(Effect.provide(layerPostgres(url.href))))
      assert.strictEqual(error._tag, "StoreFailure")
      assert.include(error.message, "funcpipe_no_such_database does not exist")
      assert.include(error.message, `postgres://${url.username}@`)
      if (url.password !== "") assert.notInclude(error.message, `:${url.password}@`)
    }).pipe(Effect.provide(Base))
  )

  it.effect("leaves a schema of someone else's tables alone: ForeignSchema for readers and writers", () =>
    Effect.gen(function* () {
      const { schema, url } = yield* freshSchema
      yield* onServer((sql) =>
        Effect.all([
          sql`CREATE SCHEMA ${sql(schema)}`,
          sql`CREATE TABLE ${sql(`${schema}.customers`)} (id int)`,
          sql`INSERT INTO ${sql(`${schema}.customers`)} VALUES (7)`
        ])
      )
      const read = yield* Effect.flip(queryAt(url))
      assert.strictEqual(read._tag, "ForeignSchema")
      assert.include(read.message, `the schema ${schema}`)
      assert.include(read.message, "customers")
      const write = yield* Effect.flip(
        indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerPostgres(url), docs("a"))))
      )
      assert.strictEqual(write._tag, "ForeignSchema")
      // Someone's own `meta` and `documents` tables are not taken for an index either.
      yield* onServer((sql) =>
        Effect.all([
          sql`CREATE TABLE ${sql(`${schema}.meta`)} (name text)`,
          sql`CREATE TABLE ${sql(`${schema}.documents`)} (id int)`
        ])
      )
      const again = yield* Effect.flip(IndexStore.use((s) => s.version).pipe(Effect.provide(layerPostgres(url))))
      assert.strictEqual(again._tag, "ForeignSchema")
      const rows = yield* onServer((sql) => sql`SELECT id FROM ${sql(`${schema}.customers`)}`)
      assert.deepStrictEqual(rows, [{ id: 7 }])
    }).pipe(Effect.provide(Base))
  )

  it.effect("refuses a layout from a newer or older FuncPipe and a damaged manifest; a rebuild lays it out anew", () =>
    Effect.gen(function* () {
      const url = yield* builtIndex
      const schema = new URL(url).searchParams.get("schema")!
      yield* onServer((sql) => sql`UPDATE ${sql(`${schema}.meta`)} SET value = '9' WHERE key = 'layout'`)
      const tooNew = yield* Effect.flip(queryAt(url))
      assert.strictEqual(tooNew._tag, "IndexTooNew")
      assert.include(tooNew.message, "made by a newer FuncPipe")
      yield* onServer((sql) =>
        Effect.all([
          sql`UPDATE ${sql(`${schema}.meta`)} SET value = '1' WHERE key = 'layout'`,
          sql`UPDATE ${sql(`${schema}.meta`)} SET value = '{' WHERE key = 'manifest'`
        ])
      )
      const damaged = yield* Effect.flip(queryAt(url))
      assert.strictEqual(damaged._tag, "IndexCorrupt")
      // As the message says: delete it (here, its schema) and index again.
      yield* onServer((sql) => sql`DROP SCHEMA ${sql(schema)} CASCADE`)
      yield* indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerPostgres(url), docs("alpha beta", "gamma"))))
      // An older layout is refused until a rebuild lays the tables out anew.
      yield* onServer((sql) => sql`UPDATE ${sql(`${schema}.meta`)} SET value = '0' WHERE key = 'layout'`)
      const tooOld = yield* Effect.flip(queryAt(url))
      assert.strictEqual(tooOld._tag, "IndexTooOld")
      assert.include(tooOld.message, "--rebuild")
      const update = yield* Effect.flip(
        indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerPostgres(url), docs("a"))))
      )
      assert.strictEqual(update._tag, "IndexTooOld")
      yield* indexPaths(["x"], { rebuild: true }).pipe(
        Effect.provide(Layer.mergeAll(layerPostgres(url), docs("alpha beta", "gamma")))
      )
      assert.strictEqual((yield* queryAt(url)).results[0]!.chunk.docId, "d1")
    }).pipe(Effect.provide(Base))
  )

  it.effect.each([
    ["a vector that is not finite", "vectors = '\\x000000000000f87f'::bytea || substr(vectors, 9)"],
    ["vectors of the wrong length", "vectors = '\\x00'::bytea"],
    ["spans that do not match the chunk count", "spans = '\\x0000'::bytea"],
    ["a term number past the document's terms", "terms = ''"],
    ["a body that does not decompress", "body = '\\xffff'::bytea"],
    ["an empty doc id", "doc_id = ''"]
  ])("reports %s as IndexCorrupt instead of answering", ([, change]) =>
    Effect.gen(function* () {
      const url = yield* builtIndex
      const schema = new URL(url).searchParams.get("schema")!
      yield* onServer((sql) => sql.unsafe(`UPDATE "${schema}".documents SET ${change} WHERE doc_id = 'd1'`))
      const error = yield* Effect.flip(
        Effect.gen(function* () {
          yield* queryIndex("gamma", 5, { mode: "vector" })
          yield* queryIndex("gamma alpha", 5, { mode: "lexical" })
          yield* IndexStore.use((s) => s.documents)
        }).pipe(Effect.provide(layerPostgres(url)))
      )
      assert.strictEqual(error._tag, "IndexCorrupt")
    }).pipe(Effect.provide(Base))
  )

  it.effect(
    "fails a second writer with IndexBusy (another FuncPipe run is writing) while the first one writes",
    () =>
      Effect.gen(function* () {
        const url = yield* builtIndex
        const writing = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const first = yield* Effect.forkChild(
          IndexStore.use((store) =>
            store.transaction(() => Effect.andThen(Deferred.succeed(writing, undefined), Deferred.await(release)))
          ).pipe(Effect.provide(layerPostgres(url)))
        )
        yield* Deferred.await(writing)
        const error = yield* Effect.flip(
          indexPaths(["x"]).pipe(
            Effect.provide(Layer.mergeAll(layerPostgres(url, { busyTimeoutMillis: 100 }), docs("other")))
          )
        )
        assert.strictEqual(error._tag, "IndexBusy")
        assert.include(error.message, "another FuncPipe run is writing the index")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(first)
        // Once the first writer is done, the next one goes ahead.
        const report = yield* indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerPostgres(url), docs("other"))))
        assert.deepStrictEqual(report.plan.deleted, ["d1"])
      }).pipe(Effect.provide(Base)),
    20_000
  )

  it.effect(
    "a writer that waited for the lock plans against what the first writer committed",
    () =>
      Effect.gen(function* () {
        const url = yield* builtIndex
        const schema = new URL(url).searchParams.get("schema")!
        const writing = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const first = yield* Effect.forkChild(
          IndexStore.use((store) =>
            store.transaction((w) =>
              Effect.gen(function* () {
                yield* w.deleteDoc("d0")
                yield* Deferred.succeed(writing, undefined)
                yield* Deferred.await(release)
              })
            )
          ).pipe(Effect.provide(layerPostgres(url)))
        )
        yield* Deferred.await(writing)
        const second = yield* Effect.forkChild(
          IndexStore.use((store) => store.transaction((w) => w.storedDocs)).pipe(
            Effect.provide(layerPostgres(url, { busyTimeoutMillis: 30_000 }))
          )
        )
        // The second writer is waiting for the advisory lock: the server shows one lock not granted.
        while ((yield* writeLocks(schema, false)) === 0) yield* Effect.yieldNow
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(first)
        const stored = yield* Fiber.join(second)
        assert.deepStrictEqual([...stored.keys()], ["d1"])
      }).pipe(Effect.provide(Base)),
    30_000
  )

  it.effect("lets a reader see the old index while a writer's transaction is open, and the new one after", () =>
    Effect.gen(function* () {
      const url = yield* builtIndex
      const writing = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const writer = yield* Effect.forkChild(
        IndexStore.use((store) =>
          store.transaction((w) =>
            Effect.gen(function* () {
              yield* w.deleteDoc("d1")
              yield* Deferred.succeed(writing, undefined)
              yield* Deferred.await(release)
            })
          )
        ).pipe(Effect.provide(layerPostgres(url)))
      )
      yield* Deferred.await(writing)
      const during = yield* queryAt(url)
      assert.deepStrictEqual(
        during.results.map((r) => r.chunk.docId),
        ["d1", "d0"]
      )
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(writer)
      const after = yield* queryAt(url)
      assert.deepStrictEqual(
        after.results.map((r) => r.chunk.docId),
        ["d0"]
      )
    }).pipe(Effect.provide(Base))
  )

  it.effect("keeps the old index when a run fails halfway, and writes nothing on a dry run", () =>
    Effect.gen(function* () {
      const url = yield* builtIndex
      const before = yield* queryAt(url)
      const exit = yield* Effect.exit(
        IndexStore.use((store) =>
          store.transaction((w) => Effect.andThen(w.deleteDoc("d0"), Effect.die("the model went away")))
        ).pipe(Effect.provide(layerPostgres(url)))
      )
      assert.isTrue(exit._tag === "Failure")
      assert.deepStrictEqual(yield* queryAt(url), before)
      const report = yield* indexPaths(["x"], { dryRun: true }).pipe(
        Effect.provide(Layer.mergeAll(layerPostgres(url), docs("other")))
      )
      assert.deepStrictEqual(report.plan, { added: [], updated: ["d0"], unchanged: [], deleted: ["d1"] })
      assert.deepStrictEqual(yield* queryAt(url), before)
    }).pipe(Effect.provide(Base))
  )

  it.effect("an interrupted run (Ctrl-C) leaves the index as it was and lets the next writer in at once", () =>
    Effect.gen(function* () {
      const url = yield* builtIndex
      const before = yield* queryAt(url)
      const writing = yield* Deferred.make<void>()
      const run = yield* Effect.forkChild(
        IndexStore.use((store) =>
          store.transaction((w) =>
            Effect.gen(function* () {
              yield* w.deleteDoc("d0")
              yield* Deferred.succeed(writing, undefined)
              return yield* Effect.never
            })
          )
        ).pipe(Effect.provide(layerPostgres(url)))
      )
      yield* Deferred.await(writing)
      yield* Fiber.interrupt(run)
      assert.deepStrictEqual(yield* queryAt(url), before)
      const report = yield* indexPaths(["x"]).pipe(
        Effect.provide(Layer.mergeAll(layerPostgres(url, { busyTimeoutMillis: 100 }), docs("alpha beta", "gamma")))
      )
      assert.strictEqual(report.plan.unchanged.length, 2)
    }).pipe(Effect.provide(Base))
  )

  it.effect("moves its version on with every commit that changes something, and only then", () =>
    Effect.gen(function* () {
      const url = yield* builtIndex
      yield* Effect.gen(function* () {
        const store = yield* IndexStore
        const first = yield* store.version
        const snapshot = Option.getOrThrow(yield* Effect.scoped(store.snapshot))
        yield* store.transaction((w) => w.storedDocs)
        assert.strictEqual(yield* store.version, first, "a transaction that changed nothing")
        assert.strictEqual(
          Option.getOrThrow(yield* Effect.scoped(store.snapshot)),
          snapshot,
          "the loaded state is kept"
        )
        yield* deleteDocuments(["d0"])
        assert.notStrictEqual(yield* store.version, first)
        assert.deepStrictEqual(
          (yield* store.documents).map((d) => d.docId),
          ["d1"]
        )
      }).pipe(Effect.provide(layerPostgres(url)))
    }).pipe(Effect.provide(Base))
  )

  it.effect(
    "stores a document of more distinct terms than 16-bit numbers hold, answering as the SQLite file does",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-pg-" })
        const { url } = yield* freshSchema
        // One document of 70,000 distinct words (and one more chunk with a few), written through each store's writer.
        const words = Array.from({ length: 70_000 }, (_, i) => `w${i.toString(36)}`)
        const body = `${words.join(" ")} tail words`
        const manifest = new IndexManifest({
          formatVersion: FORMAT_VERSION,
          model: ModelLabel.make("local-sha256"),
          dimensions: 16,
          cleaner: CleanerConfig.default,
          chunker: ChunkerConfig.default,
          analyzer: AnalyzerConfig.default,
          createdAt: 0,
          updatedAt: 0,
          documents: 1,
          chunks: 2
        })
        const write = IndexStore.use((store) =>
          store.transaction((w) =>
            Effect.gen(function* () {
              const split = body.length - "tail words".length
              const vocabulary = [...words, "tail", "word"]
              const ids = Uint32Array.from([...words.keys(), words.length, words.length + 1])
              const vectors = Float64Array.from([
                ...embedText(body.slice(0, split)).vector,
                ...embedText("tail words").vector
              ])
              yield* w.putDoc(
                {
                  docId: "big",
                  source: "s",
                  title: "",
                  categories: null,
                  hash: "0".repeat(64),
                  body: new PackWriter().pack([body])[0]!
                },
                [
                  { start: 0, end: split, from: 0, to: words.length },
                  { start: split, end: body.length, from: words.length, to: words.length + 2 }
                ],
                { vocabulary, ids },
                vectors
              )
              yield* w.putManifest(manifest)
            })
          )
        )
        const answers = Effect.forEach(["w1ekf", "tail", "w0 tail"], (q) =>
          Effect.map(queryIndex(q, 5, { mode: "lexical" }), ({ results }) =>
            results.map((r) => [r.score, r.chunk.start, r.chunk.end])
          )
        )
        const sqlite = layerSqlite(`${dir}/index.db`)
        const expected = yield* Effect.andThen(write, answers).pipe(Effect.provide(sqlite))
        const got = yield* Effect.andThen(write, answers).pipe(Effect.provide(layerPostgres(url)))
        assert.deepStrictEqual(got, expected)
        assert.strictEqual(expected[0]!.length, 1)
      }).pipe(Effect.provide(Base)),
    30_000
  )

  it.effect(
    "loads an index of more rows than one page, and each shard's partition of it, answering as the SQLite file does",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-pg-" })
        const { url } = yield* freshSchema
        // 2,300 documents: a load reads them in pages of 1,000 rows, so three pages, the last one short.
        const bodies = Array.from({ length: 2300 }, (_, i) => `entry ${i} word${i % 37} and word${i % 101} together`)
        const build = indexPaths(["x"]).pipe(Effect.provide(docs(...bodies)))
        const answers = Effect.forEach(
          [
            ["word5 word7", "lexical"],
            ["entry 2299 word5 and word77 together", "vector"],
            ["entry 0 word0 and word0 together", "hybrid"]
          ] as const,
          ([q, mode]) =>
            Effect.map(queryIndex(q, 10, { mode }), ({ results }) =>
              results.map((r) => [r.score, r.chunk.docId, r.chunk.start, r.chunk.end, r.chunk.text])
            )
        )
        const expected = yield* Effect.andThen(build, answers).pipe(Effect.provide(layerSqlite(`${dir}/index.db`)))
        const got = yield* Effect.andThen(build, answers).pipe(Effect.provide(layerPostgres(url)))
        assert.deepStrictEqual(got, expected)
        assert.strictEqual(expected[0]!.length, 10)

        // The two partitions hold every document once, each where `shardOf` puts it, with its text.
        const reader = yield* makePartitionReader(url)
        const partitions = yield* Effect.forEach([0, 1], (shard) => reader.load(shard, 2))
        const held = partitions.map((p) => Option.getOrThrow(p).snapshot)
        assert.strictEqual(held[0]!.positions + held[1]!.positions, bodies.length)
        for (const i of [0, 999, 1000, 1001, 2299]) {
          const docId = `d${i}`
          const home = held[shardOf(docId, 2)]!.document(docId)
          assert.strictEqual(home?.chunks[0]?.text, bodies[i])
          assert.isUndefined(held[1 - shardOf(docId, 2)]!.document(docId))
        }
      }).pipe(Effect.provide(Base)),
    60_000
  )

  it.effect("keeps indexes in different schemas of one database apart", () =>
    Effect.gen(function* () {
      const a = yield* builtIndex
      const { url: b } = yield* freshSchema
      yield* indexPaths(["x"]).pipe(Effect.provide(Layer.mergeAll(layerPostgres(b), docs("delta"))))
      assert.deepStrictEqual(
        (yield* queryAt(a)).results.map((r) => r.chunk.text),
        ["gamma", "alpha beta"]
      )
      assert.deepStrictEqual(
        (yield* queryAt(b)).results.map((r) => r.chunk.text),
        ["delta"]
      )
      assert.notStrictEqual(withSchema(PG_URL!, "x"), PG_URL)
    }).pipe(Effect.provide(Base))
  )
})
