/** Properties of the pure stages over generated documents, configs and queries. */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, ChunkDraft } from "@funcpipe/domain/Chunk"
import {
  ChunkerConfig,
  ChunkSize,
  CleanerConfig,
  type CleanRule,
  Overlap,
  type TailPolicy
} from "@funcpipe/domain/Config"
import { CleanDoc, DocId, RawDoc } from "@funcpipe/domain/Document"
import { SearchQuery } from "@funcpipe/domain/Query"
import { RankedChunk, rankingOrder, rankKey } from "@funcpipe/domain/Ranking"
import { Result, Schema } from "effect"
import fc from "fast-check"
import { chunkDoc } from "../src/analysis/Chunker.ts"
import { cleanDoc, cleanText } from "../src/analysis/Clean.ts"
import { embedChunk, LOCAL_SHA256 } from "../src/analysis/Embed.ts"
import { csvRecords } from "../src/read/Csv.ts"
import { cosineSimilarity } from "../src/search/Cosine.ts"
import { makeQuery } from "../src/search/Query.ts"
import { anyScore, positiveScore, topChunks, topDocuments } from "../src/search/Ranker.ts"
import { retrieve, vectorIndex } from "../src/search/Retrieve.ts"

/** Characters that stress the stages: Python-only and JS-only whitespace, case pairs, astral and wide code points. */
const unit = fc.constantFrom(
  "a",
  "b",
  "c",
  "A",
  "B",
  " ",
  "  ",
  "\t",
  "\n",
  "\r\n",
  "\u000b",
  "\u001c",
  "\u0085",
  "\u00a0",
  "\u3000",
  "\ufeff",
  "É",
  "ß",
  "İ",
  "Σ",
  "😀",
  "～",
  "深",
  "\u0301",
  "𐐀"
)
const text = fc.string({ unit, maxLength: 40 })
const docIds = fc.constantFrom("a", "b", "doc-～", "doc-😀", "Doc-B")
const tailPolicy = fc.constantFrom<TailPolicy>("emit_short", "drop", "pad")
const chunker = fc
  .integer({ min: 1, max: 9 })
  .chain((size) =>
    fc.record({ size: fc.constant(size), overlap: fc.integer({ min: 0, max: size - 1 }), tail: tailPolicy })
  )
  .map(
    ({ overlap, size, tail }) =>
      new ChunkerConfig({ chunkSize: ChunkSize.make(size), overlap: Overlap.make(overlap), tailPolicy: tail })
  )
const rawDoc = fc
  .record({ docId: docIds, body: text })
  .map(({ body, docId }) => new RawDoc({ docId: DocId.make(docId), title: "", body, categories: null }))
// Short chunks over a small alphabet give many equal texts, hence many score ties.
const corpus = fc
  .array(rawDoc, { maxLength: 8 })
  .map((docs) =>
    docs.flatMap((doc) =>
      chunkDoc(
        cleanDoc(doc),
        new ChunkerConfig({ chunkSize: ChunkSize.make(2), overlap: Overlap.make(1), tailPolicy: "emit_short" })
      ).map((d) => embedChunk(d))
    )
  )
const queryText = fc.string({ unit: fc.constantFrom("a", "b", "c", "😀", "～"), minLength: 1, maxLength: 2 })

const ruleLists: ReadonlyArray<ReadonlyArray<CleanRule>> = [
  ["strip", "lower", "collapse_ws"],
  ["strip"],
  ["lower"],
  ["upper"],
  ["collapse_ws"],
  ["replace_newlines"],
  ["replace_newlines", "upper", "strip"],
  ["collapse_ws", "lower", "replace_newlines"]
]

const indexOf = (chunks: ReadonlyArray<Chunk>) => Result.getOrThrow(vectorIndex(LOCAL_SHA256, 16, chunks))
const keyOf = (r: RankedChunk) => [r.rank, r.score, r.chunk.docId, r.chunk.start, r.chunk.end, r.chunk.text] as const

// biome-ignore lint/suspicious/noExplicitAny: any schema at all, whatever its encoded side
const roundTrips = <S extends Schema.Codec<any, any>>(schema: S, value: S["Type"]): boolean =>
  Result.isSuccess(Schema.decodeUnknownResult(schema)(Schema.encodeSync(schema)(value)))

