/**
 * A hierarchical navigable small-world graph (HNSW: Malkov and Yashunin, 2016) over unit vectors, built to propose
 * candidates for a vector query: the caller scores them exactly and ranks them in the one ranking order, so the graph
 * decides only which rows are looked at, never a score.
 *
 * Deterministic: a row's level comes from a hash of its number (not from a random source), rows are inserted in
 * number order, and every choice between rows breaks ties by number, so the same vectors give the same graph, byte for
 * byte, on every run and machine. The graph is stored as bytes (`encodeGraph`) and read back without a rebuild.
 */

import { dotFloat32, holdRows, kernelOf } from "./GraphKernel.ts"

/** How a graph is built. */
export interface HnswParams {
  /** Links per row on the upper layers (layer 0 has twice as many). */
  readonly m: number
  /** How many candidates an insertion looks at. */
  readonly efConstruction: number
}

export const DEFAULT_HNSW: HnswParams = { m: 16, efConstruction: 100 }

/** How many candidates a query looks at unless it asks: recall@10 ≥ 0.95 on the GloVe benchmark (docs/performance.md). */
export const DEFAULT_EF_SEARCH = 64

/** Rows of a graph: `count` unit vectors of `dimensions` float32 components, one after the other. */
export interface GraphRows {
  readonly count: number
  readonly dimensions: number
  readonly data: Float32Array
}

/**
 * A built graph. Rows with no direction (all zero) are left out: their cosine is undefined. A row that repeats an
 * earlier row's vector exactly (a template's chunks, a licence header) is not a node but a copy of that row, found
 * with it: many copies of one vector, all at distance 0, would otherwise fill each other's links and cut the rest of
 * the graph off.
 */
export interface Graph {
  readonly params: HnswParams
  readonly count: number
  /** The row every search starts from, or -1 for a graph with no rows in it. */
  readonly entry: number
  readonly maxLevel: number
  /** Each row's top layer; 255 for a row left out, 254 for a copy (whose first layer-0 slot names its original). */
  readonly levels: Uint8Array
  /** Layer-0 links: `2m` slots a row, -1 where unused. */
  readonly base: Int32Array
  /** The copies of each original row that has any. */
  readonly copies: ReadonlyMap<number, ReadonlyArray<number>>
  /**
   * Upper-layer links of rows above layer 0: `m` slots for each of layers 1 … level, -1 where unused (an array, or a
   * paged graph's lookup that makes a row's only when asked).
   */
  readonly upper: UpperLinks
}

/** A graph's upper-layer links by row: `undefined` for a row on layer 0 alone. */
export interface UpperLinks {
  readonly at: (row: number) => Int32Array | undefined
}

/** The level of a row left out of the graph (no direction), and of a copy of an earlier row. */
const LEFT_OUT = 255
export const COPY = 254

/** Whether a level is a node's (not a row left out, nor a copy). */
export const isNode = (level: number) => level < COPY

/** Whether `row` is a node of the graph (not a row left out, nor a copy found with its original). */
export const isGraphNode = (graph: Graph, row: number): boolean => isNode(graph.levels[row]!)

/** Each original's copies, from the levels and the first layer-0 slot of each copy. */
export const copiesIn = (levels: Uint8Array, base: Int32Array, m0: number): Map<number, Array<number>> => {
  const copies = new Map<number, Array<number>>()
  for (let row = 0; row < levels.length; row++) {
    if (levels[row] !== COPY) continue
    const original = base[row * m0]!
    const list = copies.get(original)
    if (list === undefined) copies.set(original, [row])
    else list.push(row)
  }
  return copies
}

/** A hash of a row's bits (FNV-1a over its 32-bit words), to find rows that repeat one exactly. */
const rowHash = (data: Float32Array, from: number, d: number): number => {
  const words = new Uint32Array(data.buffer, data.byteOffset + from * 4, d)
  let h = 0x811c9dc5
  for (let k = 0; k < d; k++) h = Math.imul(h ^ words[k]!, 0x01000193)
  return h >>> 0
}
export const MAX_LEVEL = 16

/** A row's level: from a hash of its number (splitmix32), so the same rows get the same levels. */
const levelOf = (row: number, m: number): number => {
  let z = (row + 0x9e3779b9) | 0
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
  z ^= z >>> 16
  const u = ((z >>> 0) + 1) / 4294967297
  return Math.min(MAX_LEVEL, Math.floor(-Math.log(u) / Math.log(m)))
}

