/**
 * A first run that fails leaves nothing behind: no index file, no journal, no folder it made for them, so that "nothing
 * was changed" is true (a full disk failing a first run used to leave a 5 MB file and a journal).
 */
import { existsSync, readdirSync } from "node:fs"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { Effect, FileSystem, Layer, Result, Stream } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { SourceUnreadable } from "../src/read/SourceErrors.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"
import { docsSource } from "./Sources.ts"

/** A source that reads `count` documents, then fails as a disk failing under the run would. */
const failingSource = (count: number) =>
  Layer.succeed(
    DocumentSource,
    DocumentSource.of({
      read: () =>
        Stream.concat(
          Stream.fromIterable(
            Array.from({ length: count }, (_, i) =>
              Result.succeed({
                source: "docs.jsonl",
                line: i + 1,
                doc: new RawDoc({
                  docId: DocId.make(`d${i}`),
                  title: "",
                  body: `text number ${i} `.repeat(50),
                  categories: null
                })
              })
            )
          ),
          Stream.fail(new SourceUnreadable({ path: "docs.jsonl", reason: "the disk reported an input/output error" }))
        ),
      size: () => Effect.succeed(0)
    })
  )

describe("a first run that fails", () => {
  it.effect("leaves no index file, journal or folder behind; a failed run on an existing index keeps it", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-first-run-" })
      const file = `${dir}/made/for/it/index.db`
      const failed = yield* Effect.flip(
        indexPaths(["docs.jsonl"], { batchSize: 8 }).pipe(
          Effect.provide(Layer.mergeAll(layerSqlite(file), failingSource(500)))
        )
      )
      assert.strictEqual(failed._tag, "SourceUnreadable")
      assert.deepStrictEqual(
        readdirSync(dir),
        [],
        "nothing left: not the file, its journal, nor the folders made for it"
      )
      // A failed run on an index that exists leaves it as it was.
      const kept = `${dir}/kept.db`
      yield* indexPaths(["docs.jsonl"]).pipe(
        Effect.provide(Layer.mergeAll(layerSqlite(kept), docsSource([["a", "alpha"]])))
      )
      const again = yield* Effect.flip(
        indexPaths(["docs.jsonl"]).pipe(Effect.provide(Layer.mergeAll(layerSqlite(kept), failingSource(500))))
      )
      assert.strictEqual(again._tag, "SourceUnreadable")
      assert.isTrue(existsSync(kept))
      const { results } = yield* queryIndex("alpha", 1).pipe(Effect.provide(layerSqlite(kept)))
      assert.strictEqual(results[0]?.chunk.docId, "a")
    }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)))
  )
})
