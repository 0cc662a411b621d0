/** Query filters: per-document evaluation over a stored index, and exact filtered top-k in every mode. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ChunkerConfig, ChunkSize, FusionConfig, Overlap } from "@funcpipe/domain/Config"
import { DocId, labelsOf, RawDoc } from "@funcpipe/domain/Document"
import { rankingOrder } from "@funcpipe/domain/Ranking"
import {
  all,
  anyOf,
  eq,
  isIn,
  keepAll,
  lenGt,
  matches,
  not,
  type Rule,
  type RuleField,
  startsWith,
  under
} from "@funcpipe/domain/Rule"
import { Effect, Layer, Result, Stream } from "effect"
import fc from "fast-check"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { type ColumnReader, TableFilter } from "../src/search/Filter.ts"
import { fuseLinear, fuseWeightedRanks, type Top } from "../src/search/Ranker.ts"
import { layerTemporary } from "../src/store/sqlite/TempIndexStore.ts"

const value = fc.constantFrom("a", "b", "ab", "astro-ph", "astro-ph.GA", "cs", "😀", "")
const field = fc.constantFrom<RuleField>("doc_id", "title", "categories")
const source = fc.constantFrom("/data/x.md", "/data/sub/y.csv", "/data2/z.md")

/** Rules a query filter may use: every operator, on every field but the body. */
const rule: fc.Arbitrary<Rule> = fc.letrec<{ rule: Rule }>((tie) => ({
  rule: fc.oneof(
    { maxDepth: 3, depthIdentifier: "rule" },
    fc.tuple(field, value).map(([f, v]) => eq(f, v)),
    fc.tuple(field, value).map(([f, v]) => startsWith(f, v)),
    fc.tuple(field, fc.array(value, { maxLength: 3 })).map(([f, vs]) => isIn(f, vs)),
    fc.tuple(field, fc.integer({ min: 0, max: 3 })).map(([f, n]) => lenGt(f, n)),
    fc.constantFrom("/data", "/data/sub", "/data/x.md", "/dat").map(under),
    fc.array(tie("rule"), { maxLength: 3 }).map(all),
    fc.array(tie("rule"), { maxLength: 3 }).map(anyOf),
    tie("rule").map(not)
  )
})).rule

/** A document: id, title, categories text, file, body. */
interface Doc {
  readonly docId: string
  readonly title: string
  readonly categories: string | null
  readonly source: string
  readonly body: string
}

const categories = fc.oneof(
  fc.constant(null),
  fc.array(value, { maxLength: 3 }).map((labels) => labels.join(" ")),
  fc.array(value, { maxLength: 3 }).map((labels) => labels.join(", "))
)

const words = fc
  .array(fc.constantFrom("moon", "light", "sun", "dark", "matter", "x"), { minLength: 1, maxLength: 9 })
  .map((ws) => ws.join(" "))

const docs: fc.Arbitrary<ReadonlyArray<Doc>> = fc.uniqueArray(
  fc.record({
    docId: fc.constantFrom("a", "b", "ab", "d1", "d2", "😀", "cs", "e"),
    title: value,
    categories,
    source,
    body: words
  }),
  { selector: (d) => d.docId, minLength: 1, maxLength: 8 }
)

const subjectOf = (d: Doc) => ({
  docId: d.docId,
  title: d.title,
  body: d.body,
  labels: labelsOf(d.categories),
  source: d.source
})

const rawDoc = (d: Doc) =>
  new RawDoc({ docId: DocId.make(d.docId), title: d.title, body: d.body, categories: d.categories })

