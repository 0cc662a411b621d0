/**
 * Float32 blocks scanned by the SIMD kernel give the float64 scan's answers bit for bit: the same top k, scores and
 * ties, held in the kernel's memory or copied in, with deletions, zero rows, near-ties and extreme magnitudes.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { decodeRows } from "../src/index/VectorCodec.ts"
import { FloatScanner, holdFloats, marginOf } from "../src/search/FloatScan.ts"
import type { IndexView, VectorBlock } from "../src/search/IndexView.ts"
import { ScoringScratch } from "../src/search/Scratch.ts"
import { topVectors } from "../src/search/VectorScan.ts"

class Damaged extends Error {}

/** A view of `rows` vectors of `d` components in blocks of `blockRows`, as float32 or decoded float64 blocks. */
const viewOf = (
  floats: Float32Array,
  d: number,
  blockRows: number,
  form: "held" | "copied" | "float64",
  deleted?: Uint8Array,
  laterFirst = false
): IndexView => {
  const rows = floats.length / d
  const held = form === "held" ? holdFloats(floats.length, d, blockRows) : undefined
  held?.set(floats)
  const source = held ?? floats
  const blocks: Array<VectorBlock> = []
  for (let offset = 0; offset < rows; offset += blockRows) {
    const count = Math.min(blockRows, rows - offset)
    const part = source.subarray(offset * d, (offset + count) * d)
    if (form === "float64") {
      const vectors = new Float64Array(count * d)
      const magnitudes = new Float64Array(count)
      const bytes = new Uint8Array(part.buffer, part.byteOffset, part.byteLength)
      assert.strictEqual(decodeRows(bytes, "f32", count, d, vectors, magnitudes), "ok")
      blocks.push({ offset, count, vectors, magnitudes })
    } else blocks.push({ offset, count, floats: part, damaged: () => new Damaged("damaged") })
  }
  return {
    scratch: new ScoringScratch(),
    dimensions: d,
    positions: rows,
    liveChunks: rows,
    averageLength: 0,
    lengths: new Uint32Array(rows),
    deleted,
    postings: () => [],
    vectorBlocks: () => blocks,
    // Ties go by position (or the other way round), as an index's keys would order equal scores.
    keyOf: (position) => ({
      score: 0,
      docId: `d${String(laterFirst ? 999_999 - position : position).padStart(6, "0")}`,
      start: 0,
      end: 0,
      text: ""
    }),
    documents: () => ({ docOf: new Int32Array(rows), count: 1, order: new Int32Array(1) })
  }
}

/** Components drawn to stress the bound: ordinary ones, tiny and huge magnitudes, zero rows and repeated rows. */
const vectors = fc.integer({ min: 1, max: 41 }).chain((d) =>
  fc.record({
    d: fc.constant(d),
    rows: fc
      .array(
        fc.oneof(
          {
            weight: 6,
            arbitrary: fc.array(fc.float({ min: -1, max: 1, noNaN: true }), { minLength: d, maxLength: d })
          },
          {
            weight: 1,
            arbitrary: fc.array(fc.float({ noNaN: true, noDefaultInfinity: true }), { minLength: d, maxLength: d })
          },
          { weight: 1, arbitrary: fc.constant(new Array<number>(d).fill(0)) },
          {
            weight: 1,
            arbitrary: fc.array(fc.constantFrom(1e-30, -3e-39, 1e-45, 2.5e38), { minLength: d, maxLength: d })
          }
        ),
        { minLength: 1, maxLength: 90 }
      )
      // Repeat some rows, so equal scores must break ties as the float64 scan breaks them.
      .map((rows) => [...rows, ...rows.slice(0, 7)]),
    query: fc.array(fc.double({ min: -10, max: 10, noNaN: true }), { minLength: d, maxLength: d }),
    k: fc.integer({ min: 1, max: 30 }),
    blockRows: fc.integer({ min: 1, max: 64 }),
    deletions: fc.array(fc.nat(), { maxLength: 10 })
  })
)

const bits = (tops: ReadonlyArray<{ position: number; score: number }>) =>
  tops.map((t) => [t.position, t.score] as const)

