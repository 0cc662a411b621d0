/** Passages for display: within the width, holding the densest cluster of matches, cut at word boundaries. */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { passageOf } from "../src/analysis/Passage.ts"

/** Words of 1–8 letters (some of them matches, as `*`-marked words) joined by single spaces. */
const wordsText = fc
  .array(fc.tuple(fc.stringMatching(/^[a-zé😀]{1,8}$/u), fc.boolean()), { minLength: 1, maxLength: 60 })
  .map((words) => {
    const points: Array<string> = []
    const spans: Array<readonly [number, number]> = []
    words.forEach(([word, matched], i) => {
      if (i > 0) points.push(" ")
      const from = points.length
      points.push(...Array.from(word))
      if (matched) spans.push([from, points.length])
    })
    return { points, spans }
  })

/** The most spans any window of `width` code points holds whole (brute force). */
const densest = (length: number, spans: ReadonlyArray<readonly [number, number]>, width: number): number => {
  let best = 0
  for (let s = 0; s <= Math.max(0, length - width); s++) {
    best = Math.max(best, spans.filter(([a, b]) => a >= s && b <= s + width).length)
  }
  return best
}

describe("passageOf", () => {
  it("stays within the width, holds the densest cluster of matches, and starts and ends on whole words", () => {
    fc.assert(
      fc.property(wordsText, fc.integer({ min: 30, max: 120 }), ({ points, spans }, width) => {
        const p = passageOf(points, spans, width)
        assert.isTrue(0 <= p.start && p.start <= p.end && p.end <= points.length)
        assert.isAtMost(p.end - p.start, width)
        if (points.length <= width) assert.deepStrictEqual([p.start, p.end], [0, points.length])
        // The spans it gives are the input's spans inside it, counted from its start.
        const expected = spans
          .filter(([a, b]) => a >= p.start && b <= p.end)
          .map(([a, b]) => [a - p.start, b - p.start] as const)
        assert.deepStrictEqual(p.spans, expected)
        assert.isAtLeast(p.spans.length, densest(points.length, spans, width))
        // Words are at most 8 code points, shorter than the reach, so a cut always finds a boundary.
        assert.isTrue(p.start === 0 || points[p.start - 1] === " ", `starts mid-word at ${p.start}`)
        assert.isTrue(p.end === points.length || points[p.end] === " ", `ends mid-word at ${p.end}`)
      }),
      { numRuns: 300, seed: 29 }
    )
  })

  it("prefers the window whose matches weigh most: one rare word over a cluster of a common one", () => {
    const text = `moon moon moon ${"filler ".repeat(30)}away`
    const points = Array.from(text)
    const spans = [...text.matchAll(/moon|away/g)].map((m) => [m.index, m.index + m[0].length] as const)
    const weights = spans.map(([s]) => (text.startsWith("moon", s) ? 1 / 9 : 1))
    const shown = (w?: ReadonlyArray<number>) => {
      const p = passageOf(points, spans, 40, w)
      return points.slice(p.start, p.end).join("")
    }
    assert.include(shown(), "moon moon moon")
    assert.include(shown(weights), "away")
    assert.notInclude(shown(weights), "moon")
  })

  it("shows the start of a text without matches, and centres a lone match", () => {
    const points = Array.from(`${"alpha ".repeat(20)}target ${"omega ".repeat(20)}`.trim())
    assert.strictEqual(passageOf(points, [], 40).start, 0)
    const at = points.join("").indexOf("target")
    const p = passageOf(points, [[at, at + 6]], 40)
    assert.deepStrictEqual(p.spans.length, 1)
    const [s, e] = p.spans[0]!
    // Roughly as much text before the match as after it (the cuts move by at most a word).
    assert.isAtMost(Math.abs(s - (p.end - p.start - e)), 12)
  })
})