describe("TableFilter", () => {
  const counts = fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 8, maxLength: 8 })
  it("passes exactly the documents matches passes, and their chunks only", () =>
    fc.assert(
      fc.property(docs, counts, rule, (ds, chunkCounts, r) => {
        let at = 2
        const first = Int32Array.from(ds, (_, i) => (at += chunkCounts[i]! + 1) - chunkCounts[i]! - 1)
        const chunks = Int32Array.from(ds, (_, i) => chunkCounts[i]!)
        const table = new TableFilter({ first, chunks, positions: at + 3 })
        const read: ColumnReader = (column) =>
          ds.map((d) =>
            column === "doc_id" ? d.docId : column === "title" ? d.title : column === "source" ? d.source : d.categories
          )
        const expected = ds.map((d) => (matches(r, subjectOf(d)) ? 1 : 0))
        assert.deepStrictEqual([...table.documents(r, read)], expected)
        const { allowed, count, listed } = table.positions(r, read)
        const positions = ds
          .flatMap((_, i) =>
            expected[i] === 1 ? Array.from({ length: chunkCounts[i]! }, (_, c) => first[i]! + c) : []
          )
          .sort((a, b) => a - b)
        assert.deepStrictEqual(
          [...allowed.keys()].filter((p) => allowed[p] === 1),
          positions
        )
        assert.strictEqual(count, positions.length)
        if (listed !== undefined) assert.deepStrictEqual([...listed], positions)
      })
    ))
})

const chunker = new ChunkerConfig({ chunkSize: ChunkSize.make(12), overlap: Overlap.make(3), tailPolicy: "emit_short" })

const sourceOf = (corpus: ReadonlyArray<Doc>) =>
  Layer.succeed(
    DocumentSource,
    DocumentSource.of({
      read: () =>
        Stream.fromIterable(
          corpus.map((d) =>
            Result.succeed({
              source: d.source,
              line: 0,
              doc: rawDoc(d)
            })
          )
        ),
      size: () => Effect.succeed(0)
    })
  )

type Row = readonly [score: number, docId: string, start: number, end: number, text: string]

/** What a result is made of, for comparing answers. */
interface ResultLike {
  readonly score: number
  readonly chunk: { readonly docId: string; readonly start: number; readonly end: number; readonly text: string }
}

const rows = (answer: { readonly results: ReadonlyArray<ResultLike> }): Array<Row> =>
  answer.results.map((r) => [r.score, r.chunk.docId, r.chunk.start, r.chunk.end, r.chunk.text] as const)

const keyOfRow = (row: Row) => ({ score: row[0], docId: row[1], start: row[2], end: row[3], text: row[4] })

const keyOf = (row: Row) => `${row[1]}\u0000${row[2]}\u0000${row[3]}`

/** The reference hybrid answer: fuse the filtered rankings as the engine does, by keys instead of positions. */
const fuse = (lexical: ReadonlyArray<Row>, vector: ReadonlyArray<Row>, fusion: FusionConfig, k: number): Array<Row> => {
  const byKey = new Map<string, Row>()
  const numbers = new Map<string, number>()
  const tops = (ranking: ReadonlyArray<Row>): Array<Top> =>
    ranking.map((row) => {
      const key = keyOf(row)
      byKey.set(key, row)
      if (!numbers.has(key)) numbers.set(key, numbers.size)
      return { position: numbers.get(key)!, score: row[0] }
    })
  const lexicalTops = tops(lexical)
  const vectorTops = tops(vector)
  const fused =
    fusion.method === "linear"
      ? fuseLinear(lexicalTops, vectorTops, fusion.alpha)
      : fuseWeightedRanks(lexicalTops, vectorTops, fusion.alpha)
  const keys = [...numbers.keys()]
  return [...fused]
    .filter(([, score]) => score > 0)
    .map(([position, score]) => {
      const row = byKey.get(keys[position]!)!
      return [score, row[1], row[2], row[3], row[4]] as const
    })
    .sort((a, b) => rankingOrder(keyOfRow(a), keyOfRow(b)))
    .slice(0, k)
}

const Base = Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)

const fusions = [FusionConfig.default, new FusionConfig({ method: "rrf", alpha: FusionConfig.defaultAlpha("rrf") })]

