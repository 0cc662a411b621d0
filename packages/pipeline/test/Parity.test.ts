/** Byte-for-byte parity with the Python reference on every case of `fixtures/golden.json`. */

import { createHash } from "node:crypto"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ChunkerConfig, ChunkSize, Overlap } from "@funcpipe/domain/Config"
import { CleanDoc, DocId, RawDoc } from "@funcpipe/domain/Document"
import { TopK } from "@funcpipe/domain/Query"
import { Effect, Layer, Result, Stream } from "effect"
import { chunkDoc } from "../src/analysis/Chunker.ts"
import { cleanDoc } from "../src/analysis/Clean.ts"
import { dedupChunks } from "../src/analysis/Dedup.ts"
import { embedChunk, embedText, LOCAL_SHA256 } from "../src/analysis/Embed.ts"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { parseCsvDocs } from "../src/read/Csv.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { cosineSimilarity, rawCosine } from "../src/search/Cosine.ts"
import { makeQuery } from "../src/search/Query.ts"
import { retrieve, vectorIndex } from "../src/search/Retrieve.ts"
import { layerTemporary } from "../src/store/sqlite/TempIndexStore.ts"
import { type GoldenEnv, golden, parseHexFloat } from "./Golden.ts"

const config = (env: GoldenEnv) =>
  new ChunkerConfig({
    chunkSize: ChunkSize.make(env.chunk_size),
    overlap: Overlap.make(env.overlap),
    tailPolicy: env.tail_policy
  })

const raw = (doc: { readonly doc_id: string; readonly title?: string; readonly abstract: string }) =>
  new RawDoc({ docId: DocId.make(doc.doc_id), title: doc.title ?? "", body: doc.abstract, categories: null })

const span = (c: { readonly docId: string; readonly start: number; readonly end: number; readonly text: string }) => ({
  doc_id: c.docId,
  start: c.start,
  end: c.end,
  text: c.text
})

const goldenSpan = (c: {
  readonly doc_id: string
  readonly start: number
  readonly end: number
  readonly text: string
}) => ({
  doc_id: c.doc_id,
  start: c.start,
  end: c.end,
  text: c.text
})

describe("parity: the golden file", () => {
  it("holds every case of the reference, so no section can pass by being empty", () => {
    assert.deepStrictEqual(
      {
        docs: golden.docs.length,
        chunkings: golden.docs.reduce((n, d) => n + d.chunkings.length, 0),
        embedText: golden.embed_text.length,
        dedup: golden.dedup.length,
        csv: golden.csv.length,
        retrievalQueries: golden.retrieval.queries.length,
        retrievalChunks: golden.retrieval.corpus_chunks.length > 0
      },
      { docs: 30, chunkings: 174, embedText: 15, dedup: 3, csv: 11, retrievalQueries: 6, retrievalChunks: true }
    )
  })
})

describe("parity: clean", () => {
  it.each(golden.docs.map((d) => [d.raw.doc_id, d] as const))("%s", (_, d) => {
    const cleaned = cleanDoc(
      new RawDoc({
        docId: DocId.make(d.raw.doc_id),
        title: d.raw.title,
        body: d.raw.abstract,
        categories: d.raw.categories
      })
    )
    assert.strictEqual(cleaned.body, d.clean.abstract)
    assert.strictEqual(cleaned.title, d.clean.title)
    assert.strictEqual(cleaned.categories, d.clean.categories)
    assert.strictEqual(Array.from(cleaned.body).length, d.clean_abstract_codepoints)
  })
})

const chunkingCases = golden.docs.flatMap((d) =>
  d.chunkings.map((c) => [`${d.raw.doc_id} ${c.env.chunk_size}/${c.env.overlap}/${c.env.tail_policy}`, d, c] as const)
)

