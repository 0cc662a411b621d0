/**
 * A segment builder groups postings by term, encoded as `encodePostings` encodes them, and one that takes over a
 * written builder's arrays builds the same.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { decodePostings, encodePostings } from "../src/index/Postings.ts"
import { SegmentBuilder } from "../src/index/Segment.ts"

/** Chunks as term lists over a small vocabulary (repeats within a chunk included), with 2-dimensional vectors. */
const chunks = fc.array(fc.array(fc.constantFrom("a", "b", "c", "d", "e", "f", "g"), { maxLength: 12 }), {
  minLength: 1,
  maxLength: 40
})

/** Everything a builder gives to be written: columns and per-term postings, copied out of its shared arrays. */
const built = (builder: SegmentBuilder, input: ReadonlyArray<ReadonlyArray<string>>) => {
  const vocabulary = [...new Set(input.flat())]
  const ids = input.flat().map((term) => vocabulary.indexOf(term))
  let from = 0
  input.forEach((terms, c) => {
    builder.add(ids, from, from + terms.length, (id) => builder.termId(vocabulary[id]!), Float64Array.of(c, 1), 0)
    from += terms.length
  })
  const columns = builder.columns()
  return {
    count: builder.count,
    totalLength: builder.totalLength,
    lengths: [...columns.lengths],
    vectors: [...columns.vectors],
    magnitudes: [...columns.magnitudes],
    // Read as they come: each term's bytes are a view the next term reuses.
    postings: Array.from(builder.encodedPostings(), ([term, count, bytes]) => {
      // Each term's bytes are the encoding of its pairs, and decode to exactly `count` postings.
      const decoded = decodePostings(bytes, count, builder.count)
      assert.isDefined(decoded)
      const pairs = [...decoded.ordinals].flatMap((ordinal, i) => [ordinal, decoded.tfs[i]!])
      assert.deepStrictEqual([...bytes], [...encodePostings(pairs)])
      return [term, pairs]
    })
  }
}

/** The reference: each term's (ordinal, tf) pairs by counting. */
const expected = (input: ReadonlyArray<ReadonlyArray<string>>) =>
  [...new Set(input.flat())].sort().map((term) => [
    term,
    input.flatMap((terms, c) => {
      const tf = terms.filter((t) => t === term).length
      return tf > 0 ? [c, tf] : []
    })
  ])

describe("SegmentBuilder", () => {
  it("groups postings by term, in term order, with ordinals ascending and repeats counted", () => {
    fc.assert(
      fc.property(chunks, (input) => {
        assert.deepStrictEqual(built(new SegmentBuilder(0, 2), input).postings, expected(input))
      })
    )
  })

  it("builds the same segment on the arrays of one written before as on fresh ones", () => {
    fc.assert(
      fc.property(chunks, chunks, (first, second) => {
        const previous = new SegmentBuilder(0, 2)
        built(previous, first)
        const recycled = built(new SegmentBuilder(first.length, 2, previous), second)
        assert.deepStrictEqual(recycled, built(new SegmentBuilder(first.length, 2), second))
        assert.deepStrictEqual(recycled.postings, expected(second))
      })
    )
  })

  it("groups postings over many chunks, with empty chunks on the way", () => {
    // 40,000 chunks of up to three distinct terms: each term's slices grow to the largest size.
    const input = Array.from({ length: 40_000 }, (_, c) =>
      c % 7 === 0 ? [] : ["a", "b", "c", "d", "e", "f", "g"].filter((_, t) => (c * (t + 3)) % 5 < 2).slice(0, 3)
    )
    const previous = new SegmentBuilder(0, 2)
    built(previous, input)
    assert.deepStrictEqual(built(new SegmentBuilder(0, 2, previous), input).postings, expected(input))
  })

  it("encodes long postings lists, large gaps and large frequencies across many slices", () => {
    // "a" in every chunk (its slices grow to the largest size and repeat), "b" 300 times in every 997th chunk (a
    // two-byte frequency after a two-byte gap), "c" once, in the last chunk (a three-byte gap).
    const input = Array.from({ length: 30_000 }, (_, c) => [
      "a",
      ...(c % 997 === 5 ? Array.from({ length: 300 }, () => "b") : []),
      ...(c === 29_999 ? ["c"] : [])
    ])
    const previous = new SegmentBuilder(0, 2)
    built(previous, input)
    assert.deepStrictEqual(built(new SegmentBuilder(0, 2, previous), input).postings, expected(input))
  })

  it("counts the memory its chunks use, not what arrays taken over hold", () => {
    const previous = new SegmentBuilder(0, 2)
    built(
      previous,
      Array.from({ length: 3000 }, () => ["a", "b", "c"])
    )
    const next = new SegmentBuilder(3000, 2, previous)
    assert.isBelow(next.byteLength, 1024)
    assert.isAbove(previous.byteLength, 3000 * 16)
  })
})
