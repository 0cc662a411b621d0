/** The graph's SIMD dot product: the same bits as its JavaScript twin, at every length, for rows held in its memory. */

import { describe, expect, it } from "@effect/vitest"
import { dotFloat32, holdRows, kernelOf, MIN_HELD } from "../src/search/GraphKernel.ts"

/** A generator of numbers in [-1, 1), seeded. */
const random = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 1_073_741_824 - 1
}

describe("the graph kernel", () => {
  it("gives the JavaScript loop's bits for every length, and the product within float32's rounding", () => {
    const next = random(7)
    for (const d of [1, 3, 4, 5, 15, 16, 17, 33, 100, 384]) {
      // Enough rows for a kernel of their own; the first six are compared pair by pair.
      const rows = 6
      const held = holdRows(Math.max(rows * d, MIN_HELD), d)
      for (let i = 0; i < rows * d; i++) held[i] = next()
      const kernel = kernelOf(held)
      expect(kernel).toBeDefined()
      for (let a = 0; a < rows; a++) {
        for (let b = 0; b < rows; b++) {
          const js = dotFloat32(held, a * d, held, b * d, d)
          expect(Object.is(kernel!.dot(a * d, b * d), js)).toBe(true)
          let exact = 0
          for (let k = 0; k < d; k++) exact += held[a * d + k]! * held[b * d + k]!
          expect(Math.abs(js - exact)).toBeLessThanOrEqual(d * 2 ** -22)
        }
      }
    }
    // A plain array has no kernel, and rows too few for one are a plain array.
    expect(kernelOf(new Float32Array(8))).toBeUndefined()
    expect(kernelOf(holdRows(MIN_HELD - 1, 4))).toBeUndefined()
  })
})
