/**
 * An HNSW graph as bytes, for the index file: `encodeGraph` writes it, `decodeGraph` reads it back and checks that it
 * is one (the entry, every link and every copy) before a search walks it.
 */

import { COPY, copiesIn, type Graph, isNode, MAX_LEVEL } from "./Hnsw.ts"

const MAGIC = 0x4e485046 // "FPHN"
const VERSION = 1

/** The graph as bytes: a header, the levels, the layer-0 links, then each upper row's links, little-endian. */
export const encodeGraph = (graph: Graph): Uint8Array => {
  const m = graph.params.m
  let upperInts = 0
  for (let row = 0; row < graph.count; row++) upperInts += graph.upper[row]?.length ?? 0
  const header = 32
  const levelsBytes = (graph.count + 3) & ~3
  const bytes = new Uint8Array(header + levelsBytes + graph.base.byteLength + upperInts * 4)
  const view = new DataView(bytes.buffer)
  view.setUint32(0, MAGIC, true)
  view.setUint32(4, VERSION, true)
  view.setUint32(8, graph.count, true)
  view.setUint32(12, m, true)
  view.setUint32(16, graph.params.efConstruction, true)
  view.setInt32(20, graph.entry, true)
  view.setUint32(24, graph.maxLevel, true)
  view.setUint32(28, upperInts, true)
  bytes.set(graph.levels, header)
  let at = header + levelsBytes
  bytes.set(new Uint8Array(graph.base.buffer, graph.base.byteOffset, graph.base.byteLength), at)
  at += graph.base.byteLength
  for (let row = 0; row < graph.count; row++) {
    const links = graph.upper[row]
    if (links === undefined) continue
    bytes.set(new Uint8Array(links.buffer, links.byteOffset, links.byteLength), at)
    at += links.byteLength
  }
  return bytes
}

/** A graph from `encodeGraph`'s bytes, or a reason they are not one. */
export const decodeGraph = (bytes: Uint8Array): Graph | string => {
  if (bytes.byteLength < 32) return "the graph is shorter than its header"
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (view.getUint32(0, true) !== MAGIC || view.getUint32(4, true) !== VERSION) return "the graph's header is not one"
  const count = view.getUint32(8, true)
  const m = view.getUint32(12, true)
  const efConstruction = view.getUint32(16, true)
  const entry = view.getInt32(20, true)
  const maxLevel = view.getUint32(24, true)
  const upperInts = view.getUint32(28, true)
  const levelsBytes = (count + 3) & ~3
  const expected = 32 + levelsBytes + count * 2 * m * 4 + upperInts * 4
  if (m < 1 || bytes.byteLength !== expected) return `the graph holds ${bytes.byteLength} bytes, not ${expected}`
  // Read in place where the links fall on 4-byte boundaries (a blob as SQLite hands it over), copied otherwise.
  const copy = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice()
  const levels = copy.subarray(32, 32 + count)
  const base = new Int32Array(copy.buffer, copy.byteOffset + 32 + levelsBytes, count * 2 * m)
  const upper: Array<Int32Array | undefined> = new Array(count)
  let at = copy.byteOffset + 32 + levelsBytes + base.byteLength
  let used = 0
  for (let row = 0; row < count; row++) {
    const level = levels[row]!
    if (!isNode(level) || level === 0) continue
    if (level > MAX_LEVEL || used + level * m > upperInts) return `row ${row} of the graph has a level it cannot have`
    upper[row] = new Int32Array(copy.buffer, at, level * m)
    at += level * m * 4
    used += level * m
  }
  if (used !== upperInts) return "the graph's links do not add up"
  // The entry: a row on the top layer, unless no row is in the graph at all.
  const inGraph = levels.some(isNode)
  if (inGraph ? entry < 0 || entry >= count || levels[entry] !== maxLevel || maxLevel > MAX_LEVEL : entry !== -1)
    return "the graph's entry is not a row on its top layer"
  // Every link leads to a row in the graph that has the layer it is on (a node's level is below COPY).
  const m0 = 2 * m
  for (let row = 0; row < count; row++) {
    const from = row * m0
    if (levels[row] === COPY) {
      // A copy names an earlier node in its first slot, and nothing else.
      const original = base[from]!
      if (!(original >= 0 && original < row && isNode(levels[original]!)))
        return "the graph has a copy of a row it does not have"
      for (let i = from + 1; i < from + m0; i++)
        if (base[i] !== -1) return "the graph has a copy of a row it does not have"
      continue
    }
    for (let i = from; i < from + m0; i++) {
      const link = base[i]!
      if (link !== -1 && !(link >= 0 && link < count && levels[link]! < COPY))
        return "the graph links to a row it does not have"
    }
  }
  for (let row = 0; row < count; row++) {
    const links = upper[row]
    if (links === undefined) continue
    for (let i = 0; i < links.length; i++) {
      const link = links[i]!
      const layer = 1 + Math.floor(i / m)
      if (link !== -1 && !(link >= 0 && link < count && levels[link]! < COPY && levels[link]! >= layer))
        return "the graph links to a row it does not have"
    }
  }
  return {
    params: { m, efConstruction },
    count,
    entry,
    maxLevel,
    levels,
    base,
    upper,
    copies: copiesIn(levels, base, 2 * m)
  }
}
