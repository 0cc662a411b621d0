import { assert, describe, it } from "@effect/vitest"
import { CleanerConfig, type CleanRule } from "@funcpipe/domain/Config"
import fc from "fast-check"
import { cleanText } from "../src/analysis/Clean.ts"
import { cleanAligned, originalSpan } from "../src/analysis/Original.ts"

const cleaner = (rules: ReadonlyArray<CleanRule>) => CleanerConfig.make({ rules: [...rules] })

// Pieces that stress the alignment: case mappings that change length (İ, ß, ŉ, ﬃ), a context-sensitive one (Σ),
// every kind of whitespace and line break, astral code points and lone surrogates; then arbitrary Unicode.
const piece = fc.oneof(
  fc.constantFrom(
    "İ",
    "ß",
    "ŉ",
    "ﬃ",
    "Σ",
    "ΑΣ ",
    "ǅ",
    " ",
    "  ",
    "\t",
    "\r\n",
    "\r",
    "\n",
    "\u00a0",
    "\u2028",
    "\u3000",
    "\u0085",
    "😀",
    "\ud800",
    "\udc00",
    "Word",
    "a"
  ),
  fc.string({ unit: "grapheme", maxLength: 4 }),
  fc.string({ unit: "binary", maxLength: 3 })
)
const text = fc.array(piece, { maxLength: 30 }).map((parts) => parts.join(""))
const rule = fc.constantFrom<CleanRule>("strip", "lower", "upper", "collapse_ws", "replace_newlines")
const rules = fc.array(rule, { maxLength: 6 })

describe("cleanAligned", () => {
  it("cleans exactly as cleanText does, for any text and any list of rules", () => {
    fc.assert(
      fc.property(text, rules, (original, list) => {
        assert.strictEqual(cleanAligned(original, cleaner(list)).text, cleanText(original, cleaner(list)))
      }),
      { numRuns: 2000 }
    )
  })

  it("aligns every unit to a non-empty span of the original, in order", () => {
    fc.assert(
      fc.property(text, rules, (original, list) => {
        const { from, text: cleaned, to } = cleanAligned(original, cleaner(list))
        assert.strictEqual(from.length, cleaned.length)
        assert.strictEqual(to.length, cleaned.length)
        for (let i = 0; i < cleaned.length; i++) {
          assert.isTrue(0 <= from[i]! && from[i]! < to[i]! && to[i]! <= original.length)
          if (i > 0) assert.isTrue(from[i - 1]! <= from[i]! && to[i - 1]! <= to[i]!)
        }
      }),
      { numRuns: 1000 }
    )
  })

  it("maps a span back to original text that cleans to the span (all of a character whose lowercase it splits)", () => {
    // Without Σ, whose lowercase depends on what follows, a piece of the original cleans like the whole.
    const noSigma = text.filter((t) => !/[Σ]/.test(t))
    fc.assert(
      fc.property(noSigma, fc.nat(), fc.nat(), (original, a, b) => {
        const aligned = cleanAligned(original)
        const points = Array.from(aligned.text)
        if (points.length === 0) return
        let start = Math.min(a, b) % points.length
        let end = start + 1 + (Math.max(a, b) % (points.length - start))
        // Spans that start and end on a word character: whitespace at the edges is stripped by design.
        while (start < end && /\s/.test(points[start]!)) start++
        while (end > start && /\s/.test(points[end - 1]!)) end--
        if (start === end) return
        const [from, to] = originalSpan(aligned, start, end)
        const back = cleanText(original.slice(from, to))
        const span = points.slice(start, end).join("")
        // Equal, unless the span cuts through what one character became (the "i" of "İ" → "i̇"): then it holds it.
        if (back !== span) assert.isTrue(back.includes(span) && back.length - span.length <= 4, `${back} / ${span}`)
      }),
      { numRuns: 2000 }
    )
  })

  it("keeps both units of a dotted capital I lowercased, and a collapsed run maps to the whole run", () => {
    const aligned = cleanAligned("  İstanbul \r\n\t is  BIG ")
    assert.strictEqual(aligned.text, "i̇stanbul is big")
    // "i̇" is two units from the one "İ" at index 2.
    assert.deepStrictEqual([aligned.from[0], aligned.to[0], aligned.from[1], aligned.to[1]], [2, 3, 2, 3])
    assert.deepStrictEqual(originalSpan(aligned, 0, 9), [2, 10])
    // The space after "istanbul" stands for " \r\n\t ".
    assert.deepStrictEqual([aligned.from[9], aligned.to[9]], [10, 15])
    assert.deepStrictEqual(originalSpan(aligned, 10, 16), [15, 22])
  })

  it("maps a padded tail past the cleaned text to the original's end", () => {
    const aligned = cleanAligned("Ab Cd  ")
    assert.deepStrictEqual(originalSpan(aligned, 3, 10), [3, 5])
    assert.deepStrictEqual(originalSpan(aligned, 8, 10), [5, 5])
    assert.deepStrictEqual(originalSpan(cleanAligned(""), 0, 4), [0, 0])
  })
})