describe("clean", () => {
  it.each(ruleLists.map((rules) => [rules.join(","), rules] as const))("is idempotent with rules %s", (_, rules) => {
    const cleaner = new CleanerConfig({ rules })
    fc.assert(fc.property(text, (s) => cleanText(cleanText(s, cleaner), cleaner) === cleanText(s, cleaner)))
  })
})

describe("chunk", () => {
  it("with overlap 0 and emit_short, the chunk texts concatenate to the cleaned body", () => {
    fc.assert(
      fc.property(rawDoc, fc.integer({ min: 1, max: 12 }), (doc, size) => {
        const clean = cleanDoc(doc)
        const config = new ChunkerConfig({
          chunkSize: ChunkSize.make(size),
          overlap: Overlap.make(0),
          tailPolicy: "emit_short"
        })
        return (
          chunkDoc(clean, config)
            .map((c) => c.text)
            .join("") === clean.body
        )
      })
    )
  })

  it("every window's text is its code point span of the body (or the padded tail)", () => {
    fc.assert(
      fc.property(rawDoc, chunker, (doc, config) => {
        const points = Array.from(cleanDoc(doc).body)
        return chunkDoc(cleanDoc(doc), config).every(
          (c) =>
            c.text === points.slice(c.start, c.end).join("").padEnd(c.text.length, "\u0000") &&
            Array.from(c.text).length === (config.tailPolicy === "pad" ? config.chunkSize : c.end - c.start)
        )
      })
    )
  })
})

describe("retrieve", () => {
  it("gives the same result for every permutation of the index", () => {
    fc.assert(
      fc.property(
        corpus,
        queryText,
        fc.integer({ min: 1, max: 6 }),
        fc.infiniteStream(fc.nat()),
        (chunks, q, k, seeds) => {
          const query = Result.getOrThrow(makeQuery(q, k))
          const keys = [...seeds.take(chunks.length)]
          const shuffled = chunks
            .map((c, i) => [keys[i]!, c] as const)
            .sort((x, y) => x[0] - y[0])
            .map(([, c]) => c)
          const a = Result.getOrThrow(retrieve(query, indexOf(chunks))).map(keyOf)
          const b = Result.getOrThrow(retrieve(query, indexOf(shuffled))).map(keyOf)
          assert.deepStrictEqual(b, a)
        }
      )
    )
  })

  it("topK = k is a prefix of topK = k + 1", () => {
    fc.assert(
      fc.property(corpus, queryText, fc.integer({ min: 1, max: 10 }), (chunks, q, k) => {
        const index = indexOf(chunks)
        const small = Result.getOrThrow(retrieve(Result.getOrThrow(makeQuery(q, k)), index)).map(keyOf)
        const large = Result.getOrThrow(retrieve(Result.getOrThrow(makeQuery(q, k + 1)), index)).map(keyOf)
        assert.deepStrictEqual(large.slice(0, small.length), small)
        assert.strictEqual(small.length, Math.min(k, chunks.length))
      })
    )
  })

  it("equals a naive full sort of all chunks under the ranking order", () => {
    fc.assert(
      fc.property(corpus, queryText, fc.integer({ min: 1, max: 10 }), (chunks, q, k) => {
        const query = Result.getOrThrow(makeQuery(q, k))
        const naive = chunks
          .map((c) => ({
            c,
            key: rankKey(c, Result.getOrThrow(cosineSimilarity(query.embedding.vector, c.embedding.vector)))
          }))
          .sort((x, y) => rankingOrder(x.key, y.key))
          .slice(0, k)
          .map(({ c, key }) => [c.docId, c.start, c.end, c.text, key.score])
        const fast = Result.getOrThrow(retrieve(query, indexOf(chunks))).map((r) => [
          r.chunk.docId,
          r.chunk.start,
          r.chunk.end,
          r.chunk.text,
          r.score
        ])
        assert.deepStrictEqual(fast, naive)
      })
    )
  })
})