describe("parity: chunk and embed", () => {
  it.each(chunkingCases)("%s", (_, d, c) => {
    const doc = new CleanDoc({
      docId: DocId.make(d.clean.doc_id),
      title: d.clean.title,
      body: d.clean.abstract,
      categories: null
    })
    const drafts = chunkDoc(doc, config(c.env))
    assert.deepStrictEqual(
      drafts.map((x) => [x.start, x.end]),
      c.spans.map(([s, e]) => [s, e])
    )
    assert.deepStrictEqual(drafts.map(span), c.chunks.map(goldenSpan))
    drafts.forEach((draft, i) => {
      const expected = c.chunks[i]!
      const chunk = embedChunk(draft)
      assert.strictEqual(chunk.embedding.model, "local-sha256")
      // float64 equality is bit equality here; the u16 words pin the same values exactly.
      assert.deepStrictEqual(chunk.embedding.vector, expected.embedding)
      assert.deepStrictEqual(
        chunk.embedding.vector.map((v) => Math.round(v * 65535)),
        expected.embedding_u16
      )
    })
  })
})

describe("parity: embed_text", () => {
  it.each(golden.embed_text.map((e) => [JSON.stringify(e.text).slice(0, 40), e] as const))("%s", (_, e) => {
    assert.strictEqual(createHash("sha256").update(e.text, "utf8").digest("hex"), e.sha256)
    const vector = embedText(e.text).vector
    assert.deepStrictEqual(vector, e.vector)
    assert.deepStrictEqual<ReadonlyArray<number>>(vector, e.vector_hex.map(parseHexFloat))
    assert.deepStrictEqual(
      vector.map((v) => v * 65535),
      e.u16
    )
  })
})

describe("parity: dedup", () => {
  it.each(golden.dedup.map((d) => [d.name, d] as const))("%s", (_, d) => {
    const pre = d.docs.flatMap((doc) => chunkDoc(cleanDoc(raw(doc)), config(d.env)))
    assert.deepStrictEqual(pre.map(span), d.pre_dedup.map(goldenSpan))
    assert.deepStrictEqual(dedupChunks(pre).map(span), d.deduped.map(goldenSpan))
  })
})

describe("parity: CSV, per-row reader", () => {
  it.each(golden.csv.map((c) => [c.name, c] as const))("%s", (_, c) => {
    const rows = parseCsvDocs(c.csv, "input.csv")
    assert.strictEqual(rows.length, c.result_filestorage.length)
    rows.forEach((row, i) => {
      const expected = c.result_filestorage[i]!
      if ("ok" in expected) {
        assert.isTrue(Result.isSuccess(row), `row ${i + 1} should be read`)
        if (Result.isSuccess(row)) {
          const doc = row.success
          assert.deepStrictEqual(
            { doc_id: doc.docId, title: doc.title, abstract: doc.body, categories: doc.categories },
            expected.ok
          )
        }
      } else {
        assert.isTrue(Result.isFailure(row), `row ${expected.err.row} should be an error`)
        if (Result.isFailure(row)) {
          assert.strictEqual(row.failure._tag, "BadRecord")
          assert.strictEqual(row.failure.source, "input.csv")
          assert.strictEqual(row.failure.line, expected.err.row + 1) // data row n sits on line n + 1 here
        }
      }
    })
  })
})

