/** The hot-path forms of clean, chunk and embed give exactly what the generic, schema-building forms give. */

import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import {
  AnalyzerConfig,
  ChunkerConfig,
  ChunkSize,
  CleanerConfig,
  CleanRule,
  Overlap,
  type TailPolicy
} from "@funcpipe/domain/Config"
import { CleanDoc, DocId } from "@funcpipe/domain/Document"
import { isWhitespaceUnit, WHITESPACE_CLASS } from "@funcpipe/domain/Whitespace"
import fc from "fast-check"
import { stemmer } from "stemmer"
import { analyze, analyzeRanges, ENGLISH_STOP_WORDS, words, wordsReference } from "../src/analysis/Analyzer.ts"
import { chunkDoc, chunkSpans } from "../src/analysis/Chunker.ts"
import { cleanText, cleanTextGeneric } from "../src/analysis/Clean.ts"
import { embedText, embedTextInto } from "../src/analysis/Embed.ts"
import { WordTable } from "../src/analysis/WordTable.ts"

// Every Python whitespace character, plus characters only JavaScript's `\s` or neither counts (U+FEFF, U+180E, U+200B).
const whitespace = [
  "\t",
  "\n",
  "\u000b",
  "\f",
  "\r",
  "\r\n",
  "\u001c",
  "\u001d",
  "\u001e",
  "\u001f",
  " ",
  "  ",
  "\u0085",
  "\u00a0",
  "\u1680",
  "\u2000",
  "\u2005",
  "\u200a",
  "\u2028",
  "\u2029",
  "\u202f",
  "\u205f",
  "\u3000",
  "\ufeff",
  "\u180e",
  "\u200b"
]
// Case pairs, characters whose case mapping changes length (İ, ß, ŉ, ﬃ), final sigma, combining marks and wide ones.
const letters = [
  "a",
  "b",
  "z",
  "A",
  "B",
  "Z",
  ".",
  ",",
  "'",
  "É",
  "é",
  "ß",
  "ẞ",
  "İ",
  "ı",
  "ŉ",
  "ﬃ",
  "Σ",
  "σ",
  "ς",
  "Ω",
  "\u0301",
  "\u0307",
  "～",
  "深",
  "0"
]
// Astral characters (a pair each) and lone surrogate halves, which only `chunkSpans` and `embedTextInto` accept.
const astral = ["😀", "𐐀", "𐐨", "𝔘", "🇫🇷"]
const lone = ["\ud800", "\udbff", "\udc00", "\udfff"]

const wellFormed = fc.string({ unit: fc.constantFrom(...whitespace, ...letters, ...astral), maxLength: 60 })
const anyUnits = fc.string({ unit: fc.constantFrom(...whitespace, ...letters, ...astral, ...lone), maxLength: 60 })
const rules = fc.array(fc.constantFrom(...CleanRule.literals), { maxLength: 6 })

const tailPolicy = fc.constantFrom<TailPolicy>("emit_short", "drop", "pad")
const chunker = fc
  .integer({ min: 1, max: 12 })
  .chain((size) =>
    fc.record({ size: fc.constant(size), overlap: fc.integer({ min: 0, max: size - 1 }), tail: tailPolicy })
  )
  .map(
    ({ overlap, size, tail }) =>
      new ChunkerConfig({ chunkSize: ChunkSize.make(size), overlap: Overlap.make(overlap), tailPolicy: tail })
  )

/** The original chunker: the body as an array of code points, sliced and joined back. */
const chunkByCodePoints = (body: string, config: ChunkerConfig) => {
  const points = Array.from(body)
  const { chunkSize, overlap, tailPolicy } = config
  const out: Array<{ start: number; end: number; text: string }> = []
  for (let start = 0; start < points.length; start += chunkSize - overlap) {
    const windowEnd = start + chunkSize
    const short = windowEnd > points.length
    if (short && tailPolicy === "drop") break
    const segmentEnd = Math.min(windowEnd, points.length)
    const text = points.slice(start, segmentEnd).join("")
    out.push({
      start,
      end: tailPolicy === "pad" ? windowEnd : segmentEnd,
      text: short && tailPolicy === "pad" ? text + "\u0000".repeat(windowEnd - segmentEnd) : text
    })
  }
  return out
}

/** The original embedding: a `createHash` digest read as big-endian 16-bit words. */
const embedByCreateHash = (text: string): Array<number> => {
  const digest = createHash("sha256").update(text, "utf8").digest()
  return Array.from({ length: 16 }, (_, i) => digest.readUInt16BE(2 * i) / 65535)
}

describe("isWhitespaceUnit", () => {
  it("agrees with the whitespace class on every UTF-16 unit", () => {
    const one = new RegExp(`[${WHITESPACE_CLASS}]`)
    const disagreements: Array<string> = []
    for (let unit = 0; unit <= 0xffff; unit++) {
      if (isWhitespaceUnit(unit) !== one.test(String.fromCharCode(unit))) disagreements.push(unit.toString(16))
    }
    assert.deepStrictEqual(disagreements, [])
  })
})

describe("cleanText", () => {
  it("equals the generic rules with the default rules", () => {
    fc.assert(
      fc.property(wellFormed, (s) => cleanText(s) === cleanTextGeneric(s)),
      { numRuns: 2000 }
    )
  })

  it("equals the generic rules for any list of rules, in any order", () => {
    fc.assert(
      fc.property(anyUnits, rules, (s, list) => {
        const cleaner = new CleanerConfig({ rules: list })
        return cleanText(s, cleaner) === cleanTextGeneric(s, cleaner)
      }),
      { numRuns: 2000 }
    )
  })

  it("lowers as the reference does, including case mappings that change the length", () => {
    assert.strictEqual(
      cleanText("  \u0130STANBUL\u2028\u2029\u039f\u0394\u039f\u03a3  \u039f\u0394\u039f\u03a3. \u00a0"),
      "i\u0307stanbul \u03bf\u03b4\u03bf\u03c2 \u03bf\u03b4\u03bf\u03c2."
    )
    assert.strictEqual(cleanText("Σ"), "σ")
  })
})

