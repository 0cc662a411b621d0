import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import { Chunk, ChunkDraft, Offset } from "../src/Chunk.ts"
import { ChunkerConfig, CleanerConfig } from "../src/Config.ts"
import { decodeAs } from "../src/Decode.ts"
import { DocId, RawDoc } from "../src/Document.ts"
import { Embedding, ModelLabel } from "../src/Embedding.ts"
import { SearchQuery, TopK } from "../src/Query.ts"
import { RankedChunk } from "../src/Ranking.ts"

const accepts = (schema: Schema.ConstraintDecoder<unknown>, input: unknown) =>
  Result.isSuccess(Schema.decodeUnknownResult(schema)(input))

const embedding = { vector: [0.5, 1], model: "local-sha256" }
const chunk = { docId: "a", start: 0, end: 2, text: "ab", embedding }

describe("TopK", () => {
  it("accepts positive integers", () => {
    assert.isTrue(accepts(TopK, 1))
    assert.isTrue(accepts(TopK, 1000))
  })
  it.each([true, 0, -1, 1.5, NaN, Infinity, "3", null])("rejects %s", (input) => {
    assert.isFalse(accepts(TopK, input))
  })
})

describe("scalar values", () => {
  it("DocId must not be empty", () => {
    assert.isTrue(accepts(DocId, "x"))
    assert.isFalse(accepts(DocId, ""))
  })
  it("Offset is an integer of at least 0", () => {
    assert.isTrue(accepts(Offset, 0))
    assert.isFalse(accepts(Offset, -1))
    assert.isFalse(accepts(Offset, 0.5))
  })
  it("ModelLabel is a plain label", () => {
    assert.isTrue(accepts(ModelLabel, "local-sha256"))
    assert.isFalse(accepts(ModelLabel, ""))
    assert.isFalse(accepts(ModelLabel, "has space"))
  })
})

describe("RawDoc", () => {
  it("takes null categories for sources without them", () => {
    assert.isTrue(accepts(RawDoc, { docId: "a", title: "", body: "x", categories: null }))
  })
  it("rejects a lone surrogate that has no UTF-8 encoding", () => {
    assert.isFalse(accepts(RawDoc, { docId: "a", title: "", body: "x\ud800", categories: null }))
  })
})

describe("ChunkDraft and Chunk", () => {
  it("require start <= end", () => {
    assert.isTrue(accepts(ChunkDraft, { docId: "a", start: 3, end: 3, text: "" }))
    assert.isFalse(accepts(ChunkDraft, { docId: "a", start: 4, end: 3, text: "" }))
    assert.isFalse(accepts(Chunk, { ...chunk, start: 5 }))
  })
  it("Chunk needs a valid embedding", () => {
    assert.isTrue(accepts(Chunk, chunk))
    assert.isFalse(accepts(Chunk, { ...chunk, embedding: { ...embedding, vector: [] } }))
  })
})

describe("Embedding", () => {
  it("needs a non-empty vector of finite components", () => {
    assert.isTrue(accepts(Embedding, embedding))
    assert.isFalse(accepts(Embedding, { ...embedding, vector: [] }))
    assert.isFalse(accepts(Embedding, { ...embedding, vector: [1, NaN] }))
    assert.isFalse(accepts(Embedding, { ...embedding, vector: [Infinity] }))
  })
})

describe("SearchQuery", () => {
  it("rejects blank text, Python whitespace included", () => {
    assert.isTrue(accepts(SearchQuery, { text: "q", embedding, topK: 3 }))
    assert.isFalse(accepts(SearchQuery, { text: " \t\u3000\u001c\u0085", embedding, topK: 3 }))
  })
  it("counts U+FEFF as text, as Python does", () => {
    assert.isTrue(accepts(SearchQuery, { text: "\ufeff", embedding, topK: 1 }))
  })
})

describe("RankedChunk", () => {
  it("needs a finite score in its kind's range and a rank of at least 1", () => {
    assert.isTrue(accepts(RankedChunk, { chunk, score: -1, rank: 1, kind: "cosine" }))
    assert.isFalse(accepts(RankedChunk, { chunk, score: 1.0000000000000002, rank: 1, kind: "cosine" }))
    assert.isFalse(accepts(RankedChunk, { chunk, score: NaN, rank: 1, kind: "cosine" }))
    assert.isFalse(accepts(RankedChunk, { chunk, score: 0.5, rank: 0, kind: "cosine" }))
    assert.isTrue(accepts(RankedChunk, { chunk, score: 7.5, rank: 1, kind: "bm25" }))
    assert.isFalse(accepts(RankedChunk, { chunk, score: 0, rank: 1, kind: "bm25" }))
    assert.isTrue(accepts(RankedChunk, { chunk, score: 1, rank: 2, kind: "rrf" }))
    assert.isFalse(accepts(RankedChunk, { chunk, score: 1.5, rank: 2, kind: "linear" }))
    assert.isFalse(accepts(RankedChunk, { chunk, score: 0.5, rank: 1, kind: "dot" }))
  })
})

describe("configs", () => {
  it("ChunkerConfig requires overlap < chunkSize", () => {
    assert.isTrue(accepts(ChunkerConfig, { chunkSize: 5, overlap: 4, tailPolicy: "drop" }))
    assert.isFalse(accepts(ChunkerConfig, { chunkSize: 5, overlap: 5, tailPolicy: "drop" }))
    assert.isFalse(accepts(ChunkerConfig, { chunkSize: 0, overlap: 0, tailPolicy: "drop" }))
  })
  it("ChunkerConfig knows only the three tail policies", () => {
    assert.isFalse(accepts(ChunkerConfig, { chunkSize: 5, overlap: 0, tailPolicy: "truncate" }))
  })
  it("CleanerConfig knows only the reference's rule names", () => {
    assert.isTrue(accepts(CleanerConfig, { rules: ["strip", "replace_newlines"] }))
    assert.isFalse(accepts(CleanerConfig, { rules: ["strip", "stem"] }))
  })
  it("defaults are the reference's", () => {
    assert.deepStrictEqual(CleanerConfig.default.rules, ["strip", "lower", "collapse_ws"])
    assert.strictEqual(ChunkerConfig.default.chunkSize, 512)
    assert.strictEqual(ChunkerConfig.default.overlap, 0)
    assert.strictEqual(ChunkerConfig.default.tailPolicy, "emit_short")
  })
})

describe("decodeAs", () => {
  it("reports what was wrong on one line, naming the subject", () => {
    const result = decodeAs(ChunkerConfig, "chunking flags")({ chunkSize: 4, overlap: 9, tailPolicy: "pad" })
    assert.isTrue(Result.isFailure(result))
    if (Result.isFailure(result)) {
      assert.strictEqual(result.failure._tag, "InvalidInput")
      assert.include(
        result.failure.message,
        "invalid chunking flags: overlap (9) must be smaller than the chunk size (4)"
      )
      assert.notInclude(result.failure.message, "\n")
    }
  })
})
