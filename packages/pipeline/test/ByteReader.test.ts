/** The incremental readers of CSV and JSONL bytes: any cut into pieces gives the records of the whole-text parsers. */
import { assert, describe, it } from "@effect/vitest"
import type { RawDoc } from "@funcpipe/domain/Document"
import { Result } from "effect"
import fc from "fast-check"
import type { BadRecord } from "../src/read/BadRecord.ts"
import {
  BINARY_FILE,
  type ByteReader,
  completeUtf8Length,
  type LineDoc,
  type LineResult,
  NOT_UTF8,
  sniffBinary
} from "../src/read/ByteReader.ts"
import { csvReader, csvRecords, csvSplitter, parseCsvDocs } from "../src/read/Csv.ts"
import { jsonlReader, LINE_HAS_NUL, LINE_NOT_UTF8, parseJsonlDocs } from "../src/read/Jsonl.ts"

const encode = (text: string) => new TextEncoder().encode(text)
const bytesOf = (...parts: ReadonlyArray<string | ReadonlyArray<number>>) =>
  Uint8Array.from(parts.flatMap((p) => (typeof p === "string" ? [...encode(p)] : p)))

/** `bytes` cut into pieces whose sizes cycle through `sizes`; each piece is a copy in a buffer that is then wiped. */
const feed = (reader: ByteReader, bytes: Uint8Array, sizes: ReadonlyArray<number>): Array<LineResult> => {
  const out: Array<LineResult> = []
  const buffer = new Uint8Array(Math.max(...sizes))
  for (let at = 0, i = 0; at < bytes.length && !reader.done(); i++) {
    const size = sizes[i % sizes.length]!
    const piece = bytes.subarray(at, at + size)
    buffer.set(piece)
    out.push(...reader.push(buffer.subarray(0, piece.length)))
    buffer.fill(0xff) // a reader that kept the buffer instead of copying would now see other bytes
    at += size
  }
  if (!reader.done()) out.push(...reader.end())
  return out
}

/** The records without the lines of their documents, so a reader's output compares with the whole-text parsers'. */
const summarize = (records: ReadonlyArray<Result.Result<RawDoc | LineDoc, BadRecord>>) =>
  records.map((r) => {
    if (Result.isFailure(r)) return ["bad", r.failure.source, r.failure.line, r.failure.reason]
    const success: RawDoc | LineDoc = r.success
    const doc = "doc" in success ? success.doc : success
    return ["doc", doc.docId, doc.title, doc.body, doc.categories]
  })

/** The doc id and starting line of each document read. */
const linesOf = (records: ReadonlyArray<LineResult>) =>
  records.flatMap((r) => (Result.isSuccess(r) ? [[r.success.doc.docId, r.success.line]] : []))

const sizes = fc.array(fc.integer({ min: 1, max: 13 }), { minLength: 1, maxLength: 5 })
const bom = fc.constantFrom("", "\ufeff")