/**
 * `rows` in a kernel's memory (see GraphKernel.ts), with room for one query after them, so that a graph's walks take
 * their products in SIMD (with the same bits as without it): a copy, unless they are held already. A caller searching
 * the same rows again and again holds them once with this and passes the result; the rows must not change after.
 * Rows too few for a kernel of their own stay where they are (a copy is made all the same).
 */
export const heldRows = (rows: GraphRows): GraphRows => {
  const { count, data, dimensions: d } = rows
  if (kernelOf(data) !== undefined && data.length >= (count + 1) * d) return rows
  const held = holdRows((count + 1) * d, d)
  held.set(data.subarray(0, count * d))
  return { count, dimensions: d, data: held }
}

/** The distance (1 - the dot product in float32) between the rows starting at components `a` and `b` of `data`. */
const distanceIn = (data: Float32Array, d: number): ((a: number, b: number) => number) => {
  const kernel = kernelOf(data)
  return kernel === undefined ? (a, b) => 1 - dotFloat32(data, a, data, b, d) : (a, b) => 1 - kernel.dot(a, b)
}

/**
 * A binary heap of (distance, row) pairs. `max` puts the greatest first; ties go by row number (the smaller row is
 * the closer), so every order the graph depends on is total.
 */
class Heap {
  dist: Float64Array
  row: Int32Array
  size = 0
  readonly max: boolean
  constructor(capacity: number, max: boolean) {
    this.dist = new Float64Array(capacity)
    this.row = new Int32Array(capacity)
    this.max = max
  }
  /** Whether (d1, r1) belongs above (d2, r2). */
  private above(d1: number, r1: number, d2: number, r2: number): boolean {
    return this.max ? d1 > d2 || (d1 === d2 && r1 > r2) : d1 < d2 || (d1 === d2 && r1 < r2)
  }
  push(d: number, r: number): void {
    if (this.size === this.dist.length) {
      const dist = new Float64Array(this.size * 2)
      const row = new Int32Array(this.size * 2)
      dist.set(this.dist)
      row.set(this.row)
      this.dist = dist
      this.row = row
    }
    let i = this.size++
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!this.above(d, r, this.dist[parent]!, this.row[parent]!)) break
      this.dist[i] = this.dist[parent]!
      this.row[i] = this.row[parent]!
      i = parent
    }
    this.dist[i] = d
    this.row[i] = r
  }
  pop(): void {
    const last = --this.size
    if (last === 0) return
    const d = this.dist[last]!
    const r = this.row[last]!
    let i = 0
    for (;;) {
      let child = 2 * i + 1
      if (child >= last) break
      if (
        child + 1 < last &&
        this.above(this.dist[child + 1]!, this.row[child + 1]!, this.dist[child]!, this.row[child]!)
      )
        child++
      if (!this.above(this.dist[child]!, this.row[child]!, d, r)) break
      this.dist[i] = this.dist[child]!
      this.row[i] = this.row[child]!
      i = child
    }
    this.dist[i] = d
    this.row[i] = r
  }
}

/** Marks of rows visited by one search, cleared in O(1) by moving to the next epoch. */
class Visited {
  private marks: Uint32Array
  private epoch = 0
  constructor(count: number) {
    this.marks = new Uint32Array(count)
  }
  next(): void {
    if (++this.epoch === 0xffffffff) {
      this.marks.fill(0)
      this.epoch = 1
    }
  }
  /** Marks `row`; whether it was not marked yet. */
  visit(row: number): boolean {
    if (this.marks[row] === this.epoch) return false
    this.marks[row] = this.epoch
    return true
  }
}

/**
 * Each graph's marks, kept for its next search: a search runs to its end before another starts, and moves to a new
 * epoch first, so the marks need no clearing. Made anew for every search, they cost a graph of 167k rows a 650 KB
 * array to allocate and zero each time, a fixed cost that, over the six graphs of 1M rows, was most of a query at
 * efSearch 32.
 */
const visitedByGraph = new WeakMap<Graph, Visited>()
const visitedOf = (graph: Graph): Visited => {
  let visited = visitedByGraph.get(graph)
  if (visited === undefined) visitedByGraph.set(graph, (visited = new Visited(graph.count)))
  return visited
}

/** How a search reaches rows: their distance to what is sought, and their links on a layer. */
interface Walk {
  readonly distance: (row: number) => number
  /** Told the links of a row before their distances are asked for, in order (`Reach`). */
  readonly reach: Reach | undefined
  /** Layer-0 links, `m0` a row. */
  readonly base: Int32Array
  readonly m0: number
  /** Upper links, `m` a layer. */
  readonly upper: UpperLinks
  readonly m: number
  readonly visited: Visited
  /** Heaps reused from search to search. */
  readonly candidates: Heap
  readonly found: Heap
}

