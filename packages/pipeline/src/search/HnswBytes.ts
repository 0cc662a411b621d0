/**
 * An HNSW graph as bytes, for the index file, in either of two layouts:
 * - whole (`encodeGraph`, `decodeGraph`): one value, read back and checked (the entry, every link and every copy)
 *   before a search walks it; what FuncPipe stored before graphs were paged, still read, and PostgreSQL's layout;
 * - paged (`encodeGraphHead` and `encodeGraphRow`): a head (levels, upper links, copies) read whole, and one value a
 *   row (its layer-0 links, and its scan codes when the graph is coded), each read and checked when a walk first
 *   reaches it (`graphRowInto`). A walk of a million rows reaches a few thousand: a fresh process reads those only.
 */

import type { CodedRows } from "./CodeKernel.ts"
import { COPY, copiesIn, type Graph, isNode, MAX_LEVEL } from "./Hnsw.ts"

const MAGIC = 0x4e485046 // "FPHN"
const VERSION = 1
const PAGED = 2
const HEAD = 48
/** The most links a row has on an upper layer that a graph may be built with (the manifest allows up to 64). */
const MAX_M = 256

/** The graph as bytes: a header, the levels, the layer-0 links, then each upper row's links, little-endian. */
export const encodeGraph = (graph: Graph): Uint8Array => {
  const upperInts = upperIntsOf(graph)
  const header = 32
  const levelsBytes = (graph.count + 3) & ~3
  const bytes = new Uint8Array(header + levelsBytes + graph.base.byteLength + upperInts * 4)
  const view = new DataView(bytes.buffer)
  writeHeader(view, VERSION, graph, upperInts)
  bytes.set(graph.levels, header)
  let at = header + levelsBytes
  bytes.set(new Uint8Array(graph.base.buffer, graph.base.byteOffset, graph.base.byteLength), at)
  at += graph.base.byteLength
  for (let row = 0; row < graph.count; row++) {
    const links = graph.upper.at(row)
    if (links === undefined) continue
    bytes.set(new Uint8Array(links.buffer, links.byteOffset, links.byteLength), at)
    at += links.byteLength
  }
  return bytes
}

/** The fixed fields of either layout's header (the paged one has four more after them). */
interface Header {
  readonly count: number
  readonly m: number
  readonly efConstruction: number
  readonly entry: number
  readonly maxLevel: number
  readonly upperInts: number
}

const headerOf = (view: DataView): Header => ({
  count: view.getUint32(8, true),
  m: view.getUint32(12, true),
  efConstruction: view.getUint32(16, true),
  entry: view.getInt32(20, true),
  maxLevel: view.getUint32(24, true),
  upperInts: view.getUint32(28, true)
})

const writeHeader = (view: DataView, version: number, graph: Graph, upperInts: number) => {
  view.setUint32(0, MAGIC, true)
  view.setUint32(4, version, true)
  view.setUint32(8, graph.count, true)
  view.setUint32(12, graph.params.m, true)
  view.setUint32(16, graph.params.efConstruction, true)
  view.setInt32(20, graph.entry, true)
  view.setUint32(24, graph.maxLevel, true)
  view.setUint32(28, upperInts, true)
}

const upperIntsOf = (graph: Graph) => {
  let ints = 0
  for (let row = 0; row < graph.count; row++) ints += graph.upper.at(row)?.length ?? 0
  return ints
}