describe("float32 scans in SIMD", () => {
  it("gives the top k, scores and ties of the float64 scan", () => {
    fc.assert(
      fc.property(vectors, ({ blockRows, d, deletions, k, query, rows }) => {
        const floats = Float32Array.from(rows.flat())
        const deleted = deletions.length === 0 ? undefined : new Uint8Array(rows.length)
        for (const at of deletions) if (deleted !== undefined) deleted[at % rows.length] = 1
        const expected = bits(topVectors(viewOf(floats, d, blockRows, "float64", deleted), query, k))
        for (const form of ["held", "copied"] as const) {
          assert.deepStrictEqual(
            bits(topVectors(viewOf(floats, d, blockRows, form, deleted), query, k)),
            expected,
            form
          )
        }
      }),
      { numRuns: 300 }
    )
  })

  it("keeps every kernel cosine within the margin of the exact one", () => {
    fc.assert(
      fc.property(vectors, ({ d, query, rows }) => {
        const floats = Float32Array.from(rows.flat())
        const qLength = Math.sqrt(query.reduce((sum, x) => sum + x * x, 0))
        if (!(qLength > 0)) return
        const unit = Float32Array.from(query, (x) => x / qLength)
        let seen: Array<number> = []
        assert.isTrue(new FloatScanner().cosines(floats, rows.length, d, unit, (c) => void (seen = [...c])))
        rows.forEach((row, r) => {
          const sum = row.reduce((s, x) => s + Math.fround(x) * Math.fround(x), 0)
          const dot = row.reduce((s, x, j) => s + query[j]! * Math.fround(x), 0)
          const approximate = seen[r]!
          // Rows the kernel cannot bound are marked for exact scoring; every other one is within the margin.
          if (approximate === Infinity) return
          assert.isAtMost(Math.abs(approximate - dot / (qLength * Math.sqrt(sum))), marginOf(d), `row ${r}`)
        })
      }),
      { numRuns: 300 }
    )
  })

  it("marks zero rows and rows too small or too large to bound for exact scoring", () => {
    const d = 8
    const floats = Float32Array.from([
      ...new Array<number>(d).fill(0),
      ...new Array<number>(d).fill(1e-20),
      ...new Array<number>(d).fill(3e38),
      ...new Array<number>(d).fill(0.5)
    ])
    const unit = new Float32Array(d).fill(1 / Math.sqrt(d))
    let seen: Array<number> = []
    assert.isTrue(new FloatScanner().cosines(floats, 4, d, unit, (c) => void (seen = [...c])))
    assert.deepStrictEqual(seen.slice(0, 3), [Infinity, Infinity, Infinity])
    assert.closeTo(seen[3]!, 1, 1e-6)
  })

  it("throws the block's own error for a component that is not finite, held or copied", () => {
    const d = 5
    for (const bad of [Number.NaN, Infinity, -Infinity]) {
      const floats = new Float32Array(40 * d).map((_, i) => Math.sin(i))
      floats[17 * d + 3] = bad
      for (const form of ["held", "copied"] as const) {
        assert.throws(() => topVectors(viewOf(floats, d, 16, form), [1, 2, 3, 4, 5], 3), Damaged)
      }
    }
  })

  it("visits the rows the float64 scan visits for a query whose squared length is subnormal", () => {
    const d = 4
    const query = [3e-162, 1e-162, 2e-162, 1e-162]
    // Rows pointing away from the query: every cosine is -1, or a little below before clamping.
    const floats = new Float32Array(20 * d).map((_, i) => -[3, 1, 2, 1][i % d]!)
    // Equal scores go to later rows first: a scan that stopped visiting rows once the floor reached -1 would miss them.
    const expected = bits(topVectors(viewOf(floats, d, 8, "float64", undefined, true), query, 3))
    assert.deepStrictEqual(
      expected.map(([position]) => position),
      [19, 18, 17]
    )
    for (const form of ["held", "copied"] as const) {
      assert.deepStrictEqual(bits(topVectors(viewOf(floats, d, 8, form, undefined, true), query, 3)), expected, form)
    }
  })

  it("reports a damaged row even where it is deleted, as a decoded block does", () => {
    const d = 5
    const floats = new Float32Array(40 * d).map((_, i) => Math.sin(i))
    floats[17 * d + 3] = Number.NaN
    const deleted = new Uint8Array(40)
    deleted[17] = 1
    for (const form of ["held", "copied"] as const) {
      assert.throws(() => topVectors(viewOf(floats, d, 16, form, deleted), [1, 2, 3, 4, 5], 3), Damaged)
    }
  })

  it("holds no more than a WebAssembly memory can, and says so rather than fail", () => {
    assert.isUndefined(holdFloats(2 ** 30 + 16, 1, 1), "4 GiB and more: not held")
    const held = holdFloats(1024, 4, 256)
    assert.strictEqual(held?.length, 1024)
  })

  it("scans blocks larger than its memory, and blocks of a held stretch in place", () => {
    const d = 384
    const rows = 3000
    const floats = new Float32Array(rows * d).map((_, i) => Math.cos(i * 0.37))
    const query = Array.from({ length: d }, (_, j) => Math.sin(j))
    const expected = bits(topVectors(viewOf(floats, d, 1024, "float64"), query, 10))
    assert.deepStrictEqual(bits(topVectors(viewOf(floats, d, 1024, "copied"), query, 10)), expected)
    assert.deepStrictEqual(bits(topVectors(viewOf(floats, d, 1024, "held"), query, 10)), expected)
  })
})
