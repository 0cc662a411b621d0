/** The ingest and search workflows over fake sources and embedders, and the index-to-retrieval proof. */
import { assert, describe, it } from "@effect/vitest"
import { ChunkerConfig, ChunkSize, Overlap } from "@funcpipe/domain/Config"
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { eq, not } from "@funcpipe/domain/Rule"
import { Effect, Fiber, Layer, Path, Result, Stream } from "effect"
import { TestClock } from "effect/testing"
import { chunkDoc } from "../src/analysis/Chunker.ts"
import { cleanDoc } from "../src/analysis/Clean.ts"
import { embedChunk, LOCAL_SHA256 } from "../src/analysis/Embed.ts"
import { Embedder } from "../src/models/Embedder.ts"
import { ingest } from "../src/programs/Ingest.ts"
import { searchPaths } from "../src/programs/Search.ts"
import { BadRecord } from "../src/read/BadRecord.ts"
import { DocumentSource, type SourceRecord } from "../src/read/DocumentSource.ts"
import { makeQuery } from "../src/search/Query.ts"
import { retrieve, vectorIndex } from "../src/search/Retrieve.ts"
import { countingEmbedder } from "./Sources.ts"

const doc = (docId: string, body: string) => new RawDoc({ docId: DocId.make(docId), title: "", body, categories: null })

const sourced = (docId: string, body: string) => ({ source: "mem", line: 0, doc: doc(docId, body) })

const sourceOf = (records: ReadonlyArray<SourceRecord>) =>
  Layer.mock(DocumentSource, { read: () => Stream.fromIterable(records) })

const records: ReadonlyArray<SourceRecord> = [
  Result.succeed(sourced("a", "Alpha beta gamma delta")),
  Result.fail(new BadRecord({ source: "rows.csv", line: 3, reason: "the row has 5 cells but the header has 4" })),
  Result.succeed(sourced("empty", " \n\t ")),
  Result.succeed(sourced("b", "Epsilon"))
]
const small = new ChunkerConfig({ chunkSize: ChunkSize.make(5), overlap: Overlap.make(0), tailPolicy: "emit_short" })

describe("ingest", () => {
  it.effect("counts records read, kept and skipped with reasons, and chunks in pipeline order", () =>
    Effect.gen(function* () {
      const { chunks, summary } = yield* ingest(["ignored"], { chunker: small })
      assert.deepStrictEqual(
        chunks.map((c) => c.docId),
        ["a", "a", "a", "a", "a", "b", "b"]
      )
      assert.deepStrictEqual(chunks.map((c) => c.text).join("|"), "alpha| beta| gamm|a del|ta|epsil|on")
      assert.deepStrictEqual(
        { ...summary, skipped: summary.skipped.map((s) => `${s.source}:${s.line}`) },
        {
          read: 4,
          kept: 2,
          dropped: undefined,
          skipped: ["rows.csv:3", "mem:0"],
          chunks: 7,
          elapsedMillis: 0
        }
      )
      assert.strictEqual(summary.skipped[1]!.reason, '"empty" has nothing left after cleaning')
    }).pipe(Effect.provide(Layer.mergeAll(sourceOf(records), Embedder.layerLocalSha256, Path.layer)))
  )

  it.effect("gives the same chunks whatever the embedding batch size", () =>
    Effect.gen(function* () {
      const one = yield* ingest([], { chunker: small, batchSize: 1 })
      const many = yield* ingest([], { chunker: small, batchSize: 1000 })
      assert.deepStrictEqual(one.chunks, many.chunks)
    }).pipe(Effect.provide(Layer.mergeAll(sourceOf(records), Embedder.layerLocalSha256, Path.layer)))
  )

  it.effect("calls the embedder in batches of the given size", () => {
    const calls: Array<number> = []
    const counting = countingEmbedder((texts) => {
      calls.push(texts.length)
    })
    return Effect.gen(function* () {
      yield* ingest([], { chunker: small, batchSize: 3 })
      assert.deepStrictEqual(calls, [3, 3, 1])
    }).pipe(Effect.provide(Layer.mergeAll(sourceOf(records), counting, Path.layer)))
  })

  it.effect("measures the run with the Clock", () => {
    const slow = Layer.mock(DocumentSource, {
      read: () => Stream.fromEffect(Effect.as(Effect.sleep("3 seconds"), Result.succeed(sourced("a", "x"))))
    })
    return Effect.gen(function* () {
      const fiber = yield* Effect.forkChild(ingest([]))
      yield* TestClock.adjust("3 seconds")
      const { summary } = yield* Fiber.join(fiber)
      assert.strictEqual(summary.elapsedMillis, 3000)
    }).pipe(Effect.provide(Layer.mergeAll(slow, Embedder.layerLocalSha256, Path.layer)))
  })

  it.effect("leaves out the documents the keep rule does not keep, and counts them", () =>
    Effect.gen(function* () {
      const { chunks, summary } = yield* ingest([], { chunker: small, keep: not(eq("doc_id", "a")) })
      assert.deepStrictEqual(
        chunks.map((c) => c.docId),
        ["b", "b"]
      )
      assert.deepStrictEqual([summary.read, summary.kept, summary.dropped, summary.skipped.length], [4, 1, 1, 2])
    }).pipe(Effect.provide(Layer.mergeAll(sourceOf(records), Embedder.layerLocalSha256, Path.layer)))
  )
})

