/** The HNSW graph: the same graph from the same rows, its bytes read back, its recall, and rows it must not return. */
import { describe, expect, it } from "@effect/vitest"
import { codeDistance, codeRow, holdCodes } from "../src/search/CodeKernel.ts"
import { buildGraph, type Graph, type GraphRows, isNode, searchGraph, searchGraphBy } from "../src/search/Hnsw.ts"
import {
  decodeGraph,
  decodeGraphHead,
  encodeGraph,
  encodeGraphHead,
  encodeGraphRow,
  graphHeadProblem,
  graphRowInto
} from "../src/search/HnswBytes.ts"

/** A seeded generator of uniform numbers in [0, 1) (mulberry32). */
const seeded = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** `count` unit rows around `clusters` centres (as real embeddings cluster), from a seed. */
const clustered = (count: number, d: number, clusters: number, seed: number): GraphRows => {
  const random = seeded(seed)
  const gauss = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random())
  const centres = Array.from({ length: clusters * d }, gauss)
  const data = new Float32Array(count * d)
  for (let i = 0; i < count; i++) {
    const c = Math.floor(random() * clusters)
    let norm = 0
    for (let k = 0; k < d; k++) {
      const x = centres[c * d + k]! + 0.7 * gauss()
      data[i * d + k] = x
      norm += x * x
    }
    for (let k = 0; k < d; k++) data[i * d + k]! /= Math.sqrt(norm)
  }
  return { count, dimensions: d, data }
}

/** The 10 rows with the highest dot product with `query` (ties by row), by a plain scan. */
const exactTop = (rows: GraphRows, query: Float32Array, keep: (row: number) => boolean = () => true) => {
  const scored: Array<[number, number]> = []
  for (let r = 0; r < rows.count; r++) {
    if (!keep(r)) continue
    let s = 0
    for (let k = 0; k < rows.dimensions; k++) s += query[k]! * rows.data[r * rows.dimensions + k]!
    scored.push([s, r])
  }
  return scored
    .sort((a, b) => b[0] - a[0] || a[1] - b[1])
    .slice(0, 10)
    .map(([, r]) => r)
}

const recall = (graph: Graph, rows: GraphRows, queries: GraphRows, ef: number) => {
  let hits = 0
  for (let i = 0; i < queries.count; i++) {
    const query = queries.data.subarray(i * queries.dimensions, (i + 1) * queries.dimensions)
    const truth = new Set(exactTop(rows, query))
    for (const row of searchGraph(graph, rows, query, ef).slice(0, 10)) if (truth.has(row)) hits++
  }
  return hits / (queries.count * 10)
}