/** The links of `row` on `layer`: `array[start …)`, at most `count` of them, ending at the first -1. */
const linksOf = (walk: Walk, row: number, layer: number) =>
  layer === 0
    ? { array: walk.base, start: row * walk.m0, count: walk.m0 }
    : { array: walk.upper.at(row)!, start: (layer - 1) * walk.m, count: walk.m }

/** The closest row to what is sought on `layer`, going greedily from `from`. */
const greedy = (walk: Walk, from: number, layer: number): number => {
  let best = from
  let bestDistance = walk.distance(from)
  for (let moved = true; moved; ) {
    moved = false
    const { array, count, start } = linksOf(walk, best, layer)
    walk.reach?.(array, start, count)
    for (let j = start; j < start + count; j++) {
      const next = array[j]!
      if (next < 0) break
      const d = walk.distance(next)
      if (d < bestDistance || (d === bestDistance && next < best)) {
        best = next
        bestDistance = d
        moved = true
      }
    }
  }
  return best
}

/**
 * The `ef` closest rows to what is sought on `layer` (beam search from `from`), closest first. Rows that `keep`
 * refuses are walked through but not returned.
 */
const searchLayer = (
  walk: Walk,
  from: number,
  ef: number,
  layer: number,
  keep?: (row: number) => boolean,
  bound = Number.POSITIVE_INFINITY
) => {
  walk.visited.next()
  walk.visited.visit(from)
  const { candidates, found } = walk
  candidates.size = 0
  found.size = 0
  const d0 = walk.distance(from)
  candidates.push(d0, from)
  if (keep === undefined || keep(from)) found.push(d0, from)
  while (candidates.size > 0) {
    const d = candidates.dist[0]!
    const row = candidates.row[0]!
    // Done when the nearest unexpanded row is farther than the farthest kept one, or than what the caller already has.
    if ((found.size >= ef && d > found.dist[0]!) || d > bound) break
    candidates.pop()
    const { array, count, start } = linksOf(walk, row, layer)
    walk.reach?.(array, start, count)
    for (let j = start; j < start + count; j++) {
      const next = array[j]!
      if (next < 0) break
      if (!walk.visited.visit(next)) continue
      const dn = walk.distance(next)
      if (found.size < ef || dn < found.dist[0]! || (dn === found.dist[0]! && next < found.row[0]!)) {
        candidates.push(dn, next)
        if (keep === undefined || keep(next)) {
          found.push(dn, next)
          if (found.size > ef) found.pop()
        }
      }
    }
  }
  const rows = new Int32Array(found.size)
  const dists = new Float64Array(found.size)
  for (let i = found.size - 1; i >= 0; i--) {
    rows[i] = found.row[0]!
    dists[i] = found.dist[0]!
    found.pop()
  }
  return { rows, dists }
}

/**
 * Builds the graph of `rows`, inserting them in number order. While building, a row may hold half as many links
 * again as it keeps: only when that room is full are its links chosen again by the heuristic (a run per few
 * insertions rather than per insertion, the build's main cost), and once every row is in, each row's links are
 * chosen down to what it keeps.
 */
