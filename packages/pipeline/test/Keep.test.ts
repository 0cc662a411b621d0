/** Keep rules at ingest: which documents an index holds, how a changed rule updates it, and what status sees. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { all, anyOf, eq, not, printRule, type Rule, startsWith, under } from "@funcpipe/domain/Rule"
import { Effect, FileSystem, Layer, Option, Result, Stream } from "effect"
import { type IndexOptions, indexPaths } from "../src/programs/IndexRun.ts"
import { indexStatus } from "../src/programs/IndexStatus.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"
import { countingEmbedder } from "./Sources.ts"

/** A document: id, file it was read from, categories text, title. */
type Row = readonly [docId: string, source: string, categories: string | null, title: string]

const rows: ReadonlyArray<Row> = [
  ["a1", "/data/astro/a1.md", "astro-ph.GA hep-ph", "Dark matter"],
  ["a2", "/data/astro/a2.md", "astro-ph.CO", "Erratum: dark energy"],
  ["c1", "/data/cs/c1.md", "cs.LG, stat.ML", "Learning"],
  ["c2", "/data/cs/c2.md", null, "Erratum: graphs"],
  ["m1", "/data/math.csv", "math.NT", "Primes"],
  ["m2", "/data/math.csv", "math.NT; math.GM", "More primes"],
  ["x1", "/data2/x1.md", "astro-ph.GA", "Elsewhere"]
]

const sourceOf = (docs: ReadonlyArray<Row>) =>
  Layer.succeed(
    DocumentSource,
    DocumentSource.of({
      read: () =>
        Stream.fromIterable(
          docs.map(([docId, source, categories, title]) =>
            Result.succeed({
              source,
              line: source.endsWith(".csv") ? 2 : 0,
              doc: new RawDoc({ docId: DocId.make(docId), title, body: `the body of ${docId}`, categories })
            })
          )
        ),
      size: () => Effect.succeed(0)
    })
  )

/** Counts the texts embedded, so a test can tell what was embedded again. */
let embedded = 0
const Counting = countingEmbedder((texts) => {
  embedded += texts.length
})

const Base = Layer.mergeAll(Counting, NodeServices.layer)

const tempIndex = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  return `${yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-keep-" })}/index.db`
})

const run = (file: string, keep: Rule | undefined, options: IndexOptions = {}, docs = rows) =>
  indexPaths(["/data"], { ...options, ...(keep === undefined ? {} : { keep }) }).pipe(
    Effect.provide(Layer.mergeAll(layerSqlite(file), sourceOf(docs)))
  )

const storedIds = (file: string) =>
  IndexStore.use((s) => s.documents).pipe(
    Effect.map((docs) => docs.map((d) => d.docId).sort()),
    Effect.provide(layerSqlite(file))
  )

const manifestKeep = (file: string) =>
  IndexStore.use((s) => s.manifest).pipe(
    Effect.map((m) => Option.getOrUndefined(m)?.keep),
    Effect.provide(layerSqlite(file))
  )