describe("filtered queries", () => {
  it.effect(
    "answer the exact top k of the allowed chunks in every mode, with the whole index's BM25 statistics",
    () =>
      Effect.gen(function* () {
        const rules = fc.array(rule, { minLength: 1, maxLength: 4 })
        const cases = fc.sample(fc.tuple(docs, rules), { numRuns: 10, seed: 20261202 })
        let nonEmpty = 0
        for (const [corpus, rules] of cases) {
          yield* Effect.gen(function* () {
            yield* indexPaths(["/data"], { chunker })
            const allowedDocs = (r: Rule) => new Set(corpus.filter((d) => matches(r, subjectOf(d))).map((d) => d.docId))
            for (const text of ["moon light", "dark matter x"]) {
              const full = {
                lexical: rows(yield* queryIndex(text, 10_000, { mode: "lexical" })),
                vector: rows(yield* queryIndex(text, 10_000, { mode: "vector" }))
              }
              for (const r of rules) {
                const allowed = allowedDocs(r)
                for (const k of [1, 3]) {
                  for (const mode of ["lexical", "vector"] as const) {
                    const filtered = rows(yield* queryIndex(text, k, { mode, where: r }))
                    const expected = full[mode].filter((row) => allowed.has(row[1])).slice(0, k)
                    assert.deepStrictEqual(filtered, expected, `${mode} ${JSON.stringify(r)}`)
                    if (filtered.length > 0) nonEmpty++
                  }
                  for (const fusion of fusions) {
                    const hybrid = rows(yield* queryIndex(text, k, { mode: "hybrid", where: r, fusion }))
                    const expected = fuse(
                      full.lexical.filter((row) => allowed.has(row[1])),
                      full.vector.filter((row) => allowed.has(row[1])),
                      fusion,
                      k
                    )
                    assert.deepStrictEqual(hybrid, expected, `hybrid ${fusion.method} ${JSON.stringify(r)}`)
                  }
                }
              }
            }
          }).pipe(Effect.provide(Layer.mergeAll(layerTemporary, sourceOf(corpus))))
        }
        assert.isAbove(nonEmpty, 50, "most filters leave something to rank")
      }).pipe(Effect.provide(Base)),
    60_000
  )

  it.effect("follow the index as it changes, and a rule that keeps everything is no filter", () =>
    Effect.gen(function* () {
      const doc = (docId: string, labels: string): Doc => ({
        docId,
        title: docId,
        categories: labels,
        source: "/data/a.md",
        body: "moon light"
      })
      let corpus: ReadonlyArray<Doc> = [doc("a", "x"), doc("b", "y")]
      const source = Layer.succeed(
        DocumentSource,
        DocumentSource.of({
          read: () =>
            Stream.suspend(() =>
              Stream.fromIterable(corpus.map((d) => Result.succeed({ source: d.source, line: 0, doc: rawDoc(d) })))
            ),
          size: () => Effect.succeed(0)
        })
      )
      const idsOf = (where: Rule) =>
        Effect.map(queryIndex("moon", 10, { mode: "lexical", where }), (a) => a.results.map((r) => r.chunk.docId))
      yield* Effect.gen(function* () {
        yield* indexPaths(["/data"])
        assert.deepStrictEqual(yield* idsOf(eq("categories", "y")), ["b"])
        corpus = [doc("a", "y"), doc("b", "z"), doc("c", "y")]
        yield* indexPaths(["/data"])
        assert.deepStrictEqual((yield* idsOf(eq("categories", "y"))).sort(), ["a", "c"])
        assert.deepStrictEqual((yield* idsOf(keepAll)).sort(), ["a", "b", "c"])
        assert.deepStrictEqual(yield* idsOf(eq("categories", "none")), [])
      }).pipe(Effect.provide(Layer.mergeAll(layerTemporary, source)))
    }).pipe(Effect.provide(Base))
  )

  it.effect("refuse a rule on the body with one line, before reading the index", () =>
    Effect.gen(function* () {
      const where = all([eq("title", "a"), startsWith("body", "x")])
      const error = yield* Effect.flip(queryIndex("moon", 3, { where }))
      assert.strictEqual(error._tag, "QueryFilterInvalid")
      assert.strictEqual(
        error.message,
        "a query filter cannot use this rule: it reads body, but a query filter chooses documents by their fields, " +
          "not their text; filter by doc_id, title, categories or source (body works in keep rules, which see " +
          "documents as they are read)"
      )
    }).pipe(Effect.provide(Layer.mergeAll(layerTemporary, Base)))
  )
})