describe("parity: retrieval", () => {
  const r = golden.retrieval
  const chunks = r.corpus_docs.flatMap((doc) => chunkDoc(cleanDoc(raw(doc)), config(r.env)).map((d) => embedChunk(d)))
  const index = Result.getOrThrow(vectorIndex(LOCAL_SHA256, 16, chunks))

  it("indexes the corpus chunks the reference lists", () => {
    const sorted = dedupChunks(chunks)
    assert.deepStrictEqual(sorted.map(span), r.corpus_chunks.map(goldenSpan))
    sorted.forEach((c, i) => {
      assert.deepStrictEqual(c.embedding.vector, r.corpus_chunks[i]!.embedding)
    })
  })

  describe.each(r.queries.map((q) => [JSON.stringify(q.query_text), q] as const))("query %s", (_, q) => {
    it("cleans and embeds the query like a chunk", () => {
      const query = Result.getOrThrow(makeQuery(q.query_text, 1))
      assert.strictEqual(query.text, q.query_text_cleaned)
      assert.deepStrictEqual(query.embedding.vector, q.query_vector_cleaned)
      assert.deepStrictEqual(embedText(q.query_text).vector, q.query_vector)
    })

    it("scores every chunk to the bit, raw and clamped", () => {
      for (const expected of q.ranking_all) {
        const chunk = chunks.find((c) => c.docId === expected.doc_id && c.start === expected.start)!
        const rawScore = Result.getOrThrow(rawCosine(q.query_vector, chunk.embedding.vector))
        assert.strictEqual(rawScore, expected.score_raw_unclamped)
        const score = Result.getOrThrow(cosineSimilarity(q.query_vector, chunk.embedding.vector))
        assert.strictEqual(score, expected.score)
        assert.strictEqual(score, parseHexFloat(expected.score_hex))
      }
    })

    it("ranks every chunk in the reference order, ties and code point trap included", () => {
      const query = Result.getOrThrow(makeQuery(q.query_text_cleaned, chunks.length))
      const rawQuery = { ...query, embedding: embedText(q.query_text) } as typeof query
      const ranked = Result.getOrThrow(retrieve(rawQuery, index))
      assert.deepStrictEqual(
        ranked.map((x) => ({ ...span(x.chunk), score: x.score })),
        q.ranking_all.map((x) => ({ ...goldenSpan(x), score: x.score }))
      )
      assert.deepStrictEqual(
        ranked.map((x) => x.rank),
        ranked.map((_, i) => i + 1)
      )
    })

    it.each(Object.entries(q.top_k))("top_k = %s", (k, expected) => {
      const query = Result.getOrThrow(makeQuery(q.query_text_cleaned, TopK.make(Number(k))))
      const rawQuery = { ...query, embedding: embedText(q.query_text) } as typeof query
      const ranked = Result.getOrThrow(retrieve(rawQuery, index))
      assert.deepStrictEqual<ReadonlyArray<unknown>>(
        ranked.map((x) => [x.chunk.docId, x.chunk.start, x.chunk.end, x.chunk.text]),
        expected
      )
    })
  })

  it.each(r.self_similarity.map((s) => [JSON.stringify(s.text), s] as const))("self-similarity of %s", (_, s) => {
    const v = embedText(s.text).vector
    assert.strictEqual(Result.getOrThrow(rawCosine(v, v)), s.raw.value)
    assert.strictEqual(Result.getOrThrow(cosineSimilarity(v, v)), s.clamped.value)
  })
})

describe("parity: retrieval through the index, as the CLI and the server run it", () => {
  const r = golden.retrieval
  const source = Layer.succeed(
    DocumentSource,
    DocumentSource.of({
      read: () =>
        Stream.fromIterable(
          r.corpus_docs.map((doc, i) => Result.succeed({ source: "golden", line: i + 1, doc: raw(doc) }))
        ),
      size: () => Effect.succeed(0)
    })
  )
  const indexed = Layer.mergeAll(layerTemporary, source, Embedder.layerLocalSha256, NodeServices.layer)
  // The index cleans a query before embedding it, as it cleans bodies; the spec ranks by the raw text's vector, so a
  // query is compared with the spec's ranking of its cleaned text ("  Graph NE  " with that of "graph ne").
  const byText = new Map(r.queries.map((q) => [q.query_text, q] as const))
  const cases = r.queries.filter((q) => byText.has(q.query_text_cleaned))
  assert.isAtLeast(cases.length, r.queries.length - 1)

  it.effect.each(cases.map((q) => [JSON.stringify(q.query_text), q] as const))(
    "query %s ranks every chunk as the spec",
    ([, q]) =>
      Effect.gen(function* () {
        yield* indexPaths(["golden"], { chunker: config(r.env) })
        const expected = byText.get(q.query_text_cleaned)!.ranking_all
        const answer = yield* queryIndex(q.query_text, expected.length, { mode: "vector" })
        assert.deepStrictEqual(
          answer.results.map((x) => ({ ...span(x.chunk), score: x.score, kind: x.kind })),
          expected.map((x) => ({ ...goldenSpan(x), score: x.score, kind: "cosine" }))
        )
        assert.deepStrictEqual(
          answer.results.map((x) => x.rank),
          expected.map((_, i) => i + 1)
        )
      }).pipe(Effect.provide(indexed))
  )
})