describe("keep rules at ingest", () => {
  it.effect("index only the documents the rule keeps, count the others, and record the rule", () =>
    Effect.gen(function* () {
      const file = yield* tempIndex
      const rule = all([startsWith("categories", "astro-ph"), not(startsWith("title", "Erratum"))])
      const report = yield* run(file, rule)
      assert.deepStrictEqual(report.plan.added, ["a1", "x1"])
      assert.deepStrictEqual([report.documents, report.dropped], [2, 5])
      assert.deepStrictEqual(yield* storedIds(file), ["a1", "x1"])
      assert.deepStrictEqual(yield* manifestKeep(file), rule)
      assert.strictEqual(report.keepChanged, undefined, "a new index has no rule to change")
    }).pipe(Effect.provide(Base))
  )

  it.effect("categories compare as labels, whichever separator the source used", () =>
    Effect.gen(function* () {
      const file = yield* tempIndex
      yield* run(file, eq("categories", "stat.ML"))
      assert.deepStrictEqual(yield* storedIds(file), ["c1"])
      const again = yield* run(file, eq("categories", "math.GM"), { prune: true })
      assert.deepStrictEqual([again.plan.added, again.plan.deleted], [["m2"], ["c1"]])
    }).pipe(Effect.provide(Base))
  )

  it.effect("source under is resolved and compares whole path components", () =>
    Effect.gen(function* () {
      const file = yield* tempIndex
      yield* run(file, under("/data/astro/"))
      assert.deepStrictEqual(yield* storedIds(file), ["a1", "a2"])
      yield* run(file, under("/data/math.csv"), { prune: true })
      assert.deepStrictEqual(yield* storedIds(file), ["m1", "m2"])
    }).pipe(Effect.provide(Base))
  )

  it.effect("a changed rule only adds and deletes documents: those kept by both are not embedded again", () =>
    Effect.gen(function* () {
      const file = yield* tempIndex
      yield* run(file, startsWith("categories", "astro-ph"))
      embedded = 0
      const report = yield* run(file, anyOfCs(), { prune: true })
      assert.deepStrictEqual(report.plan, {
        added: ["c1", "c2"],
        updated: [],
        unchanged: ["a1", "a2", "x1"],
        deleted: []
      })
      assert.strictEqual(embedded, 2, "only the two added documents were embedded")
      assert.deepStrictEqual(report.keepChanged, { from: 'categories ^= "astro-ph"', to: printRule(anyOfCs()) })
      // Back to no rule: everything is kept, and the manifest says nothing about a rule.
      const none = yield* run(file, undefined)
      assert.deepStrictEqual([none.plan.added, none.dropped, none.keepChanged?.to], [["m1", "m2"], 0, "true"])
      assert.strictEqual(yield* manifestKeep(file), undefined)
    }).pipe(Effect.provide(Base))
  )

  it.effect("a changed rule that deletes much of the index needs --prune, and says the rule is why", () =>
    Effect.gen(function* () {
      const file = yield* tempIndex
      const many: ReadonlyArray<Row> = Array.from({ length: 20 }, (_, i) => [
        `d${i}`,
        "/data/d.csv",
        i < 2 ? "keep" : "other",
        "T"
      ])
      yield* run(file, undefined, {}, many)
      const refused = yield* Effect.flip(run(file, eq("categories", "keep"), {}, many))
      assert.strictEqual(refused._tag, "PruneNeeded")
      assert.include(refused.message, "would delete 18 of the 20 documents")
      assert.include(refused.message, 'the keep rule changed from true to categories = "keep"')
      assert.strictEqual((yield* storedIds(file)).length, 20, "nothing was lost")
      const pruned = yield* run(file, eq("categories", "keep"), { prune: true }, many)
      assert.deepStrictEqual([pruned.documents, pruned.plan.deleted.length, pruned.dropped], [2, 18, 18])
    }).pipe(Effect.provide(Base))
  )

  it.effect("a rule that keeps nothing fails with one line and leaves the index as it was", () =>
    Effect.gen(function* () {
      const file = yield* tempIndex
      yield* run(file, undefined)
      const error = yield* Effect.flip(run(file, eq("categories", "astroph"), { prune: true }))
      assert.strictEqual(error._tag, "NothingKept")
      assert.strictEqual(
        error.message,
        `the keep rule categories = "astroph" kept none of the 7 documents under the paths, so ${file} was left as ` +
          "it was; check the rule (values and labels compare exactly, case included)"
      )
      assert.strictEqual((yield* storedIds(file)).length, 7)
    }).pipe(Effect.provide(Base))
  )

  it.effect("the first record of an id claims it, kept or not", () =>
    Effect.gen(function* () {
      const file = yield* tempIndex
      const twice: ReadonlyArray<Row> = [
        ["d", "/data/a.md", "no", "T"],
        ["d", "/data/b.md", "yes", "T"],
        ["e", "/data/e.md", "yes", "T"]
      ]
      const report = yield* run(file, eq("categories", "yes"), {}, twice)
      assert.deepStrictEqual([report.plan.added, report.dropped, report.skipped.length], [["e"], 1, 1])
    }).pipe(Effect.provide(Base))
  )

  it.effect("status reads the paths under the stored rule: left-out documents are not changes", () =>
    Effect.gen(function* () {
      const file = yield* tempIndex
      yield* run(file, eq("categories", "math.NT"))
      const status = yield* indexStatus().pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), sourceOf(rows))))
      assert.deepStrictEqual([status.documents, status.changed], [2, []])
      assert.deepStrictEqual(status.manifest.keep, eq("categories", "math.NT"))
    }).pipe(Effect.provide(Base))
  )
})

const anyOfCs = (): Rule =>
  anyOf([startsWith("categories", "astro-ph"), startsWith("categories", "cs"), eq("title", "Erratum: graphs")])
