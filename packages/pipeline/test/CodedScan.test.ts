/** The WebAssembly cosines of coded vector blocks have the bits of the engine's JavaScript loop. */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { CodedScanner } from "../src/search/CodedScan.ts"

/** `scanCoded`'s JavaScript loop for one row, with its clamp; NaN for a row of magnitude 0. */
const cosineOf = (codes: Uint16Array, row: number, d: number, q: Float64Array, qLength: number): number => {
  let dot = 0
  let sum = 0
  for (let j = 0; j < d; j++) {
    const x = codes[row * d + j]! / 65535
    sum += x * x
    dot += q[j]! * x
  }
  const magnitude = Math.sqrt(sum)
  if (magnitude === 0) return Number.NaN
  const raw = dot / (qLength * magnitude)
  // biome-ignore lint/complexity/useMathMinMax: the engine's clamp, written as its comparisons
  return raw > 1 ? 1 : raw < -1 ? -1 : raw
}

const block = fc.integer({ min: 1, max: 40 }).chain((d) =>
  fc.record({
    d: fc.constant(d),
    rows: fc.array(
      fc.oneof(
        fc.array(fc.integer({ min: 0, max: 65535 }), { minLength: d, maxLength: d }),
        fc.array(fc.constantFrom(0, 1, 65534, 65535), { minLength: d, maxLength: d }),
        fc.constant(new Array<number>(d).fill(0))
      ),
      { maxLength: 50 }
    ),
    q: fc.array(fc.double({ min: -1e3, max: 1e3, noNaN: true }), { minLength: d, maxLength: d })
  })
)

describe("CodedScanner", () => {
  const scanner = new CodedScanner()

  it("is available here", () => {
    assert.isTrue(scanner.available(), "WebAssembly on a little-endian machine")
  })

  it("gives every row the bits of the JavaScript loop, NaN for rows of magnitude 0", () => {
    fc.assert(
      fc.property(block, ({ d, q, rows }) => {
        const codes = Uint16Array.from(rows.flat())
        const query = Float64Array.from(q)
        const qLength = Math.sqrt(q.reduce((sum, x) => sum + x * x, 0)) || 1
        let seen: Array<number> | undefined
        assert.isTrue(scanner.cosines(codes, rows.length, d, query, qLength, (c) => void (seen = [...c])))
        const expected = rows.map((_, row) => cosineOf(codes, row, d, query, qLength))
        assert.strictEqual(seen!.length, expected.length)
        const differing = seen!.flatMap((cosine, row) => (Object.is(cosine, expected[row]) ? [] : [row]))
        assert.deepStrictEqual(differing, [])
      })
    )
  })

  it("scores blocks larger than its memory, and refuses a call made while a block's cosines are being read", () => {
    const d = 384
    const count = 300
    const codes = Uint16Array.from({ length: count * d }, (_, i) => (i * 7919) % 65536)
    const q = Float64Array.from({ length: d }, (_, j) => Math.sin(j))
    const qLength = Math.sqrt(q.reduce((sum, x) => sum + x * x, 0))
    let nested: boolean | undefined
    let first: number | undefined
    assert.isTrue(
      scanner.cosines(codes, count, d, q, qLength, (cosines) => {
        first = cosines[0]
        nested = scanner.cosines(codes, 1, d, q, qLength, () => assert.fail("a nested call must not read"))
      })
    )
    assert.strictEqual(nested, false)
    assert.isTrue(Object.is(first, cosineOf(codes, 0, d, q, qLength)))
    // The memory is free again afterwards.
    assert.isTrue(scanner.cosines(codes, 1, d, q, qLength, () => {}))
    // Another scanner has memory of its own, so a scan inside another's read goes through its kernel too.
    let inner: boolean | undefined
    scanner.cosines(codes, 1, d, q, qLength, () => {
      inner = new CodedScanner().cosines(codes, 1, d, q, qLength, () => {})
    })
    assert.strictEqual(inner, true)
  })
})