describe("every stage output decodes through its own schema", () => {
  it("clean docs, drafts, chunks, queries and ranked chunks", () => {
    fc.assert(
      fc.property(rawDoc, chunker, queryText, (doc, config, q) => {
        const clean = cleanDoc(doc)
        const drafts = chunkDoc(clean, config)
        const chunks = drafts.map((d) => embedChunk(d))
        const query = Result.getOrThrow(makeQuery(q, 3))
        const ranked = Result.getOrThrow(retrieve(query, indexOf(chunks)))
        return (
          roundTrips(CleanDoc, clean) &&
          drafts.every((d) => roundTrips(ChunkDraft, d)) &&
          chunks.every((c) => roundTrips(Chunk, c)) &&
          roundTrips(SearchQuery, query) &&
          ranked.every((r) => roundTrips(RankedChunk, r))
        )
      })
    )
  })
})

describe("ranking over any scores", () => {
  const scoresAndChunks = corpus.chain((chunks) =>
    fc.tuple(
      fc.constant(chunks),
      // Few distinct values, so many ties; NaN and 0 test the candidate rules.
      fc.array(fc.constantFrom(NaN, 0, 0.25, 0.5, 1, 2), { minLength: chunks.length, maxLength: chunks.length })
    )
  )
  const naive = (chunks: ReadonlyArray<Chunk>, scores: ReadonlyArray<number>, keep: (s: number) => boolean) =>
    chunks
      .map((c, position) => ({ position, key: rankKey(c, scores[position]!) }))
      .filter(({ key }) => keep(key.score))
      .sort((a, b) => rankingOrder(a.key, b.key))

  it("topChunks equals a naive full sort, for every candidate rule", () => {
    fc.assert(
      fc.property(scoresAndChunks, fc.integer({ min: 0, max: 12 }), ([chunks, scores], k) => {
        // Compared by key: two chunks with equal keys (the same span of the same document, read twice) are the same result.
        const keyAt = (position: number, score: number) => rankKey(chunks[position]!, score)
        for (const keep of [anyScore, positiveScore]) {
          const fast = topChunks(Float64Array.from(scores), chunks, k, keep).map((t) => keyAt(t.position, t.score))
          assert.deepStrictEqual(
            fast,
            naive(chunks, scores, keep)
              .slice(0, k)
              .map((x) => x.key)
          )
        }
      })
    )
  })

  it("topDocuments ranks each document by its best chunk", () => {
    fc.assert(
      fc.property(scoresAndChunks, fc.integer({ min: 0, max: 12 }), ([chunks, scores], k) => {
        const seen = new Set<string>()
        const expected = naive(chunks, scores, positiveScore)
          .filter(({ key }) => {
            if (seen.has(key.docId)) return false
            seen.add(key.docId)
            return true
          })
          .slice(0, k)
          .map((x) => x.key)
        const fast = topDocuments(Float64Array.from(scores), chunks, k, positiveScore)
        assert.deepStrictEqual(
          fast.map((t) => rankKey(chunks[t.position]!, t.score)),
          expected
        )
      })
    )
  })
})

describe("CSV records", () => {
  const cell = fc.string({ unit: fc.constantFrom("a", "b", ",", '"', "\n", "\r\n", " ", "é", "😀"), maxLength: 6 })
  const rows = fc.array(fc.array(cell, { minLength: 2, maxLength: 4 }), { minLength: 1, maxLength: 5 })
  const quote = (s: string) => `"${s.replace(/"/g, '""')}"`

  it("reads back any rows written with RFC 4180 quoting, line breaks inside quotes included", () => {
    fc.assert(
      fc.property(rows, fc.constantFrom("\n", "\r\n"), (table, eol) => {
        const text = table.map((row) => row.map(quote).join(",")).join(eol) + eol
        const records = csvRecords(text)
        assert.deepStrictEqual(
          records.map((r) => Result.getOrThrow(r.fields)),
          table
        )
        // Each record starts on the line after the previous record's last line.
        let line = 1
        records.forEach((r, i) => {
          assert.strictEqual(r.line, line)
          line += 1 + table[i]!.join("").split(/\r\n|\n/).length - 1
        })
      })
    )
  })
})