describe("chunkSpans", () => {
  it("equals chunkDoc's windows, docId aside", () => {
    fc.assert(
      fc.property(wellFormed, chunker, (body, config) => {
        const doc = new CleanDoc({ docId: DocId.make("d"), title: "", body, categories: null })
        assert.deepStrictEqual(
          chunkSpans(body, config),
          chunkDoc(doc, config).map(({ end, start, text }) => ({ start, end, text }))
        )
      }),
      { numRuns: 2000 }
    )
  })

  it("equals slicing an array of code points, lone surrogates included", () => {
    fc.assert(
      fc.property(anyUnits, chunker, (body, config) => {
        assert.deepStrictEqual(chunkSpans(body, config), chunkByCodePoints(body, config))
      }),
      { numRuns: 2000 }
    )
  })

  it("takes the fast path and the walking path to the same windows", () => {
    const config = new ChunkerConfig({ chunkSize: ChunkSize.make(3), overlap: Overlap.make(1), tailPolicy: "pad" })
    assert.deepStrictEqual(chunkSpans("abcdefg", config), chunkByCodePoints("abcdefg", config))
    assert.deepStrictEqual(chunkSpans("a😀bcd😀", config), [
      { start: 0, end: 3, text: "a😀b" },
      { start: 2, end: 5, text: "bcd" },
      { start: 4, end: 7, text: "d😀\u0000" }
    ])
  })
})

describe("embedTextInto", () => {
  it("writes embedText's vector at the offset and nothing else", () => {
    fc.assert(
      fc.property(anyUnits, fc.integer({ min: 0, max: 3 }), (text, slot) => {
        const out = new Float64Array(64).fill(-1)
        embedTextInto(text, out, 16 * slot)
        const expected = embedByCreateHash(text)
        assert.deepStrictEqual(Array.from(out.subarray(16 * slot, 16 * slot + 16)), expected)
        assert.isTrue(out.every((v, i) => (i >= 16 * slot && i < 16 * slot + 16) || v === -1))
        assert.deepStrictEqual<ReadonlyArray<number>>(embedText(text).vector, expected)
      }),
      { numRuns: 1000 }
    )
  })

  it("refuses a range outside the array", () => {
    assert.throws(() => embedTextInto("a", new Float64Array(16), 1), RangeError)
    assert.throws(() => embedTextInto("a", new Float64Array(16), -1), RangeError)
    assert.throws(() => embedTextInto("a", new Float64Array(32), 0.5), RangeError)
  })
})

describe("the analyzer's word scanner", () => {
  // Word characters of several scripts, ideographs, joiners in every position, digits, marks and astral letters.
  const pieces = [
    "a",
    "z",
    "q",
    "e",
    "s",
    "'",
    "’",
    ".",
    "..",
    "'s",
    "’s",
    " ",
    "-",
    ",",
    "0",
    "9",
    "é",
    "\u0301",
    "ß",
    "İ",
    "Σ",
    "ж",
    "ب",
    "深",
    "漢",
    "か",
    "カ",
    "한",
    "𝐀",
    "𐐨",
    "😀",
    "\u00b2",
    "½",
    "_",
    "\ud800",
    "\t"
  ]
  const texts = fc.string({ unit: fc.constantFrom(...pieces), maxLength: 40 })

  it("finds exactly the words the WORD pattern finds", () => {
    fc.assert(
      fc.property(texts, (text) => {
        const lowered = text.toLowerCase()
        assert.deepStrictEqual(words(lowered), wordsReference(lowered))
      }),
      { numRuns: 3000 }
    )
  })

  it("gives each word's range with the WordTable hash of that range, folded in while scanning", () => {
    fc.assert(
      fc.property(texts, (text) => {
        const found: Array<string> = []
        analyzeRanges(text, (lowered, from, to, hash) => {
          assert.strictEqual(hash, WordTable.hash(lowered, from, to), lowered.slice(from, to))
          found.push(lowered.slice(from, to))
        })
        assert.deepStrictEqual(found, wordsReference(text.toLowerCase()))
      }),
      { numRuns: 2000 }
    )
  })

  it("analyzes exactly as the pattern-based analyzer, with and without stop words and stemming", () => {
    const reference = (text: string, config: AnalyzerConfig) =>
      wordsReference(text.toLowerCase()).flatMap((word) => {
        const term = word.endsWith("'s") || word.endsWith("’s") ? word.slice(0, -2) : word
        if (config.stopWords === "english" && ENGLISH_STOP_WORDS.has(term)) return []
        return [config.stemmer === "porter" && /^[a-z]+$/.test(term) ? stemmer(term) : term]
      })
    const english = fc.string({
      unit: fc.constantFrom("the ", "running ", "ran ", "it's ", "cats' ", "i.e. ", "U.S.", "don’t ", "Ölçü ", "3.5 "),
      maxLength: 12
    })
    const configs = [AnalyzerConfig.default, new AnalyzerConfig({ stopWords: "none", stemmer: "none" })]
    fc.assert(
      fc.property(fc.oneof(texts, english), fc.constantFrom(...configs), (text, config) => {
        assert.deepStrictEqual(analyze(text, config), reference(text, config))
      }),
      { numRuns: 2000 }
    )
  })
})