/** Each upper row's links, read in place from `buffer` at `at` on: or why they are not the graph's. */
const upperLinks = (
  levels: Uint8Array,
  h: Header,
  buffer: ArrayBufferLike,
  at: number
): Array<Int32Array | undefined> | string => {
  const upper: Array<Int32Array | undefined> = new Array(h.count)
  let used = 0
  for (let row = 0; row < h.count; row++) {
    const level = levels[row]!
    if (!isNode(level) || level === 0) continue
    if (level > MAX_LEVEL || used + level * h.m > h.upperInts)
      return `row ${row} of the graph has a level it cannot have`
    upper[row] = new Int32Array(buffer, at, level * h.m)
    at += level * h.m * 4
    used += level * h.m
  }
  if (used !== h.upperInts) return "the graph's links do not add up"
  const entry = entryProblem(levels, h, levels.some(isNode))
  if (entry !== undefined) return entry
  for (let row = 0; row < h.count; row++) {
    const links = upper[row]
    if (links === undefined) continue
    for (let i = 0; i < links.length; i++)
      if (!upperLink(levels, h.count, links[i]!, 1 + Math.floor(i / h.m)))
        return "the graph links to a row it does not have"
  }
  return upper
}

/** Why the header's entry is not a row on the graph's top layer (it must be one unless no row is a node), if it is not. */
const entryProblem = (levels: Uint8Array, h: Header, hasNodes: boolean): string | undefined => {
  const { count, entry, maxLevel } = h
  return (hasNodes ? entry < 0 || entry >= count || levels[entry] !== maxLevel || maxLevel > MAX_LEVEL : entry !== -1)
    ? "the graph's entry is not a row on its top layer"
    : undefined
}

/** Whether `original`, named by the copy at `row`, is an earlier node. */
const copyOfNode = (levels: Uint8Array, row: number, original: number) =>
  original >= 0 && original < row && isNode(levels[original]!)

/** Whether `link` (a layer-0 slot) is empty or leads to a node of the graph. */
const linksNode = (levels: Uint8Array, count: number, link: number) =>
  link === -1 || (link >= 0 && link < count && levels[link]! < COPY)

/** A graph from `encodeGraph`'s bytes, or a reason they are not one. */
export const decodeGraph = (bytes: Uint8Array): Graph | string => {
  if (bytes.byteLength < 32) return "the graph is shorter than its header"
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (view.getUint32(0, true) !== MAGIC || view.getUint32(4, true) !== VERSION) return "the graph's header is not one"
  const h = headerOf(view)
  const { count, m } = h
  const levelsBytes = (count + 3) & ~3
  const expected = 32 + levelsBytes + count * 2 * m * 4 + h.upperInts * 4
  if (m < 1 || m > MAX_M || bytes.byteLength !== expected)
    return `the graph holds ${bytes.byteLength} bytes, not ${expected}`
  // Read in place where the links fall on 4-byte boundaries (a blob as SQLite hands it over), copied otherwise.
  const copy = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice()
  const levels = copy.subarray(32, 32 + count)
  const base = new Int32Array(copy.buffer, copy.byteOffset + 32 + levelsBytes, count * 2 * m)
  const upper = upperLinks(levels, h, copy.buffer, copy.byteOffset + 32 + levelsBytes + base.byteLength)
  if (typeof upper === "string") return upper
  // Every link leads to a row in the graph that has the layer it is on (a node's level is below COPY).
  const m0 = 2 * m
  for (let row = 0; row < count; row++) {
    const from = row * m0
    if (levels[row] === COPY) {
      // A copy names an earlier node in its first slot, and nothing else.
      if (!copyOfNode(levels, row, base[from]!)) return "the graph has a copy of a row it does not have"
      for (let i = from + 1; i < from + m0; i++)
        if (base[i] !== -1) return "the graph has a copy of a row it does not have"
      continue
    }
    for (let i = from; i < from + m0; i++)
      if (!linksNode(levels, count, base[i]!)) return "the graph links to a row it does not have"
  }
  return {
    params: { m, efConstruction: h.efConstruction },
    count,
    entry: h.entry,
    maxLevel: h.maxLevel,
    levels,
    base,
    upper,
    copies: copiesIn(levels, base, m0)
  }
}

/**
 * The head of a graph in the paged layout: the header (then how many rows are above layer 0, how many are copies,
 * whether its rows carry i8 scan codes, and how many rows are nodes), the levels, the rows above layer 0 in order,
 * their links in that order, and each copy with its original. Its rows go by `encodeGraphRow`. A head is read whole:
 * about 6 bytes a row, mostly the upper links (5.5 MB for a million rows).
 */
