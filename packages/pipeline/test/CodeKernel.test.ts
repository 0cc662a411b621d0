/** Scan codes for walking graphs: the SIMD product is the JavaScript twin's integer, and codes keep products close. */

import { describe, expect, it } from "@effect/vitest"
import { codeDistance, codeRow, dotCodes, holdCodes, MIN_CODES } from "../src/search/CodeKernel.ts"

/** A generator of numbers in [-1, 1), seeded. */
const random = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 1_073_741_824 - 1
}

/** `n` random unit rows of `d` components. */
const unitRows = (next: () => number, n: number, d: number) => {
  const rows = new Float32Array(n * d)
  for (let r = 0; r < n; r++) {
    let norm = 0
    for (let j = 0; j < d; j++) {
      rows[r * d + j] = next()
      norm += rows[r * d + j]! ** 2
    }
    for (let j = 0; j < d; j++) rows[r * d + j] = rows[r * d + j]! / Math.sqrt(norm)
  }
  return rows
}

describe("scan codes", () => {
  it("take the same integer product in SIMD as in JavaScript, at every length", () => {
    const next = random(11)
    for (const d of [1, 3, 15, 16, 17, 31, 33, 100, 384, 1536]) {
      // Enough rows for a kernel of their own.
      const n = Math.ceil(MIN_CODES / d)
      const held = holdCodes(n, d)
      expect(held.simd).toBe(true)
      const rows = unitRows(next, 9, d)
      for (let r = 0; r <= 8; r++) codeRow(rows, r * d, d, held.codes, (n - 8 + r) * d)
      for (let a = n - 8; a <= n; a++)
        for (let b = n - 8; b <= n; b++)
          expect(held.dot(a * d, b * d)).toBe(dotCodes(held.codes, a * d, held.codes, b * d, d))
    }
  })

  it("keep a unit query's cosine with each row within a few thousandths, and code a zero row as no direction", () => {
    const next = random(5)
    for (const d of [16, 100, 384]) {
      const n = 200
      const rows = unitRows(next, n, d)
      const held = holdCodes(n, d)
      for (let r = 0; r < n; r++) held.scales[r] = codeRow(rows, r * d, d, held.codes, r * d)
      const query = unitRows(next, 1, d)
      const distance = codeDistance(held, query)
      for (let r = 0; r < n; r++) {
        let cosine = 0
        for (let j = 0; j < d; j++) cosine += query[j]! * rows[r * d + j]!
        expect(Math.abs(1 - distance(r) - cosine)).toBeLessThan(0.006)
      }
    }
    // Few rows, or products too long for the kernel's 32-bit sum, are taken in JavaScript.
    expect(holdCodes(10, 16).simd).toBe(false)
    const long = holdCodes(2, 140_000)
    expect(long.simd).toBe(false)
    long.codes.fill(127)
    expect(long.dot(0, 140_000)).toBe(127 * 127 * 140_000)
    const zero = new Int8Array(4)
    expect(codeRow([0, 0, 0, 0], 0, 4, zero, 0)).toBe(0)
    expect(Array.from(zero)).toEqual([0, 0, 0, 0])
  })
})
