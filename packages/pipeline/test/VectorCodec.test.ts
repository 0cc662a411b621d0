/** Vector blocks are stored in the narrowest encoding that gives every component back bit for bit. */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { embedTextInto, LOCAL_SHA256_DIMENSIONS } from "../src/analysis/Embed.ts"
import { decodeRows, decodeVectors, encodeVectors, encodingFor, encodingOf } from "../src/index/VectorCodec.ts"

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

  it("decodes whole rows with their magnitudes, summed left to right, in every encoding", () => {
    const dims = LOCAL_SHA256_DIMENSIONS
    const local = new Float64Array(20 * dims)
    for (let c = 0; c < 20; c++) embedTextInto(`row ${c}`, local, c * dims)
    local.fill(0, 3 * dims, 4 * dims) // a zero vector: magnitude 0
    for (const values of [local, Float64Array.from(local, (x) => Math.fround(x / 3)), local.map((x) => x / 3 - 0.1)]) {
      const bytes = encodeVectors(values)
      const encoding = encodingFor(bytes.byteLength, values.length)!
      const out = new Float64Array(values.length)
      const magnitudes = new Float64Array(20)
      assert.strictEqual(decodeRows(bytes, encoding, 20, dims, out, magnitudes), "ok")
      sameBits(out, values)
      const expected = Array.from({ length: 20 }, (_, r) => {
        let sum = 0
        for (let j = r * dims; j < (r + 1) * dims; j++) sum += values[j]! * values[j]!
        return Math.sqrt(sum)
      })
      sameBits(magnitudes, Float64Array.from(expected))
    }
    assert.strictEqual(magnitudesOf(local)[3], 0)
  })

  it("reports a damaged block when decoding rows: a component that is not finite, or a vector too long to score", () => {
    const decode = (values: Float64Array | Float32Array) =>
      decodeRows(
        new Uint8Array(values.buffer),
        values instanceof Float32Array ? "f32" : "f64",
        2,
        2,
        new Float64Array(4),
        new Float64Array(2)
      )
    assert.strictEqual(decode(Float64Array.of(1, 2, 3, Number.NaN)), "not finite")
    assert.strictEqual(decode(Float32Array.of(1, 2, Infinity, 0)), "not finite")
    assert.strictEqual(decode(Float64Array.of(1, 2, 1e200, 1e200)), "too long")
    assert.strictEqual(decode(Float64Array.of(1, 2, 3, 4)), "ok")
  })
})

/** Each row's magnitude of a local-sha256 block, as `decodeRows` gives them. */
const magnitudesOf = (values: Float64Array): Float64Array => {
  const bytes = encodeVectors(values)
  const magnitudes = new Float64Array(values.length / LOCAL_SHA256_DIMENSIONS)
  decodeRows(
    bytes,
    encodingFor(bytes.byteLength, values.length)!,
    magnitudes.length,
    LOCAL_SHA256_DIMENSIONS,
    new Float64Array(values.length),
    magnitudes
  )
  return magnitudes
}