export const encodeGraphHead = (graph: Graph, coded: boolean): Uint8Array => {
  const { count, levels } = graph
  const m0 = 2 * graph.params.m
  const upperRows: Array<number> = []
  const copies: Array<number> = []
  let nodes = 0
  for (let row = 0; row < count; row++) {
    if (levels[row] === COPY) copies.push(row, graph.base[row * m0]!)
    else if (isNode(levels[row]!)) {
      nodes++
      if (levels[row]! > 0) upperRows.push(row)
    }
  }
  const upperInts = upperIntsOf(graph)
  const levelsBytes = (count + 3) & ~3
  const bytes = new Uint8Array(HEAD + levelsBytes + (upperRows.length + upperInts + copies.length) * 4)
  const view = new DataView(bytes.buffer)
  writeHeader(view, PAGED, graph, upperInts)
  view.setUint32(32, upperRows.length, true)
  view.setUint32(36, copies.length / 2, true)
  view.setUint32(40, coded ? 1 : 0, true)
  view.setUint32(44, nodes, true)
  bytes.set(levels, HEAD)
  const ints = new Int32Array(bytes.buffer, HEAD + levelsBytes)
  ints.set(upperRows)
  let at = upperRows.length
  for (const row of upperRows) {
    const links = graph.upper.at(row)!
    ints.set(links, at)
    at += links.length
  }
  ints.set(copies, at)
  return bytes
}

/**
 * A paged graph's upper links: each row's made when a walk first reaches it, found by its place among `rows`, with
 * every link checked then (one that does not lead to a row on its layer is left out: damage `graphHeadProblem` finds).
 */
const pagedUpper = (rows: Int32Array, offsets: Int32Array, links: Int32Array, levels: Uint8Array, m: number) => {
  const made = new Map<number, Int32Array>()
  return {
    at: (row: number): Int32Array | undefined => {
      const level = levels[row]!
      if (level === 0 || !isNode(level)) return undefined
      let own = made.get(row)
      if (own !== undefined) return own
      let lo = 0
      let hi = rows.length - 1
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (rows[mid]! < row) lo = mid + 1
        else hi = mid
      }
      // A level the head's list does not bear out: a row with no links up there.
      own = rows[lo] === row ? links.slice(offsets[lo]!, offsets[lo]! + level * m) : new Int32Array(level * m).fill(-1)
      for (let i = 0; i < own.length; i++)
        if (!upperLink(levels, levels.length, own[i]!, 1 + Math.floor(i / m))) own[i] = -1
      made.set(row, own)
      return own
    }
  }
}

/** Whether `link`, an upper-layer slot on `layer`, is empty or leads to a node that has that layer. */
const upperLink = (levels: Uint8Array, count: number, link: number, layer: number) =>
  link === -1 || (link >= 0 && link < count && levels[link]! < COPY && levels[link]! >= layer)

/** A graph of the paged layout, its rows' layer-0 links (and codes) filled in as they are read. */
export interface PagedGraph {
  /** The graph: its `base` holds the links of the rows read so far, and of every copy. */
  readonly graph: Graph
  /** Whether its rows carry their i8 scan codes. */
  readonly coded: boolean
  /** How many of its rows the head says are nodes, above layer 0, and copies (`graphHeadProblem` checks them). */
  readonly nodes: number
  readonly uppers: number
  readonly copyCount: number
  /** The upper rows' links as stored, in row order, `m` a layer (`graphHeadProblem` checks them). */
  readonly upperLinks: { readonly links: Int32Array; readonly m: number }
}