describe("jsonlReader", () => {
  const text = fc.string({ unit: fc.constantFrom("a", "é", "😀", "中", " ", '"', "\\", "\u2028"), maxLength: 8 })
  const line = fc.oneof(
    fc
      .record({ id: fc.oneof(text, fc.integer()), title: text, text, categories: fc.array(text, { maxLength: 2 }) })
      .map((o) => JSON.stringify(o)),
    fc.record({ doc_id: text, abstract: fc.constant(null), body: text }).map((o) => JSON.stringify(o)),
    fc.string({ unit: fc.constantFrom("{", "}", "[", "]", '"', ":", ",", "1", "a", "é", " ", "\r"), maxLength: 8 })
  )
  const eol = fc.constantFrom("\n", "\r\n")
  const document = fc
    .tuple(bom, fc.array(fc.tuple(line, eol), { maxLength: 8 }), fc.option(line))
    .map(([mark, lines, last]) => mark + lines.map(([l, e]) => l + e).join("") + (last ?? ""))

  it("gives the records of parseJsonlDocs however the bytes are cut, characters and CRLF split included", () => {
    fc.assert(
      fc.property(document, sizes, (content, cuts) => {
        const expected = summarize(parseJsonlDocs(content.replace(/^\ufeff/, ""), "in.jsonl"))
        assert.deepStrictEqual(summarize(feed(jsonlReader("in.jsonl"), encode(content), cuts)), expected)
        assert.deepStrictEqual(summarize(feed(jsonlReader("in.jsonl"), encode(content), [7])), expected)
      }),
      { numRuns: 300 }
    )
  })

  it("skips a line that is not UTF-8 or holds a NUL byte, and reads the lines around it", () => {
    const bytes = bytesOf(
      '{"id":"a","text":"é"}\n{"id":"b","text":"',
      [0xff, 0xfe],
      '"}\r\n{"id":"c","text":"',
      [0],
      '"}\n{"id":"d","text":"😀"}'
    )
    for (const cuts of [[bytes.length], [7], [1, 2, 3]]) {
      assert.deepStrictEqual(summarize(feed(jsonlReader("x.jsonl"), bytes, cuts)), [
        ["doc", "a", "", "é", null],
        ["bad", "x.jsonl", 2, LINE_NOT_UTF8],
        ["bad", "x.jsonl", 3, LINE_HAS_NUL],
        ["doc", "d", "", "😀", null]
      ])
    }
  })

  it("skips a line longer than the limit, wherever the pieces end, and goes on with the next line", () => {
    const long = JSON.stringify({ id: "long", text: "x".repeat(40) })
    const bytes = encode(`{"id":"a","text":"1"}\n${long}\r\n{"id":"b","text":"2"}\n${long}`)
    for (const cuts of [[bytes.length], [7], [3, 50], [100]]) {
      assert.deepStrictEqual(summarize(feed(jsonlReader("x.jsonl", 30), bytes, cuts)), [
        ["doc", "a", "", "1", null],
        ["bad", "x.jsonl", 2, "the line is longer than 30 bytes, skipped"],
        ["doc", "b", "", "2", null],
        ["bad", "x.jsonl", 4, "the line is longer than 30 bytes, skipped"]
      ])
    }
  })
})

describe("csvSplitter", () => {
  const csv = fc.string({ unit: fc.constantFrom("a", "é", "😀", ",", '"', "\n", "\r", "\r\n", " "), maxLength: 40 })

  it("gives the records of csvRecords however the text is cut, between \\r and \\n included", () => {
    fc.assert(
      fc.property(csv, fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 6 }), (text, cuts) => {
        const splitter = csvSplitter()
        const records = []
        let at = 0
        for (const cut of [...cuts].sort((a, b) => a - b)) {
          records.push(...splitter.push(text.slice(at, Math.max(at, cut))))
          at = Math.max(at, cut)
        }
        records.push(...splitter.push(text.slice(at)), ...splitter.end())
        assert.deepStrictEqual(records, csvRecords(text))
      }),
      { numRuns: 500 }
    )
  })

  it("stops at a record longer than the limit", () => {
    const splitter = csvSplitter(10)
    const records = [...splitter.push('a,b\n"0123456789'), ...splitter.push('abc",d\ne,f\n'), ...splitter.end()]
    assert.deepStrictEqual(records, [
      { line: 1, fields: Result.succeed(["a", "b"]) },
      {
        line: 2,
        fields: Result.fail(
          "the record that starts on line 2 is longer than 10 bytes, so the rest of the file is skipped; is a quote " +
            "left open?"
        )
      }
    ])
    assert.isTrue(splitter.stopped())
  })
})

