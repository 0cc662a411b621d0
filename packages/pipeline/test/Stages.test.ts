/** Unit tests of the pure stages' contracts, bad input included. */
import { assert, beforeAll, describe, it } from "@effect/vitest"
import { ChunkerConfig, ChunkSize, CleanerConfig, Overlap } from "@funcpipe/domain/Config"
import { CleanDoc, DocId, labelsOf, RawDoc } from "@funcpipe/domain/Document"
import { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { Effect, Result } from "effect"
import { chunkDoc } from "../src/analysis/Chunker.ts"
import { cleanDoc, cleanText } from "../src/analysis/Clean.ts"
import { embedChunk, embedText, LOCAL_SHA256 } from "../src/analysis/Embed.ts"
import { csvRecords, parseCsvDocs } from "../src/read/Csv.ts"
import { fileDoc, loadYaml, needsYaml } from "../src/read/FileDoc.ts"
import { parseJsonlDocs, parseJsonlLine } from "../src/read/Jsonl.ts"
import { cosineSimilarity, rawCosine } from "../src/search/Cosine.ts"
import { makeQuery } from "../src/search/Query.ts"
import { retrieve, vectorIndex } from "../src/search/Retrieve.ts"

const doc = (docId: string, body: string) =>
  new RawDoc({ docId: DocId.make(docId), title: "T", body, categories: null })
const failureTag = <E extends { readonly _tag: string }>(r: Result.Result<unknown, E>) =>
  Result.isFailure(r) ? r.failure._tag : "success"

describe("cleanText", () => {
  it("applies the rules in order", () => {
    assert.strictEqual(cleanText("  A\nb  ", new CleanerConfig({ rules: ["replace_newlines", "upper"] })), "  A B  ")
    assert.strictEqual(cleanText("a\r\nb\rc\nd", new CleanerConfig({ rules: ["replace_newlines"] })), "a b c d")
    assert.strictEqual(cleanText("  Hello\u3000\u0085World\ufeff "), "hello world\ufeff")
  })
  it("leaves the title alone", () => {
    assert.strictEqual(cleanDoc(doc("a", "X")).title, "T")
  })
})

describe("chunkDoc", () => {
  const clean = new CleanDoc({ docId: DocId.make("d"), title: "", body: "a😀bcdefg", categories: null })
  const config = (tailPolicy: "emit_short" | "drop" | "pad") =>
    new ChunkerConfig({ chunkSize: ChunkSize.make(3), overlap: Overlap.make(1), tailPolicy })
  it("counts code points, so an emoji is one position", () => {
    assert.deepStrictEqual(
      chunkDoc(clean, config("emit_short")).map((c) => [c.start, c.end, c.text]),
      [
        [0, 3, "a😀b"],
        [2, 5, "bcd"],
        [4, 7, "def"],
        [6, 8, "fg"]
      ]
    )
  })
  it("drops or pads the short tail", () => {
    assert.deepStrictEqual(
      chunkDoc(clean, config("drop")).map((c) => c.end),
      [3, 5, 7]
    )
    assert.deepStrictEqual(chunkDoc(clean, config("pad")).at(-1)?.text, "fg\u0000")
    assert.deepStrictEqual(chunkDoc(clean, config("pad")).at(-1)?.end, 9)
  })
  it("yields no chunks for an empty body", () => {
    assert.deepStrictEqual(chunkDoc(cleanDoc(doc("e", " \t ")), ChunkerConfig.default), [])
  })
})

describe("cosineSimilarity", () => {
  it("fails on a dimension mismatch, an empty or a zero vector", () => {
    assert.strictEqual(failureTag(cosineSimilarity([1, 2], [1, 2, 3])), "DimensionMismatch")
    assert.strictEqual(failureTag(cosineSimilarity([], [])), "ZeroVector")
    assert.strictEqual(failureTag(cosineSimilarity([0, 0], [1, 1])), "ZeroVector")
  })
  it("clamps to [-1, 1] what rounding pushes past it", () => {
    // A vector with itself (and its negation) whose float sums land a hair outside [-1, 1].
    const v = [0.9092974268256817, -0.8568887533689473, 0.9854497299884601]
    const w = v.map((x) => -x)
    assert.strictEqual(Result.getOrThrow(rawCosine(v, v)), 1.0000000000000002)
    assert.strictEqual(Result.getOrThrow(rawCosine(v, w)), -1.0000000000000002)
    assert.strictEqual(Result.getOrThrow(cosineSimilarity(v, v)), 1)
    assert.strictEqual(Result.getOrThrow(cosineSimilarity(v, w)), -1)
  })
})

describe("makeQuery", () => {
  it("rejects a blank query and a bad top-k with readable errors", () => {
    const blank = makeQuery(" \u3000 ", 3)
    assert.strictEqual(failureTag(blank), "InvalidInput")
    if (Result.isFailure(blank)) assert.include(blank.failure.message, "the query is blank")
    for (const k of [0, -1, 1.5, NaN, true]) assert.strictEqual(failureTag(makeQuery("q", k)), "InvalidInput")
  })
})

describe("retrieve", () => {
  const chunks = chunkDoc(cleanDoc(doc("a", "graph neural networks")), ChunkerConfig.default).map((d) => embedChunk(d))
  const index = Result.getOrThrow(vectorIndex(LOCAL_SHA256, 16, chunks))
  it("refuses a query from another model before scoring", () => {
    const query = Result.getOrThrow(
      makeQuery(
        "graph",
        1,
        CleanerConfig.default,
        (t) => new Embedding({ vector: embedText(t).vector, model: ModelLabel.make("other-model") })
      )
    )
    assert.strictEqual(failureTag(retrieve(query, index)), "ModelMismatch")
  })
  it("refuses chunks of mixed models or dimensions when laying out the index", () => {
    const odd = embedChunk(chunks[0]!, new Embedding({ vector: [1, 2], model: LOCAL_SHA256 }))
    assert.strictEqual(failureTag(vectorIndex(LOCAL_SHA256, 16, [...chunks, odd])), "DimensionMismatch")
    assert.strictEqual(failureTag(vectorIndex(ModelLabel.make("m"), 16, chunks)), "ModelMismatch")
  })
  it("returns at most as many results as there are chunks", () => {
    assert.strictEqual(Result.getOrThrow(retrieve(Result.getOrThrow(makeQuery("x", 50)), index)).length, chunks.length)
  })
})

describe("CSV reading", () => {
  it("keeps quoted line breaks and reports the line each record starts on", () => {
    const records = csvRecords('h1,h2\n"a\nb",c\nd,e')
    assert.deepStrictEqual(
      records.map((r) => [r.line, Result.getOrThrow(r.fields)]),
      [
        [1, ["h1", "h2"]],
        [2, ["a\nb", "c"]],
        [4, ["d", "e"]]
      ]
    )
  })
  it("makes an unclosed quote that record's error, while earlier rows flow", () => {
    const rows = parseCsvDocs('doc_id,title,abstract,categories\n1,T,A,c\n2,T,"open,c\n', "x.csv")
    assert.isTrue(Result.isSuccess(rows[0]!))
    assert.strictEqual(failureTag(rows[1]!), "BadRecord")
    if (Result.isFailure(rows[1]!)) {
      assert.strictEqual(
        rows[1].failure.message,
        "x.csv:3: a quoted field that starts on line 3 is never closed, so line 3 (the rest of the file) could not be " +
          "read as rows; close the quote to read them"
      )
    }
  })
  it("says how many lines an unclosed quote left unread", () => {
    const rows = parseCsvDocs('doc_id,title,abstract,categories\n1,T,"open\n2,T,A\n3,T,A\n', "x.csv")
    assert.strictEqual(rows.length, 1)
    assert.match(Result.isFailure(rows[0]!) ? rows[0].failure.message : "", /^x\.csv:2: .* so lines 2 to 4 \(the rest/)
  })
  it("rejects an empty doc id and a row lacking the abstract, naming the line", () => {
    const rows = parseCsvDocs("doc_id,title,abstract,categories\n,T,A,c\n3,T\n", "y.csv")
    assert.deepStrictEqual(
      rows.map((r) => (Result.isFailure(r) ? r.failure.line : 0)),
      [2, 3]
    )
    if (Result.isFailure(rows[0]!)) assert.include(rows[0].failure.message, "a document id must not be empty")
  })
})

describe("JSONL reading", () => {
  it("reads the id, body and title aliases and keeps going past a bad line", () => {
    const rows = parseJsonlDocs(
      [
        `{"id": 7, "title": "T", "text": "body"}`,
        ``,
        `{"doc_id": "x", "abstract": "a", "categories": ["cs.AI", "cs.LG"]}`,
        `not json`,
        `{"_id": "z"}`,
        `{"doc_id": "y", "body": "b"}`
      ].join("\n"),
      "c.jsonl"
    )
    assert.deepStrictEqual(
      rows.map((r) => (Result.isSuccess(r) ? r.success.docId : `line ${r.failure.line}`)),
      ["7", "x", "line 4", "line 5", "y"]
    )
    assert.strictEqual(Result.isSuccess(rows[1]!) ? rows[1].success.categories : "", "cs.AI cs.LG")
  })
})

describe("fileDoc", () => {
  it("takes a Markdown file's first heading as its title", () => {
    const d = Result.getOrThrow(fileDoc("notes/intro.md", "Some text\n\n## Getting started ##\nbody"))
    assert.deepStrictEqual([d.docId, d.title, d.categories], ["notes/intro.md", "Getting started", null])
  })
  it("falls back to the file name", () => {
    assert.strictEqual(Result.getOrThrow(fileDoc("a/b.txt", "# not a heading in text")).title, "b.txt")
    assert.strictEqual(Result.getOrThrow(fileDoc("c.md", "no heading")).title, "c.md")
  })
})

describe("front matter", () => {
  beforeAll(() => Effect.runPromise(loadYaml))
  const doc = (text: string, name = "n.md") => fileDoc(name, text)

  it("is what needs the YAML parser, which a reader loads only then", () => {
    assert.isTrue(needsYaml("n.md", "---\ntags: [a]\n---\nbody"))
    assert.isTrue(needsYaml("N.MARKDOWN", "---\n---\n"))
    assert.isFalse(needsYaml("n.txt", "---\ntags: [a]\n---\nbody"), "only Markdown has front matter")
    assert.isFalse(needsYaml("n.md", "body\n---\ntags: [a]\n---\n"), "only at the very start")
  })
  const labels = (text: string) => labelsOf(Result.getOrThrow(doc(text)).categories)

  it("refuses front matter nested deeper than 64 levels with one clear reason, not a stack overflow", () => {
    for (const tags of [
      "[".repeat(5_000) + "a" + "]".repeat(5_000),
      "\n" + Array.from({ length: 3_000 }, (_, i) => `${"  ".repeat(i + 1)}- `).join("\n")
    ]) {
      const read = doc(`---\ntitle: x\ntags: ${tags}\n---\nbody\n`)
      assert.isTrue(Result.isFailure(read))
      const reason = Result.isFailure(read) ? read.failure.reason : ""
      assert.match(reason, /^the front matter \(the --- block at the top\) is nested more than 64 levels deep/)
    }
    // Explicit keys nest in a way brackets and indentation do not show: the parser's overflow gets the same reason.
    const keys = doc(`---\ntitle: x\nkey: ${"? ".repeat(5_000)}a\n---\nbody\n`)
    if (Result.isFailure(keys)) assert.match(keys.failure.reason, /nested more than 64 levels deep|not valid YAML/)
    assert.notMatch(Result.isFailure(keys) ? keys.failure.reason : "", /call stack/)
    // Brackets inside a quoted title are text, not nesting.
    assert.isTrue(Result.isSuccess(doc(`---\ntitle: "${"[".repeat(70)}"\n---\nbody\n`)))
    // 30 levels are fine.
    assert.isTrue(Result.isSuccess(doc(`---\nother: ${"[".repeat(30)}a${"]".repeat(30)}\n---\nbody\n`)))
  })

  it("fills the categories from tags and categories, and leaves the block out of the body and the title", () => {
    const d = Result.getOrThrow(
      doc(
        "---\n# a comment, not a heading\ntitle: T\ncategories: [astro-ph.GA]\n" +
          "tags:\n  - machine learning\n  - 2024\n  - astro-ph.GA\n---\n# Heading\nbody\n"
      )
    )
    assert.deepStrictEqual(labelsOf(d.categories), ["astro-ph.GA", "machine learning", "2024"])
    assert.strictEqual(d.body, "# Heading\nbody\n")
    assert.strictEqual(d.title, "Heading")
  })
  it("reads a string of tags as labelsOf splits one, and a .markdown file too", () => {
    assert.deepStrictEqual(labels("---\ntags: rust, effect\n---\nx"), ["rust", "effect"])
    assert.deepStrictEqual(labels("---\r\ntags: rust effect\r\n...\r\nx"), ["rust", "effect"])
    assert.deepStrictEqual(labelsOf(Result.getOrThrow(doc("---\ntags: a\n---\nx", "n.markdown")).categories), ["a"])
  })
  it("no tags, an empty block or no block: no categories", () => {
    assert.strictEqual(Result.getOrThrow(doc("---\ntitle: x\n---\nbody")).categories, null)
    const empty = Result.getOrThrow(doc("---\n---\nbody"))
    assert.deepStrictEqual([empty.body, empty.categories], ["body", null])
    assert.strictEqual(Result.getOrThrow(doc("text\n---\ntags: a\n---\n")).categories, null)
  })
  it("a block that is not a mapping is text, as in a file that starts with a thematic break", () => {
    const text = "---\nJust a line\n---\nmore"
    assert.deepStrictEqual([Result.getOrThrow(doc(text)).body, Result.getOrThrow(doc(text)).categories], [text, null])
    assert.strictEqual(Result.getOrThrow(doc("---\n- a list\n---\n")).categories, null)
  })
  it("only Markdown files have front matter", () => {
    const text = "---\ntags: a\n---\nx"
    const plain = Result.getOrThrow(doc(text, "n.txt"))
    assert.deepStrictEqual([plain.body, plain.categories], [text, null])
  })
  it("front matter that is not valid YAML is a bad record naming its line", () => {
    const result = doc("---\ntitle: ok\ntags: [a, b\n---\nx")
    assert.isTrue(Result.isFailure(result))
    if (Result.isFailure(result)) {
      assert.strictEqual(result.failure.line, 3)
      assert.match(result.failure.reason, /^the front matter \(the --- block at the top\) is not valid YAML: /)
    }
  })
  it("tags that are not words are a bad record", () => {
    const result = doc("---\ntags: [a, {b: 1}]\n---\nx")
    assert.deepStrictEqual(
      Result.isFailure(result) ? result.failure.reason : "",
      '"tags" in the front matter must be a word, a list of words or a string of them, not a list holding a mapping'
    )
  })
})

describe("JSONL categories", () => {
  it("a list keeps its labels, spaces and commas included", () => {
    const categoriesOf = (line: string) => {
      const result = parseJsonlLine(line, 1, "c.jsonl")
      return result !== undefined && Result.isSuccess(result) ? labelsOf(result.success.categories) : undefined
    }
    assert.deepStrictEqual(categoriesOf(`{"id":1,"text":"x","categories":["cs.AI","cs.LG"]}`), ["cs.AI", "cs.LG"])
    assert.deepStrictEqual(categoriesOf(`{"id":1,"text":"x","categories":["Machine Learning","a,b"]}`), [
      "Machine Learning",
      "a,b"
    ])
    assert.deepStrictEqual(categoriesOf(`{"id":1,"text":"x","categories":"cs.AI, cs.LG"}`), ["cs.AI", "cs.LG"])
  })
})
