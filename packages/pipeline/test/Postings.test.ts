/** The postings codec: what is encoded decodes to the same postings, and damaged bytes are refused. */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { decodePostings, encodePostings } from "../src/index/Postings.ts"

const postings = fc.uniqueArray(fc.integer({ min: 0, max: 5_000_000 }), { maxLength: 60 }).chain((ordinals) =>
  fc.tuple(
    fc.constant([...ordinals].sort((a, b) => a - b)),
    fc.array(fc.integer({ min: 1, max: 100_000 }), {
      minLength: ordinals.length,
      maxLength: ordinals.length
    })
  )
)

/** Dense postings with small frequencies: mostly one-byte codes and frequencies, with some of two. */
const densePostings = fc.uniqueArray(fc.integer({ min: 0, max: 300 }), { maxLength: 200 }).chain((ordinals) =>
  fc.tuple(
    fc.constant([...ordinals].sort((a, b) => a - b)),
    fc.array(fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 300 })), {
      minLength: ordinals.length,
      maxLength: ordinals.length
    })
  )
)

describe("the postings codec", () => {
  it("decodes what it encodes", () => {
    fc.assert(
      fc.property(fc.oneof(postings, densePostings), ([ordinals, tfs]) => {
        const bytes = encodePostings(ordinals.flatMap((o, i) => [o, tfs[i]!]))
        const decoded = decodePostings(bytes, ordinals.length, 5_000_001)
        assert.deepStrictEqual(decoded, { ordinals: Uint32Array.from(ordinals), tfs: Uint32Array.from(tfs) })
      })
    )
  })

  it("refuses truncated bytes, extra bytes, a wrong count and ordinals past the segment", () => {
    const bytes = encodePostings([3, 1, 200, 2, 70_000, 5])
    assert.isDefined(decodePostings(bytes, 3, 70_001))
    assert.isUndefined(decodePostings(bytes.subarray(0, bytes.length - 1), 3, 70_001))
    assert.isUndefined(decodePostings(Uint8Array.from([...bytes, 1, 1]), 3, 70_001))
    assert.isUndefined(decodePostings(bytes, 4, 70_001))
    assert.isUndefined(decodePostings(bytes, 3, 70_000))
    assert.isUndefined(decodePostings(Uint8Array.from([3, 0]), 1, 10), "a term frequency of 0")
    assert.isUndefined(decodePostings(Uint8Array.from([3, 1]), 1, 10), "a term frequency of 1 written out")
    assert.isUndefined(decodePostings(Uint8Array.from([2, 0]), 2, 10), "an ordinal repeated")
  })

  it("writes a posting of frequency 1 as one byte when its gap is under 64", () => {
    assert.deepStrictEqual([...encodePostings([5, 1, 68, 1, 69, 3])], [10, 126, 3, 3])
    assert.deepStrictEqual(decodePostings(Uint8Array.from([10, 126, 3, 3]), 3, 70), {
      ordinals: Uint32Array.of(5, 68, 69),
      tfs: Uint32Array.of(1, 1, 3)
    })
  })
})