export const buildGraph = (rows: GraphRows, params: HnswParams = DEFAULT_HNSW): Graph => {
  const { count, data, dimensions: d } = heldRows(rows)
  const { efConstruction, m } = params
  const m0 = 2 * m
  // Room while building: 1.5 times the links kept.
  const r0 = m0 + (m0 >> 1)
  const ru = m + (m >> 1)
  const levels = new Uint8Array(count)
  const base = new Int32Array(count * r0).fill(-1)
  const baseDist = new Float32Array(count * r0)
  const upper: Array<Int32Array | undefined> = new Array(count)
  const upperDist: Array<Float32Array | undefined> = new Array(count)
  let entry = -1
  let maxLevel = 0
  const links = (row: number, layer: number): Int32Array =>
    layer === 0 ? base.subarray(row * r0, (row + 1) * r0) : upper[row]!.subarray((layer - 1) * ru, layer * ru)
  const linkDists = (row: number, layer: number): Float32Array =>
    layer === 0 ? baseDist.subarray(row * r0, (row + 1) * r0) : upperDist[row]!.subarray((layer - 1) * ru, layer * ru)
  const distance = distanceIn(data, d)
  const between = (a: number, b: number) => distance(a * d, b * d)
  const shared = {
    base,
    m0: r0,
    upper,
    m: ru,
    visited: new Visited(count),
    candidates: new Heap(efConstruction * 4, false),
    found: new Heap(efConstruction + 2, true)
  }

  /**
   * The heuristic of the paper: from candidates taken closest first (ties by row), one nearer to a row already picked
   * than to the row being linked adds little and is passed over (one as near is kept: else a row among copies of its
   * own vector, all at distance 0, would keep a single link); the nearest of those passed over fill the room left
   * (exact copies of a vector are not nodes, so they cannot fill it). Returns the picked candidates' indexes.
   */
  const choose = (candidates: ArrayLike<number>, dists: ArrayLike<number>, max: number): Array<number> => {
    const order = Array.from({ length: candidates.length }, (_, i) => i)
    order.sort((a, b) => dists[a]! - dists[b]! || candidates[a]! - candidates[b]!)
    const picked: Array<number> = []
    const skipped: Array<number> = []
    for (const i of order) {
      if (picked.length === max) break
      if (picked.every((p) => between(candidates[i]!, candidates[p]!) >= dists[i]!)) picked.push(i)
      else skipped.push(i)
    }
    for (const i of skipped) if (picked.length < max) picked.push(i)
    return picked
  }

  /** Chooses the links of `row` on `layer` down to `keep`, the newcomer `to` among them when given. */
  const prune = (row: number, layer: number, keep: number, to = -1, distance = 0) => {
    const slots = links(row, layer)
    const dists = linkDists(row, layer)
    const rowsIn: Array<number> = []
    const distsIn: Array<number> = []
    for (let i = 0; i < slots.length && slots[i]! >= 0; i++) {
      rowsIn.push(slots[i]!)
      distsIn.push(dists[i]!)
    }
    if (to >= 0) {
      rowsIn.push(to)
      distsIn.push(distance)
    }
    if (rowsIn.length <= keep) return
    const picked = choose(rowsIn, distsIn, keep)
    slots.fill(-1)
    picked.forEach((i, j) => {
      slots[j] = rowsIn[i]!
      dists[j] = distsIn[i]!
    })
  }

  /** Adds `to` (at `distance`) to the links of `row` on `layer`, choosing them again when there is no room left. */
  const link = (row: number, to: number, distance: number, layer: number) => {
    const slots = links(row, layer)
    const at = slots.indexOf(-1)
    if (at >= 0) {
      slots[at] = to
      linkDists(row, layer)[at] = distance
    } else prune(row, layer, layer === 0 ? m0 : m, to, distance)
  }

  // Rows seen, by the hash of their bits, to find copies.
  const seen = new Map<number, Array<number>>()
  for (let row = 0; row < count; row++) {
    let norm = 0
    for (let k = 0; k < d; k++) norm += data[row * d + k]! * data[row * d + k]!
    if (norm === 0) {
      levels[row] = LEFT_OUT
      continue
    }
    const hash = rowHash(data, row * d, d)
    const same = seen.get(hash)
    const original = same?.find((other) => {
      for (let k = 0; k < d; k++) if (!Object.is(data[other * d + k], data[row * d + k])) return false
      return true
    })
    if (original !== undefined) {
      levels[row] = COPY
      base[row * r0] = original
      continue
    }
    if (same === undefined) seen.set(hash, [row])
    else same.push(row)
    const level = levelOf(row, m)
    levels[row] = level
    if (level > 0) {
      upper[row] = new Int32Array(level * ru).fill(-1)
      upperDist[row] = new Float32Array(level * ru)
    }
    if (entry < 0) {
      entry = row
      maxLevel = level
      continue
    }
    const walk: Walk = { ...shared, reach: undefined, distance: (other) => between(row, other) }
    let from = entry
    for (let layer = maxLevel; layer > level; layer--) from = greedy(walk, from, layer)
    for (let layer = Math.min(level, maxLevel); layer >= 0; layer--) {
      const near = searchLayer(walk, from, efConstruction, layer)
      const picked = choose(near.rows, near.dists, layer === 0 ? m0 : m)
      const slots = links(row, layer)
      const dists = linkDists(row, layer)
      picked.forEach((i, j) => {
        slots[j] = near.rows[i]!
        dists[j] = near.dists[i]!
        link(near.rows[i]!, row, near.dists[i]!, layer)
      })
      from = near.rows[0]!
    }
    if (level > maxLevel) {
      entry = row
      maxLevel = level
    }
  }

  // Every row's links chosen down to what it keeps, into the graph's own layout.
  const kept = new Int32Array(count * m0).fill(-1)
  const keptUpper: Array<Int32Array | undefined> = new Array(count)
  for (let row = 0; row < count; row++) {
    if (levels[row] === COPY) kept[row * m0] = base[row * r0]!
    if (!isNode(levels[row]!)) continue
    prune(row, 0, m0)
    kept.set(links(row, 0).subarray(0, m0), row * m0)
    const level = levels[row]!
    if (level === 0) continue
    const own = new Int32Array(level * m).fill(-1)
    for (let layer = 1; layer <= level; layer++) {
      prune(row, layer, m)
      own.set(links(row, layer).subarray(0, m), (layer - 1) * m)
    }
    keptUpper[row] = own
  }
  return { params, count, entry, maxLevel, levels, base: kept, upper: keptUpper, copies: copiesIn(levels, kept, m0) }
}