/** A paged graph from its head's bytes (`encodeGraphHead`), no row read yet, or a reason they are not one. */
export const decodeGraphHead = (bytes: Uint8Array): PagedGraph | string => {
  if (bytes.byteLength < HEAD) return "the graph is shorter than its header"
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (view.getUint32(0, true) !== MAGIC || view.getUint32(4, true) !== PAGED) return "the graph's header is not one"
  const h = headerOf(view)
  const { count, entry, m, maxLevel, upperInts } = h
  const upperCount = view.getUint32(32, true)
  const copyCount = view.getUint32(36, true)
  const flags = view.getUint32(40, true)
  const nodes = view.getUint32(44, true)
  const levelsBytes = (count + 3) & ~3
  const expected = HEAD + levelsBytes + (upperCount + upperInts + 2 * copyCount) * 4
  if (m < 1 || m > MAX_M || flags > 1 || bytes.byteLength !== expected)
    return `the graph's head holds ${bytes.byteLength} bytes, not ${expected}`
  const copy = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice()
  const levels = copy.subarray(HEAD, HEAD + count)
  const ints = new Int32Array(copy.buffer, copy.byteOffset + HEAD + levelsBytes, upperCount + upperInts + 2 * copyCount)
  const upperRows = ints.subarray(0, upperCount)
  const links = ints.subarray(upperCount, upperCount + upperInts)
  const pairs = ints.subarray(upperCount + upperInts)
  // What is checked here costs as the rows above layer 0 and the copies do, not as all rows: the levels of the others
  // are checked by `graphHeadProblem` (check), and a walk meets no more than a row whose links it cannot follow.
  const entryWrong = entryProblem(levels, h, nodes > 0)
  if (entryWrong !== undefined) return entryWrong
  // The rows above layer 0, in order, and where each one's links start (checked when a walk first reaches it).
  const offsets = new Int32Array(upperCount)
  let at = 0
  for (let i = 0; i < upperCount; i++) {
    const row = upperRows[i]!
    const level = row >= 0 && row < count ? levels[row]! : 0
    if (level === 0 || !isNode(level) || level > MAX_LEVEL || (i > 0 && row <= upperRows[i - 1]!))
      return `row ${row} of the graph has a level it cannot have`
    offsets[i] = at
    at += level * m
  }
  if (at !== upperInts) return "the graph's links do not add up"
  const m0 = 2 * m
  // A row's layer-0 links are filled in when it is read (a walk reads none before): not filled here, as a million
  // rows' links are 128 MB, mostly never read. A copy's first slot names its original, an earlier node.
  const base = new Int32Array(count * m0)
  const copiesOf = new Map<number, Array<number>>()
  for (let i = 0; i < copyCount; i++) {
    const row = pairs[2 * i]!
    const original = pairs[2 * i + 1]!
    if (!(row >= 0 && row < count && levels[row] === COPY && (i === 0 || row > pairs[2 * i - 2]!)))
      return "the graph's copies do not add up"
    if (!copyOfNode(levels, row, original)) return "the graph has a copy of a row it does not have"
    base[row * m0] = original
    base.fill(-1, row * m0 + 1, (row + 1) * m0)
    const list = copiesOf.get(original)
    if (list === undefined) copiesOf.set(original, [row])
    else list.push(row)
  }
  const graph: Graph = {
    params: { m, efConstruction: h.efConstruction },
    count,
    entry,
    maxLevel,
    levels,
    base,
    upper: pagedUpper(upperRows, offsets, links, levels, m),
    copies: copiesOf
  }
  return { graph, coded: flags === 1, nodes, uppers: upperCount, copyCount, upperLinks: { links, m } }
}

/**
 * What a walk does not check of a paged graph's head: its levels against its counts (how many rows are nodes, above
 * layer 0, and copies), and every upper link. For `check`, which reads every row besides.
 */
