import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { compareCodePoints, rankingOrder } from "../src/Ranking.ts"

/** The reference's comparison: code point by code point. */
const byCodePoints = (a: string, b: string): number => {
  const x = Array.from(a, (c) => c.codePointAt(0)!)
  const y = Array.from(b, (c) => c.codePointAt(0)!)
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1
  return Math.sign(x.length - y.length)
}

describe("compareCodePoints", () => {
  it("orders U+FF5E before U+1F600, unlike UTF-16 comparison", () => {
    assert.isTrue("doc-😀" < "doc-～")
    assert.strictEqual(compareCodePoints("doc-～", "doc-😀"), -1)
    assert.strictEqual(compareCodePoints("doc-😀", "doc-～"), 1)
  })
  it("agrees with a code point by code point comparison on any strings", () => {
    const unit = fc.constantFrom("a", "b", "\ud7ff", "\ue000", "\uff5e", "\uffff", "😀", "𐐀", "\u{10ffff}")
    fc.assert(
      fc.property(fc.string({ unit }), fc.string({ unit }), (a, b) => compareCodePoints(a, b) === byCodePoints(a, b))
    )
  })
})

describe("rankingOrder", () => {
  const base = { score: 0.5, docId: "a", start: 0, end: 4, text: "abcd" }
  it("puts higher scores first, then doc id, start, end and text ascending", () => {
    const keys = [
      { ...base, text: "abce" },
      { ...base, end: 5 },
      { ...base, start: 1 },
      { ...base, docId: "b" },
      { ...base, score: 0.9 },
      base
    ]
    assert.deepStrictEqual([...keys].sort(rankingOrder), [keys[4], keys[5], keys[0], keys[1], keys[2], keys[3]])
  })
  it("says equal only for equal keys", () => {
    assert.strictEqual(rankingOrder(base, { ...base }), 0)
  })
})
