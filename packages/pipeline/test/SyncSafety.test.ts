/** What an index run may delete unasked, and how it reports documents it cannot index. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { Effect, FileSystem, Layer, Result, Stream } from "effect"
import fc from "fast-check"
import { PRUNE_FREE_DOCUMENTS, pruneReason } from "../src/index/Sync.ts"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"

/** A source of documents `[docId, body]`, each on its own line of `file`. */
const lines = (file: string, docs: ReadonlyArray<readonly [string, string]>) =>
  Layer.succeed(
    DocumentSource,
    DocumentSource.of({
      read: () =>
        Stream.fromIterable(
          docs.map(([docId, body], i) =>
            Result.succeed({
              source: file,
              line: i + 1,
              doc: new RawDoc({ docId: DocId.make(docId), title: "", body, categories: null })
            })
          )
        ),
      size: () => Effect.succeed(0)
    })
  )

const corpus = (n: number) => Array.from({ length: n }, (_, i) => [`d${i}`, `document number ${i}`] as const)

const Base = Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)

const tempIndex = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  return `${yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-sync-" })}/index.db`
})

const run = (
  file: string,
  paths: ReadonlyArray<string>,
  docs: ReadonlyArray<readonly [string, string]>,
  options: { readonly prune?: boolean; readonly dryRun?: boolean } = {}
) => indexPaths(paths, options).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), lines("in.jsonl", docs))))

const storedIds = (file: string) =>
  IndexStore.use((s) => s.documents).pipe(
    Effect.map((docs) => docs.map((d) => d.docId).sort()),
    Effect.provide(layerSqlite(file))
  )

describe("deleting documents", () => {
  it.effect(
    "needs --prune when the paths are not the ones the index was built from, and changes nothing without it",
    () =>
      Effect.gen(function* () {
        const file = yield* tempIndex
        yield* run(file, ["/corpus"], corpus(7))
        const refused = yield* Effect.flip(run(file, ["/corpus/empty.txt"], []))
        assert.strictEqual(refused._tag, "PruneNeeded")
        assert.include(refused.message, "would delete 7 of the 7 documents")
        assert.include(refused.message, "the paths are not the ones the index was built from")
        assert.include(refused.message, "--prune")
        assert.strictEqual((yield* storedIds(file)).length, 7, "nothing was lost")
        const planned = yield* run(file, ["/corpus/empty.txt"], [], { dryRun: true })
        assert.deepStrictEqual(
          planned.plan.deleted,
          corpus(7).map(([id]) => id)
        )
        assert.strictEqual(planned.pruneNeeded, "the paths are not the ones the index was built from")
        assert.deepStrictEqual([planned.documents, planned.chunks], [7, 7], "a dry run reports the index as it is")
        const pruned = yield* run(file, ["/corpus/empty.txt"], [], { prune: true })
        assert.strictEqual(pruned.plan.deleted.length, 7)
        assert.deepStrictEqual(yield* storedIds(file), [])
      }).pipe(Effect.provide(Base))
  )

  it.effect("mirrors a few removed files over the same paths, and asks before deleting many", () =>
    Effect.gen(function* () {
      const file = yield* tempIndex
      yield* run(file, ["/corpus"], corpus(30))
      const few = yield* run(file, ["/corpus"], corpus(30).slice(0, 30 - PRUNE_FREE_DOCUMENTS))
      assert.strictEqual(few.plan.deleted.length, PRUNE_FREE_DOCUMENTS)
      const many = yield* Effect.flip(run(file, ["/corpus"], corpus(10)))
      assert.strictEqual(many._tag, "PruneNeeded")
      assert.strictEqual((yield* storedIds(file)).length, 30 - PRUNE_FREE_DOCUMENTS)
    }).pipe(Effect.provide(Base))
  )

  it("allows at most max(5, 10%) deletions over the same paths and none over other paths", () => {
    fc.assert(
      fc.property(fc.nat(1000), fc.nat(1000), fc.boolean(), (deleted, extra, same) => {
        const stored = deleted + extra
        const reason = pruneReason(deleted, stored, same)
        const allowed = deleted === 0 || (same && deleted <= Math.max(5, Math.floor(stored / 10)))
        assert.strictEqual(reason === undefined, allowed)
      })
    )
  })
})

describe("documents an index run cannot index", () => {
  it.effect("skips a document left empty by cleaning, with its file and line, without counting it as added", () =>
    Effect.gen(function* () {
      const file = yield* tempIndex
      yield* run(
        file,
        ["/corpus"],
        [
          ["a", "kept"],
          ["b", "will be emptied"]
        ]
      )
      const report = yield* run(
        file,
        ["/corpus"],
        [
          ["a", "kept"],
          ["b", "   "],
          ["c", "\n"]
        ]
      )
      assert.deepStrictEqual(report.plan, { added: [], updated: [], unchanged: ["a"], deleted: ["b"] })
      assert.deepStrictEqual(
        report.skipped.map((s) => [s.source, s.line]),
        [
          ["in.jsonl", 2],
          ["in.jsonl", 3]
        ]
      )
      assert.include(report.skipped[0]!.reason, "nothing left after cleaning")
      assert.strictEqual(report.documents, 1)
      assert.deepStrictEqual(yield* storedIds(file), ["a"])
    }).pipe(Effect.provide(Base))
  )

  it.effect("skips a repeated doc id with its line and where the id was first read", () =>
    Effect.gen(function* () {
      const file = yield* tempIndex
      const report = yield* run(
        file,
        ["/corpus"],
        [
          ["a", "first"],
          ["b", "other"],
          ["a", "second"]
        ]
      )
      assert.deepStrictEqual(report.skipped, [
        { source: "in.jsonl", line: 3, reason: 'the doc id "a" was already read from in.jsonl:1' }
      ])
      assert.deepStrictEqual(report.plan.added, ["a", "b"])
    }).pipe(Effect.provide(Base))
  )

  it.effect("fails, writing nothing, when every record was skipped (a text file over the size limit, say)", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-sync-" })
      yield* fs.writeFileString(`${dir}/big.md`, `# Big\n${"word ".repeat(10)}`)
      const file = `${dir}/index.db`
      yield* run(file, [dir], [["a", "kept"]])
      const tiny = DocumentSource.layerWith({ maxTextFileBytes: 16 })
      const error = yield* Effect.flip(
        indexPaths([`${dir}/big.md`], { prune: true }).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), tiny)))
      )
      assert.strictEqual(error._tag, "NothingToIndex")
      assert.strictEqual(
        error.message,
        `nothing to index: the only record under the paths could not be read (big.md: larger than 16 bytes, skipped; ` +
          `split it or convert it to JSONL to index it), so ${file} was left as it was`
      )
      assert.deepStrictEqual(yield* storedIds(file), ["a"])
    }).pipe(Effect.provide(Base))
  )
})