describe("csvReader", () => {
  const header = fc.constantFrom(
    "doc_id,title,abstract,categories",
    "title,doc_id,categories,abstract",
    "doc_id,title,body"
  )
  const unit = fc.constantFrom("a", "1", "é", "😀", ",", '"', "\n", "\r", "\r\n", " ")
  const body = fc.string({ unit, maxLength: 60 })
  const eol = fc.constantFrom("\n", "\r\n", "\r")
  const document = fc.tuple(bom, header, eol, body).map(([mark, h, e, b]) => `${mark}${h}${e}${b}`)

  it("gives the records of parseCsvDocs however the bytes are cut, characters and CRLF split included", () => {
    fc.assert(
      fc.property(document, sizes, (content, cuts) => {
        const expected = summarize(parseCsvDocs(content.replace(/^\ufeff/, ""), "in.csv"))
        assert.deepStrictEqual(summarize(feed(csvReader("in.csv"), encode(content), cuts)), expected)
        assert.deepStrictEqual(summarize(feed(csvReader("in.csv"), encode(content), [7])), expected)
      }),
      { numRuns: 300 }
    )
  })

  it("reads the rows before bytes that are not UTF-8 and ends the file there with the line", () => {
    const bytes = bytesOf('doc_id,title,abstract,categories\r\n1,T,"é\r\nx",c\r\n2,T,', [0xc3, 0x28], ",c\n3,T,A,c\n")
    for (const cuts of [[bytes.length], [7], [1]]) {
      const reader = csvReader("x.csv")
      assert.deepStrictEqual(summarize(feed(reader, bytes, cuts)), [
        ["doc", "1", "T", "é\r\nx", "c"],
        ["bad", "x.csv", 4, NOT_UTF8]
      ])
      assert.isTrue(reader.done())
    }
    const cut = bytesOf("doc_id,title,abstract,categories\n1,T,A,", [0xe2, 0x82])
    assert.deepStrictEqual(summarize(feed(csvReader("x.csv"), cut, [5])), [["bad", "x.csv", 2, NOT_UTF8]])
  })

  it("ends the file at a NUL byte after the rows before it", () => {
    const bytes = bytesOf("doc_id,title,abstract,categories\n1,T,A,c\n2,T,", [0], ",c\n")
    assert.deepStrictEqual(summarize(feed(csvReader("x.csv"), bytes, [4])), [
      ["doc", "1", "T", "A", "c"],
      ["bad", "x.csv", 3, BINARY_FILE]
    ])
  })
})

describe("sniffBinary", () => {
  it("makes a file with a NUL byte in its head one bad record, however the head arrives", () => {
    const utf16 = Uint8Array.from([0xff, 0xfe, ...[...'{"id":1}\n'].flatMap((c) => [c.charCodeAt(0), 0])])
    for (const cuts of [[utf16.length], [1], [3]]) {
      const reader = sniffBinary(jsonlReader("w.jsonl"), "w.jsonl", 16)
      assert.deepStrictEqual(summarize(feed(reader, utf16, cuts)), [["bad", "w.jsonl", 0, BINARY_FILE]])
      assert.isTrue(reader.done())
    }
  })

  it("passes a file through when the NUL comes after the head, and a short file as it is", () => {
    const bytes = bytesOf('{"id":"a","text":"1"}\n{"id":"b","text":"', [0], '"}\n')
    assert.deepStrictEqual(summarize(feed(sniffBinary(jsonlReader("x.jsonl"), "x.jsonl", 16), bytes, [5])), [
      ["doc", "a", "", "1", null],
      ["bad", "x.jsonl", 2, LINE_HAS_NUL]
    ])
    const short = encode('{"id":3,"body":"b"}')
    assert.deepStrictEqual(summarize(feed(sniffBinary(jsonlReader("x.jsonl"), "x.jsonl"), short, [4])), [
      ["doc", "3", "", "b", null]
    ])
  })
})

describe("completeUtf8Length", () => {
  it("stops before a character cut off at the end", () => {
    assert.strictEqual(completeUtf8Length(encode("aé")), 3)
    assert.strictEqual(completeUtf8Length(encode("aé").subarray(0, 2)), 1)
    assert.strictEqual(completeUtf8Length(encode("a😀").subarray(0, 4)), 1)
    assert.strictEqual(completeUtf8Length(encode("a😀")), 5)
    assert.strictEqual(completeUtf8Length(new Uint8Array(0)), 0)
  })
})

describe("the line of each document", () => {
  it("is the line a JSONL record is on, blank and bad lines counted, however the bytes are cut", () => {
    const bytes = bytesOf('{"id":"a","text":"1"}\n\n{"id":', [0xff], '}\r\n{"id":"b","text":"2"}')
    for (const cuts of [[bytes.length], [1], [6]]) {
      assert.deepStrictEqual(linesOf(feed(jsonlReader("x.jsonl"), bytes, cuts)), [
        ["a", 1],
        ["b", 4]
      ])
    }
  })

  it("is the line a CSV row starts on, when quoted fields hold line breaks", () => {
    const bytes = encode('doc_id,title,abstract,categories\n1,T,"two\nlines",c\n\n2,T,A,c\n')
    for (const cuts of [[bytes.length], [1], [5]]) {
      assert.deepStrictEqual(linesOf(feed(csvReader("x.csv"), bytes, cuts)), [
        ["1", 2],
        ["2", 5]
      ])
    }
  })
})
