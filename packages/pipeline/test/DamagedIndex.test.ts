/**
 * A damaged index: `--rebuild` replaces it whatever the damage (it builds the new index beside it and puts it in its
 * place), where clearing it in place failed ("malformed while clearing") and the file had to be deleted by hand.
 */
import { closeSync, openSync, readdirSync, readFileSync, statSync, writeSync } from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { indexStatus } from "../src/programs/IndexStatus.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"
import { docsSource } from "./Sources.ts"

const docs = Array.from(
  { length: 400 },
  (_, i) => [`d${i}`, `note ${i} about word${i % 37} and more text ${i}`] as const
)

/** Overwrites 16 KiB in the middle of a file with bytes that are no SQLite page. */
const damage = (file: string) => {
  const fd = openSync(file, "r+")
  try {
    writeSync(fd, Buffer.alloc(16 * 1024, 0xa5), 0, 16 * 1024, Math.floor(statSync(file).size / 2))
  } finally {
    closeSync(fd)
  }
}

describe("a damaged index", () => {
  it.effect(
    "is found by status, which names its damaged parts, and replaced by --rebuild, which builds beside it and leaves nothing else behind",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-damaged-" })
        const file = `${dir}/index.db`
        const layer = Layer.mergeAll(layerSqlite(file), docsSource(docs))
        yield* indexPaths(["mem"]).pipe(Effect.provide(layer))
        damage(file)
        // status looks through the whole file and names the damaged parts, not only what it reads itself.
        const status = yield* Effect.flip(indexStatus().pipe(Effect.provide(layer)))
        assert.strictEqual(status._tag, "IndexCorrupt")
        assert.match(
          status.message,
          /SQLite's check finds damage in the (\w+(, )?)+ tables?: .*rebuild it with: funcpipe index/
        )
        const found = yield* Effect.flip(
          Effect.gen(function* () {
            for (let i = 0; i < 37; i++) yield* queryIndex(`word${i}`, 3)
            return yield* indexPaths(["mem"])
          }).pipe(Effect.provide(layer))
        )
        assert.include(["IndexCorrupt", "NotAnIndex", "StoreFailure"], found._tag)
        // The plan of the rebuild reads nothing of the damaged index either.
        const planned = yield* indexPaths(["mem"], { rebuild: true, dryRun: true }).pipe(Effect.provide(layer))
        assert.strictEqual(planned.plan.added.length, 400)
        const rebuilt = yield* indexPaths(["mem"], { rebuild: true }).pipe(Effect.provide(layer))
        assert.deepStrictEqual([rebuilt.documents, rebuilt.rebuilt], [400, true])
        const { results } = yield* queryIndex("word5", 1).pipe(Effect.provide(layer))
        assert.match(results[0]?.chunk.docId ?? "", /^d\d+$/)
        assert.deepStrictEqual(
          readdirSync(dir).filter((name) => name.includes("rebuilding")),
          [],
          "no file left beside it"
        )
      }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)))
  )

  it.effect(
    "is only ever an index: --rebuild refuses another program's database or file, and leaves it as it was",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-foreign-" })
        const database = `${dir}/app.db`
        const db = new DatabaseSync(database)
        db.exec("CREATE TABLE customers (name TEXT); INSERT INTO customers VALUES ('Ada')")
        db.close()
        const text = `${dir}/notes.txt`
        yield* fs.writeFileString(text, "not a database at all")
        for (const file of [database, text]) {
          const before = readFileSync(file)
          const refused = yield* Effect.flip(
            indexPaths(["mem"], { rebuild: true }).pipe(
              Effect.provide(Layer.mergeAll(layerSqlite(file), docsSource(docs)))
            )
          )
          assert.strictEqual(refused._tag, "NotAnIndex", file)
          assert.deepStrictEqual(readFileSync(file), before, "left as it was")
        }
      }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)))
  )
})
