/** Vector blocks are stored in the narrowest encoding that gives every component back bit for bit. */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { embedTextInto, LOCAL_SHA256_DIMENSIONS } from "../src/stages/embed/Embed.ts"
import { decodeVectors, encodeVectors, encodingFor, encodingOf } from "../src/stages/index/VectorCodec.ts"

/** Encodes, finds the encoding again from the byte length alone, and decodes. */
const roundTrip = (values: Float64Array): Float64Array => {
  const bytes = encodeVectors(values)
  const encoding = encodingFor(bytes.byteLength, values.length)
  assert.strictEqual(encoding, encodingOf(values))
  const out = new Float64Array(values.length)
  assert.isTrue(decodeVectors(bytes, encoding!, 0, values.length, out))
  return out
}

const sameBits = (a: Float64Array, b: Float64Array) => {
  assert.strictEqual(a.length, b.length)
  for (let i = 0; i < a.length; i++) assert.isTrue(Object.is(a[i], b[i]), `component ${i}: ${a[i]} against ${b[i]}`)
}

describe("the vector codec", () => {
  it("stores local-sha256 vectors as 16-bit numerators, and gives back the model's very numbers", () => {
    const values = new Float64Array(50 * LOCAL_SHA256_DIMENSIONS)
    for (let c = 0; c < 50; c++) embedTextInto(`chunk ${c} ${"é".repeat(c)}`, values, c * LOCAL_SHA256_DIMENSIONS)
    assert.strictEqual(encodingOf(values), "u16")
    assert.strictEqual(encodeVectors(values).byteLength, 2 * values.length)
    sameBits(roundTrip(values), values)
  })

  it("stores float32 values as float32 and anything else as float64, exactly", () => {
    const finite = fc.double({ noNaN: true, noDefaultInfinity: true })
    fc.assert(
      fc.property(fc.array(finite, { minLength: 1, maxLength: 64 }), fc.boolean(), (numbers, narrow) => {
        const values = Float64Array.from(numbers, (x) => (narrow ? Math.fround(x) : x))
        if (values.some((x) => !Number.isFinite(x))) return
        sameBits(roundTrip(values), values)
      }),
      { numRuns: 300 }
    )
    assert.strictEqual(encodingOf(Float64Array.of(0.5, Math.fround(0.1))), "f32")
    assert.strictEqual(encodingOf(Float64Array.of(0.5, 0.1)), "f64")
  })

  it("keeps -0 and values outside 0 … 1 out of the 16-bit encoding", () => {
    assert.strictEqual(encodingOf(Float64Array.of(1, 0, 1 / 65535)), "u16")
    assert.notStrictEqual(encodingOf(Float64Array.of(1, -0)), "u16")
    assert.notStrictEqual(encodingOf(Float64Array.of(1, 2)), "u16")
    sameBits(roundTrip(Float64Array.of(1, -0, 0)), Float64Array.of(1, -0, 0))
    sameBits(roundTrip(Float64Array.of(1, 2)), Float64Array.of(1, 2))
  })

  it("decodes a range of components, and reports a component that is not finite", () => {
    const values = Float64Array.of(0.25, 0.1, 3, 4)
    const out = new Float64Array(2)
    assert.isTrue(decodeVectors(encodeVectors(values), "f64", 1, 3, out))
    sameBits(out, Float64Array.of(0.1, 3))
    assert.isFalse(decodeVectors(new Uint8Array(Float32Array.of(1, Infinity).buffer), "f32", 0, 2, new Float64Array(2)))
    assert.isFalse(decodeVectors(new Uint8Array(Float64Array.of(Number.NaN).buffer), "f64", 0, 1, new Float64Array(1)))
    assert.isUndefined(encodingFor(12, 4))
  })
})