/**
 * The `ef` rows closest to `query` (a unit vector, as the rows are) that `keep` allows, closest first. With a `keep`
 * that refuses many rows the search walks through them, so fewer than `ef` may come back.
 */
export const searchGraph = (
  graph: Graph,
  rows: GraphRows,
  query: Float32Array,
  ef: number,
  keep?: (row: number) => boolean
): Int32Array => searchGraphWithin(graph, rows, query, ef, keep).rows

/**
 * `searchGraph` with the rows' distances (1 - cosine), stopping early where nothing nearer than `bound` is left: a
 * caller searching several graphs for one top list passes the distance its list already has to beat.
 */
export const searchGraphWithin = (
  graph: Graph,
  rows: GraphRows,
  query: Float32Array,
  ef: number,
  keep?: (row: number) => boolean,
  bound = Number.POSITIVE_INFINITY
): { readonly rows: Int32Array; readonly dists: Float64Array } => {
  if (graph.entry < 0) return { rows: new Int32Array(0), dists: new Float64Array(0) }
  // Rows held with room for a query (`heldRows`): the query goes there, where the kernel reads it (a search runs to
  // its end before another starts). Other rows are walked by the kernel's JavaScript twin, with the same bits.
  const { count, data, dimensions: d } = rows
  const kernel = data.length >= (count + 1) * d ? kernelOf(data) : undefined
  if (kernel !== undefined) data.set(query.subarray(0, d), count * d)
  const at = count * d
  const distance =
    kernel === undefined
      ? (row: number) => 1 - dotFloat32(query, 0, data, row * d, d)
      : (row: number) => 1 - kernel.dot(at, row * d)
  return searchGraphBy(graph, distance, ef, keep, bound)
}

/**
 * Told, before a walk asks for the distances of a row's links, where they are: `links[start …)`, at most `count`, ending
 * at the first -1 (some already visited). Rows read from storage as a walk reaches them are read together there.
 */
export type Reach = (links: Int32Array, start: number, count: number) => void

/**
 * `searchGraphWithin` with the query's distance to each row given (`distance`), for rows held in another form than
 * float32 (scan codes, CodeKernel.ts); `reach` is told of each row's links before their distances are asked for.
 */
export const searchGraphBy = (
  graph: Graph,
  distance: (row: number) => number,
  ef: number,
  keep?: (row: number) => boolean,
  bound = Number.POSITIVE_INFINITY,
  reach?: Reach
): { readonly rows: Int32Array; readonly dists: Float64Array } => {
  if (graph.entry < 0) return { rows: new Int32Array(0), dists: new Float64Array(0) }
  const m = graph.params.m
  const m0 = 2 * m
  const walk: Walk = {
    distance,
    reach,
    base: graph.base,
    m0,
    upper: graph.upper,
    m,
    visited: visitedOf(graph),
    candidates: new Heap(ef * 4, false),
    found: new Heap(ef + 2, true)
  }
  let from = graph.entry
  for (let layer = graph.maxLevel; layer > 0; layer--) from = greedy(walk, from, layer)
  // A node counts as found when it or one of its copies is allowed.
  const keepNode =
    keep === undefined ? undefined : (row: number) => keep(row) || (graph.copies.get(row)?.some(keep) ?? false)
  const found = searchLayer(walk, from, Math.max(ef, 1), 0, keepNode, bound)
  // The rows found, each with its copies, as far as `keep` allows them.
  const rowsOut: Array<number> = []
  const distsOut: Array<number> = []
  for (let i = 0; i < found.rows.length; i++) {
    const row = found.rows[i]!
    for (const one of [row, ...(graph.copies.get(row) ?? [])]) {
      if (keep !== undefined && !keep(one)) continue
      rowsOut.push(one)
      distsOut.push(found.dists[i]!)
    }
  }
  return { rows: Int32Array.from(rowsOut), dists: Float64Array.from(distsOut) }
}