describe("searchPaths", () => {
  it.effect("answers from an in-memory index, once per document even if a document comes twice", () =>
    Effect.gen(function* () {
      const { query, report, results } = yield* searchPaths([], "epsilon", 5, { mode: "vector" })
      assert.strictEqual(query.mode, "vector")
      assert.strictEqual(results[0]!.chunk.docId, "b")
      assert.closeTo(results[0]!.score, 1, 1e-12)
      assert.strictEqual(results.filter((r) => r.chunk.docId === "b").length, 1)
      assert.include(report.skipped.map((s) => s.reason).join("\n"), "was already read")
    }).pipe(Effect.provide(Layer.mergeAll(sourceOf([...records, records[3]!]), Embedder.layerLocalSha256, Path.layer)))
  )

  it.effect("answers lexically by default for local-sha256", () =>
    Effect.gen(function* () {
      const { query, results } = yield* searchPaths([], "gamma and delta", 5)
      assert.strictEqual(query.mode, "lexical")
      assert.deepStrictEqual(
        results.map((r) => [r.chunk.docId, r.kind]),
        [["a", "bm25"]]
      )
    }).pipe(Effect.provide(Layer.mergeAll(sourceOf(records), Embedder.layerLocalSha256, Path.layer)))
  )

  it.effect("searches each chunk together with its document's title", () => {
    const titled = Layer.succeed(
      DocumentSource,
      DocumentSource.of({
        read: () =>
          Stream.make(
            Result.succeed({
              source: "mem",
              line: 0,
              doc: new RawDoc({
                docId: DocId.make("z"),
                title: "Zebras",
                body: "Black and white stripes.",
                categories: null
              })
            })
          ),
        size: () => Effect.succeed(0)
      })
    )
    return Effect.gen(function* () {
      const { explanations, results } = yield* searchPaths([], "zebra", 3, { explain: true })
      assert.deepStrictEqual(
        results.map((r) => r.chunk.text),
        ["black and white stripes."]
      )
      assert.deepStrictEqual(
        explanations![0]!.bm25!.terms.map((t) => [t.term, t.tf]),
        [["zebra", 1]]
      )
    }).pipe(Effect.provide(Layer.mergeAll(titled, Embedder.layerLocalSha256, Path.layer)))
  })

  it.effect("rejects a blank query before reading anything", () => {
    let reads = 0
    const counting = Layer.mock(DocumentSource, {
      read: () => {
        reads++
        return Stream.empty
      }
    })
    return Effect.gen(function* () {
      const error = yield* Effect.flip(searchPaths(["x"], "   ", 3))
      assert.strictEqual(error._tag, "InvalidInput")
      assert.strictEqual(reads, 0)
    }).pipe(Effect.provide(Layer.mergeAll(counting, Embedder.layerLocalSha256, Path.layer)))
  })
})

describe("the index-to-retrieval proof", () => {
  it("indexes two documents and retrieves the exact local match first", () => {
    const docs = [
      doc("doc-1", "Graph Neural Networks for   Molecules"),
      doc("doc-2", "Transformers for protein folding")
    ]
    const chunks = docs.flatMap((d) => chunkDoc(cleanDoc(d)).map((draft) => embedChunk(draft)))
    const index = Result.getOrThrow(vectorIndex(LOCAL_SHA256, 16, chunks))
    const query = Result.getOrThrow(makeQuery("  graph neural networks for molecules ", 2))
    const ranked = Result.getOrThrow(retrieve(query, index))
    assert.strictEqual(ranked[0]!.chunk.docId, "doc-1")
    assert.strictEqual(ranked[0]!.chunk.text, "graph neural networks for molecules")
    // A self-similarity is 1 up to rounding (the reference gets 0.9999999999999999 for "abcd").
    assert.closeTo(ranked[0]!.score, 1, 1e-12)
    assert.strictEqual(ranked[0]!.rank, 1)
    assert.isBelow(ranked[1]!.score, 1)
  })
})
