/** The boundary-aware chunkers: windows that end at a word, a sentence or a heading, checked against their rules. */
import { assert, describe, it } from "@effect/vitest"
import { ChunkerConfig, ChunkSize, type ChunkStrategy, CleanerConfig, Overlap } from "@funcpipe/domain/Config"
import { Schema } from "effect"
import fc from "fast-check"
import { chunkBody, chunkSpans, sectionStarts } from "../src/analysis/Chunker.ts"
import { cleanText } from "../src/analysis/Clean.ts"

const config = (strategy: ChunkStrategy, chunkSize: number, overlap = 0) =>
  new ChunkerConfig({
    chunkSize: ChunkSize.make(chunkSize),
    overlap: Overlap.make(overlap),
    tailPolicy: "emit_short",
    strategy
  })

const word = fc.constantFrom("a", "moon", "orbit", "İstanbul", "😀x", "extraordinarily", "σ", "Dr.", "ok!", "(yes.)")
const sentence = fc.array(word, { minLength: 1, maxLength: 12 }).map((w) => `${w.join(" ")}.`)
const body = fc.array(sentence, { maxLength: 12 }).map((s) => cleanText(s.join(" ")))
const strategies = fc.constantFrom<Exclude<ChunkStrategy, "fixed">>("words", "sentences", "markdown")

const isSpace = (point: string | undefined) => point === " "

describe("boundary-aware chunkers", () => {
  it("cut whole words of the body, in order, never longer than the chunk size", () => {
    fc.assert(
      fc.property(body, strategies, fc.integer({ min: 4, max: 60 }), (text, strategy, size) => {
        const points = Array.from(text)
        const spans = chunkSpans(text, config(strategy, size))
        let covered = 0
        for (const span of spans) {
          assert.strictEqual(span.text, points.slice(span.start, span.end).join(""))
          assert.isAtMost(span.end - span.start, size)
          assert.isFalse(isSpace(points[span.start]) || isSpace(points[span.end - 1]), "no space at the edges")
          // Without overlap, nothing but spaces is left out between chunks.
          assert.isTrue(points.slice(covered, span.start).every(isSpace))
          covered = span.end
          // A chunk ends at a space or the body's end, unless its window held no space in its second half.
          const window = points.slice(span.start + Math.ceil(size / 2), span.start + size)
          if (window.includes(" ") && span.end < points.length) assert.isTrue(isSpace(points[span.end]))
        }
        assert.isTrue(points.slice(covered).every(isSpace))
      }),
      { numRuns: 500 }
    )
  })

  it("end at a sentence's end when the window's second half has one", () => {
    const text = cleanText("The Moon has no light. It reflects the Sun. Its phases follow the angle of the light.")
    const spans = chunkSpans(text, config("sentences", 50))
    assert.deepStrictEqual(
      spans.map((s) => s.text),
      ["the moon has no light. it reflects the sun.", "its phases follow the angle of the light."]
    )
    // The words chunker ends at the last space instead.
    assert.deepStrictEqual(
      chunkSpans(text, config("words", 50)).map((s) => s.text),
      ["the moon has no light. it reflects the sun. its", "phases follow the angle of the light."]
    )
  })

  it("step forward by at least the chunk size less the overlap, however early a chunk ended", () => {
    const prose = cleanText(
      Array.from({ length: 300 }, (_, i) => `Sentence ${i} is short. ` + "word ".repeat(i % 40)).join("")
    )
    const length = Array.from(prose).length
    for (const strategy of ["words", "sentences"] as const) {
      const spans = chunkSpans(prose, config(strategy, 512, 500))
      spans.forEach((span, i) => {
        if (i > 0 && spans[i - 1]!.end < length) {
          // Word starts can add up to a word's length; never a step back to one word after the last start.
          assert.isAtLeast(span.start - spans[i - 1]!.start, 12 - 1, `${strategy} chunk ${i}`)
        }
      })
      assert.isBelow(spans.length, length / 10)
    }
  })

  it("share about the overlap, starting at a word, and always move on", () => {
    fc.assert(
      fc.property(body, strategies, fc.integer({ min: 8, max: 60 }), fc.nat(), (text, strategy, size, o) => {
        const overlap = o % size
        const spans = chunkSpans(text, config(strategy, size, overlap))
        const points = Array.from(text)
        spans.forEach((span, i) => {
          if (i === 0) return
          const before = spans[i - 1]!
          assert.isAbove(span.start, before.start)
          // No text is left out between two chunks but spaces.
          assert.isTrue(points.slice(before.end, span.start).every(isSpace), "no gap")
          // At a word, unless the word was longer than a window and the chunk before cut it.
          const cutWord = before.end === span.start
          assert.isTrue(span.start === 0 || isSpace(points[span.start - 1]) || cutWord, "starts at a word")
        })
      }),
      { numRuns: 300 }
    )
  })

  it("never let a markdown chunk cross a heading of the document as written", () => {
    const original = [
      "# Ownership",
      "Each value has an owner. There is one owner at a time.",
      "",
      "## Borrowing",
      "A reference borrows a value. It does not own it.",
      "```",
      "# not a heading",
      "```",
      "Moves",
      "-----",
      "A move hands the value over."
    ].join("\n")
    const cleaner = CleanerConfig.default
    const cleaned = cleanText(original, cleaner)
    const starts = sectionStarts(original, cleaner)
    assert.deepStrictEqual(
      starts.map((at) => cleaned.slice(at, at + 12)),
      ["# ownership ", "## borrowing", "moves ----- "]
    )
    const spans = chunkBody(original, cleaned, config("markdown", 200), cleaner, "/notes/guide.md")
    assert.deepStrictEqual(
      spans.map((s) => s.text),
      [
        "# ownership each value has an owner. there is one owner at a time.",
        "## borrowing a reference borrows a value. it does not own it. ``` # not a heading ```",
        "moves ----- a move hands the value over."
      ]
    )
    // The sentences chunker, given the same text, runs across the headings; so does markdown in a file that is not
    // Markdown (a `#` line in a text file is not a heading).
    assert.strictEqual(chunkBody(original, cleaned, config("sentences", 200), cleaner, "/notes/guide.md").length, 1)
    assert.strictEqual(chunkBody(original, cleaned, config("markdown", 200), cleaner, "/notes/guide.txt").length, 1)
  })

  it("keep the fixed windows of the reference when no strategy is given", () => {
    const text = "abcdefghij"
    const fixed = new ChunkerConfig({ chunkSize: ChunkSize.make(4), overlap: Overlap.make(1), tailPolicy: "drop" })
    assert.deepStrictEqual(
      chunkSpans(text, fixed).map((s) => s.text),
      ["abcd", "defg", "ghij"]
    )
  })

  it("refuse a tail policy other than emit_short for boundary-aware chunkers", () => {
    const decoded = Schema.decodeUnknownExit(ChunkerConfig)({
      chunkSize: 10,
      overlap: 0,
      tailPolicy: "pad",
      strategy: "words"
    })
    assert.isTrue(decoded._tag === "Failure")
    assert.include(String(decoded), "applies to fixed windows only")
  })
})