// Building graphs takes a few hundred milliseconds alone, and seconds on a machine busy with other work: the
// timeout is set far from either, so that only a build that hangs fails it.
describe("the HNSW graph", { timeout: 60_000 }, () => {
  const rows = clustered(2000, 32, 40, 1)
  const queries = clustered(50, 32, 40, 2)
  const graph = buildGraph(rows)

  it("is the same, byte for byte, every time it is built from the same rows", () => {
    expect(encodeGraph(buildGraph(rows))).toEqual(encodeGraph(graph))
  })

  it("reads back from its bytes and answers as before; bytes that are not a graph say why", () => {
    const bytes = encodeGraph(graph)
    const read = decodeGraph(bytes)
    if (typeof read === "string") throw new Error(read)
    const query = queries.data.subarray(0, 32)
    expect(searchGraph(read, rows, query, 32)).toEqual(searchGraph(graph, rows, query, 32))
    // Read in place from bytes that start part-way into their buffer, and from a copy where they are not aligned.
    for (const shift of [4, 1]) {
      const framed = new Uint8Array(bytes.length + shift)
      framed.set(bytes, shift)
      const again = decodeGraph(framed.subarray(shift))
      if (typeof again === "string") throw new Error(again)
      expect(searchGraph(again, rows, query, 32)).toEqual(searchGraph(graph, rows, query, 32))
    }
    expect(decodeGraph(bytes.subarray(0, bytes.length - 4))).toMatch(/^the graph holds \d+ bytes, not \d+$/)
    const garbled = bytes.slice()
    new DataView(garbled.buffer).setInt32(32 + 2000 + 8, 99_999, true)
    expect(decodeGraph(garbled)).toBe("the graph links to a row it does not have")
    expect(decodeGraph(new Uint8Array(10))).toBe("the graph is shorter than its header")
    const noEntry = bytes.slice()
    new DataView(noEntry.buffer).setInt32(20, -1, true)
    expect(decodeGraph(noEntry)).toBe("the graph's entry is not a row on its top layer")
    // An upper link to a row that is not on that layer.
    const top = graph.levels.indexOf(graph.maxLevel)
    const low = graph.levels.indexOf(0)
    const headerAndBase = 32 + 2000 + graph.base.byteLength
    let at = headerAndBase
    for (let row = 0; row < top; row++) at += (graph.upper.at(row)?.length ?? 0) * 4
    const wrongLayer = bytes.slice()
    new DataView(wrongLayer.buffer).setInt32(at, low, true)
    expect(decodeGraph(wrongLayer)).toBe("the graph links to a row it does not have")
  })

  it("finds at least 95 % of the true top 10 at efSearch 64, and all of it when it may look at every row", () => {
    expect(recall(graph, rows, queries, 64)).toBeGreaterThanOrEqual(0.95)
    const small = clustered(300, 16, 10, 3)
    expect(recall(buildGraph(small), small, clustered(20, 16, 10, 4), 300)).toBe(1)
  })

  it("never returns a row its filter refuses, nor a row with no direction", () => {
    const withZeros: GraphRows = { ...rows, data: rows.data.slice() }
    for (const zero of [0, 17, 1999]) withZeros.data.fill(0, zero * 32, zero * 32 + 32)
    const zeroGraph = buildGraph(withZeros)
    const odd = (row: number) => row % 2 === 1
    for (let i = 0; i < 10; i++) {
      const query = queries.data.subarray(i * 32, (i + 1) * 32)
      const found = searchGraph(zeroGraph, withZeros, query, 64, odd)
      expect(found.length).toBeGreaterThan(0)
      for (const row of found) {
        expect(row % 2).toBe(1)
        expect([17, 1999]).not.toContain(row)
      }
    }
  })
  it("reads back paged, a row at a time as a walk reaches it, and answers as before; bytes that are not one say why", () => {
    // Rows 100 … 149 copies of row 99: the head lists them, and they have no rows of their own.
    const data = rows.data.slice()
    for (let row = 100; row < 150; row++) data.copyWithin(row * 32, 99 * 32, 100 * 32)
    const own: GraphRows = { ...rows, data }
    const built = buildGraph(own)
    const codes = holdCodes(own.count, 32)
    for (let row = 0; row < own.count; row++) codes.scales[row] = codeRow(data, row * 32, 32, codes.codes, row * 32)
    const head = encodeGraphHead(built, true)
    const stored = new Map<number, Uint8Array>()
    for (let row = 0; row < built.count; row++)
      if (isNode(built.levels[row]!)) stored.set(row, encodeGraphRow(built, row, codes))
    expect(stored.size).toBe(own.count - 50)
    const paged = decodeGraphHead(head)
    if (typeof paged === "string") throw new Error(paged)
    expect(paged.coded).toBe(true)
    expect(paged.graph.copies.get(99)?.length).toBe(50)
    const read = holdCodes(own.count, 32)
    const reached = new Set<number>()
    for (let i = 0; i < 20; i++) {
      const query = queries.data.subarray(i * 32, (i + 1) * 32)
      const whole = codeDistance(codes, query)
      const distance = codeDistance(read, query)
      const walked = searchGraphBy(
        paged.graph,
        (row) => {
          if (!reached.has(row)) {
            expect(graphRowInto(stored.get(row)!, paged, row, 32, read)).toBeUndefined()
            reached.add(row)
          }
          return distance(row)
        },
        32
      )
      expect(walked).toEqual(searchGraphBy(built, whole, 32))
      // The first walk reaches a part of the rows only.
      if (i === 0) expect(reached.size).toBeLessThan(stored.size / 2)
    }
    // The same graph, read whole after its rows: the same bytes.
    for (const [row, bytes] of stored) expect(graphRowInto(bytes, paged, row, 32)).toBeUndefined()
    expect(encodeGraph(paged.graph)).toEqual(encodeGraph(built))
    // A head or row that is not one says why.
    expect(decodeGraphHead(head.subarray(0, head.length - 4))).toMatch(/^the graph's head holds \d+ bytes, not \d+$/)
    expect(decodeGraphHead(encodeGraph(built))).toBe("the graph's header is not one")
    const noEntry = head.slice()
    new DataView(noEntry.buffer).setInt32(20, -1, true)
    expect(decodeGraphHead(noEntry)).toBe("the graph's entry is not a row on its top layer")
    // Levels that do not add up to the head's counts: a walk does not look at them all, check does.
    expect(graphHeadProblem(paged)).toBeUndefined()
    const relevelled = head.slice()
    relevelled[48 + built.levels.indexOf(0)] = 1
    const misread = decodeGraphHead(relevelled)
    if (typeof misread === "string") throw new Error(misread)
    expect(graphHeadProblem(misread)).toBe("the graph's rows do not add up")
    // An upper link to no row: left out of the walks, which still answer, and found by check.
    const upperAt = 48 + ((own.count + 3) & ~3) + new DataView(head.buffer).getUint32(32, true) * 4
    const badUpper = head.slice()
    new DataView(badUpper.buffer).setInt32(upperAt, 5000, true)
    const misled = decodeGraphHead(badUpper)
    if (typeof misled === "string") throw new Error(misled)
    expect(graphHeadProblem(misled)).toBe("the graph links to a row it does not have")
    for (const [row, bytes] of stored) graphRowInto(bytes, misled, row, 32, read)
    expect(searchGraphBy(misled.graph, codeDistance(read, queries.data.subarray(0, 32)), 32).rows.length).toBe(32)
    const copyOfNothing = head.slice()
    new DataView(copyOfNothing.buffer).setInt32(head.length - 4, 120, true)
    expect(decodeGraphHead(copyOfNothing)).toBe("the graph has a copy of a row it does not have")
    const node = stored.get(0)!
    const badLink = node.slice()
    new DataView(badLink.buffer).setInt32(4, 100, true)
    expect(graphRowInto(badLink, paged, 0, 32, read)).toBe("row 0 of the graph links to a row it does not have")
    const badScale = node.slice()
    new DataView(badScale.buffer).setFloat64(128, 2, true)
    expect(graphRowInto(badScale, paged, 0, 32, read)).toBe("row 0 of the graph has a scan code scale out of range")
    expect(graphRowInto(badScale, paged, 0, 32, "check")).toBe("row 0 of the graph has a scan code scale out of range")
    expect(graphRowInto(node.subarray(1), paged, 0, 32)).toBe(
      `row 0 of the graph holds ${node.length - 1} bytes, not ${node.length}`
    )
    expect(graphRowInto(node, paged, 120, 32)).toBe("row 120 of the graph is a copy, which has no row of its own")
  })

  it("keeps copies of one vector out of the graph, and returns them with their original", () => {
    // 400 rows, 300 of them one vector: the graph holds the 101 others and finds every row near the query.
    const copies: GraphRows = { ...rows, count: 400, data: rows.data.slice(0, 400 * 32) }
    for (let row = 100; row < 400; row++) copies.data.copyWithin(row * 32, 99 * 32, 100 * 32)
    const built = buildGraph(copies)
    expect(built.copies.get(99)?.length).toBe(300)
    const read = decodeGraph(encodeGraph(built))
    if (typeof read === "string") throw new Error(read)
    expect(read.copies.get(99)?.length).toBe(300)
    const query = copies.data.subarray(99 * 32, 100 * 32)
    const found = searchGraph(built, copies, query, 16)
    for (const row of [99, 100, 250, 399]) expect(found).toContain(row)
    // A query elsewhere still reaches the other rows: the copies do not cut them off.
    const elsewhere = queries.data.subarray(0, 32)
    const truth = exactTop(copies, elsewhere)
    const near = new Set(searchGraph(built, copies, elsewhere, 64).slice(0, 40))
    expect(truth.filter((row) => near.has(row)).length).toBeGreaterThanOrEqual(9)
    expect(searchGraph(built, copies, query, 16, (row) => row !== 250)).not.toContain(250)
  })
})