export const graphHeadProblem = (paged: PagedGraph): string | undefined => {
  const { count, levels } = paged.graph
  let uppers = 0
  let copies = 0
  let nodes = 0
  for (let row = 0; row < count; row++) {
    const level = levels[row]!
    if (level === COPY) copies++
    else if (isNode(level)) {
      nodes++
      if (level > 0) uppers++
    }
  }
  if (uppers !== paged.uppers || copies !== paged.copyCount || nodes !== paged.nodes)
    return "the graph's rows do not add up"
  const { links, m } = paged.upperLinks
  let at = 0
  for (let row = 0; row < count; row++) {
    const level = levels[row]!
    if (level === 0 || !isNode(level)) continue
    for (let layer = 1; layer <= level; layer++)
      for (let k = 0; k < m; k++, at++)
        if (!upperLink(levels, count, links[at]!, layer)) return "the graph links to a row it does not have"
  }
  return undefined
}

/** A row's scale, read through its bytes (little-endian, as the hosts FuncPipe runs on are). */
const scaleOf = new Float64Array(1)
const scaleBytes = new Uint8Array(scaleOf.buffer)

/** The bytes of one stored row of a paged graph of `m`: its layer-0 links, then (coded) its scale and `d` codes. */
export const graphRowBytes = (m: number, d: number, coded: boolean) => 8 * m + (coded ? 8 + d : 0)

/** Row `row` of `graph` (a node, not a copy) as stored in the paged layout, with its codes from `codes` when given. */
export const encodeGraphRow = (graph: Graph, row: number, codes?: CodedRows): Uint8Array => {
  const m0 = 2 * graph.params.m
  const d = codes?.dimensions ?? 0
  const bytes = new Uint8Array(graphRowBytes(graph.params.m, d, codes !== undefined))
  const view = new DataView(bytes.buffer)
  for (let i = 0; i < m0; i++) view.setInt32(4 * i, graph.base[row * m0 + i]!, true)
  if (codes !== undefined) {
    view.setFloat64(4 * m0, codes.scales[row]!, true)
    bytes.set(new Uint8Array(codes.codes.buffer, codes.codes.byteOffset + row * d, d), 4 * m0 + 8)
  }
  return bytes
}

/**
 * A stored row of a paged graph of `d` dimensions (`encodeGraphRow`) read into the graph's links and, when `codes` is
 * given, into its codes and scales; or a reason the bytes are not that row. A coded graph's rows may be read without
 * `codes`: for a walk over float32 rows, which does not look at their codes, or for `check`, which does ("check").
 */
export const graphRowInto = (
  bytes: Uint8Array,
  paged: PagedGraph,
  row: number,
  d: number,
  codes?: CodedRows | "check"
): string | undefined => {
  const { graph } = paged
  const { count, levels } = graph
  const m0 = 2 * graph.params.m
  if (!isNode(levels[row]!)) return `row ${row} of the graph is a copy, which has no row of its own`
  const size = graphRowBytes(graph.params.m, d, paged.coded)
  if (bytes.byteLength !== size) return `row ${row} of the graph holds ${bytes.byteLength} bytes, not ${size}`
  // Read byte by byte (little-endian): a row is read once, and views on its bytes would cost more than the reading.
  const from = row * m0
  for (let i = 0; i < m0; i++) {
    const at = 4 * i
    const link = bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)
    if (!linksNode(levels, count, link)) return `row ${row} of the graph links to a row it does not have`
    graph.base[from + i] = link
  }
  if (!paged.coded || codes === undefined) return undefined
  for (let i = 0; i < 8; i++) scaleBytes[i] = bytes[4 * m0 + i]!
  const scale = scaleOf[0]!
  // A unit row's largest component is at most 1, so its scale at most 1/127.
  if (!(scale >= 0 && scale <= 1 / 127)) return `row ${row} of the graph has a scan code scale out of range`
  if (codes === "check") return undefined
  codes.scales[row] = scale
  const into = codes.codes
  const at = row * d
  const start = 4 * m0 + 8
  // An Int8Array keeps a byte's two's-complement value.
  for (let j = 0; j < d; j++) into[at + j] = bytes[start + j]!
  return undefined
}
